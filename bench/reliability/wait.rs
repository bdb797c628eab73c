//! Waiting on a condition with a deadline: the only way the harness waits.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// Polls `probe` every 20 ms until it gives `Some`, for at most `within`;
/// `None` when the deadline passed first.
pub async fn until<T, F, Fut>(within: Duration, mut probe: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A deadline for loops that need `&mut` access between tries (which a
/// closure given to [`until`] cannot hold across an await).
pub struct Deadline(Instant);

impl Deadline {
    /// `within` from now.
    pub fn after(within: Duration) -> Self {
        Self(Instant::now() + within)
    }

    /// Waits 20 ms before the next try; false once the deadline passed.
    pub async fn tick(&self) -> bool {
        if Instant::now() >= self.0 {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        true
    }
}
