//! [`FrameBudget`]: one cap on the bytes of request frames in flight
//! across every connection of a server, so memory is bounded by design
//! rather than by how many clients send large frames at once.
//!
//! A frame is in flight from its first byte until its request is answered
//! (a call's arguments live as long as the call). What it is charged:
//!
//! - While it is read, a frame beyond [`FREE_READ`] bytes reserves the
//!   largest frame's charge at once, before another byte is buffered; a
//!   frame within [`FREE_READ`] is the connection's own small buffer.
//! - Once read, it is charged its text and an estimate of its parsed form
//!   (its strings again, and [`VALUE_COST`] per value: one
//!   `serde_json::Value` and its share of a map; see
//!   [`super::frame::frame_cost`]), and holds that until its request is
//!   answered.
//!
//! When the budget is spent, readers wait: the connection stops reading,
//! the kernel's socket buffer fills and the client's writes block. That is
//! back-pressure, not an error, and it is fair (first come, first served,
//! so a large frame is not starved by a stream of small ones).
//!
//! Nothing waits while holding a part of the budget: a reader gives back
//! what it holds before it waits for more, so readers cannot deadlock each
//! other by each holding half of what the next needs. The price is that a
//! connection waiting for room keeps up to [`FREE_READ`] bytes outside the
//! count.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of a frame read without asking the budget: a typical request is a
/// few hundred bytes, so almost no frame ever waits for the budget while
/// it is read.
pub const FREE_READ: usize = 64 * 1024;

/// Estimated bytes of one parsed JSON value beyond its text: a
/// `serde_json::Value` is 32 bytes, and a map entry adds its key and the
/// map's bookkeeping.
pub const VALUE_COST: usize = 64;

/// Default cap: 64 MiB, two of the largest frames at once (each charged
/// twice its 16 MiB), thousands of ordinary ones.
pub const DEFAULT_BUDGET: usize = 64 * 1024 * 1024;

/// The shared cap. Cloning shares it.
#[derive(Debug, Clone)]
pub struct FrameBudget {
    room: Arc<Semaphore>,
    cap: usize,
}

/// A part of the budget, given back when dropped.
#[derive(Debug, Default)]
pub struct Held(Option<OwnedSemaphorePermit>);

impl FrameBudget {
    /// A budget of `cap` bytes.
    pub fn new(cap: usize) -> Self {
        let cap = cap.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            room: Arc::new(Semaphore::new(cap)),
            cap,
        }
    }

    /// The cap in bytes.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes not held by any frame now.
    pub fn available(&self) -> usize {
        self.room.available_permits()
    }

    /// Waits until `bytes` (at most the whole cap) are free and takes them.
    pub async fn take(&self, bytes: usize) -> Held {
        let n = u32::try_from(bytes.min(self.cap)).unwrap_or(u32::MAX);
        if n == 0 {
            return Held(None);
        }
        // The semaphore is never closed, so acquiring only fails if it were.
        Held(self.room.clone().acquire_many_owned(n).await.ok())
    }
}

impl Held {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, OwnedSemaphorePermit::num_permits)
    }

    /// Keeps at most `bytes` and gives the rest back at once.
    pub fn trim(&mut self, bytes: usize) {
        if let Some(p) = &mut self.0
            && p.num_permits() > bytes
        {
            drop(p.split(p.num_permits() - bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn takes_wait_for_room_and_trimming_gives_it_back() {
        let b = FrameBudget::new(100);
        let mut first = b.take(80).await;
        assert_eq!((first.bytes(), b.available()), (80, 20));
        let second = b.take(50);
        tokio::pin!(second);
        assert!(
            futures::poll!(&mut second).is_pending(),
            "only 20 bytes are free"
        );
        first.trim(30);
        assert_eq!(first.bytes(), 30);
        let second = second.await;
        assert_eq!((second.bytes(), b.available()), (50, 20));
        drop((first, second));
        assert_eq!(b.available(), 100);
    }

    #[tokio::test]
    async fn a_take_larger_than_the_cap_takes_the_cap() {
        let b = FrameBudget::new(10);
        assert_eq!(b.take(1_000).await.bytes(), 10);
        assert_eq!(b.take(0).await.bytes(), 0);
    }
}
