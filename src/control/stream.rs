//! The console's live stream: engine events numbered gap-free, kept in a
//! ring so a client can resume after a disconnect, and a `reload` when it
//! cannot.
//!
//! Contract:
//! - One task (the [`Sequencer`]) reads the engine's console ring
//!   ([`EventBus::subscribe_console`]: every event except the per-stage
//!   `call_stage`, whose timings come with a call's detail), stamps each
//!   with `seq` (from 1, +1 per event, never reused while the engine runs)
//!   and `ts_ms`, and keeps the last [`RING`] envelopes.
//! - [`Sequencer::subscribe`]`(after)` first replays what the ring holds
//!   after `after`, then follows live. It yields [`StreamItem::Reload`]
//!   and ends when it cannot give every event after `after`: `after` is
//!   older than the ring, newer than anything stamped (the engine
//!   restarted and numbering began again), or the subscriber fell more
//!   than a ring behind. A client then fetches a snapshot and resubscribes
//!   from its `seq`.
//! - Never a silent gap: if the sequencer itself falls behind the engine's
//!   bus (a burst larger than the bus holds), the events it missed cannot
//!   be numbered, so it takes one number for the gap. Every subscriber
//!   that reaches that number is told to reload; a snapshot taken after
//!   the gap is valid, so resuming from its `seq` skips it.
//!
//! Subscribers read the ring itself (a watch channel only wakes them), so
//! a slow client costs nothing but its position: there is no per-client
//! queue to fill, and "fell behind" means exactly "its next event left the
//! ring".

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::{broadcast, watch};

use super::types::{Counters, Envelope, Reload};
use crate::events::{Event, EventBus, Outcome};

/// Envelopes kept for resuming: at two events per call, the last ~8,000
/// calls, a few minutes of a busy agent, so a browser that reconnects
/// after a network blip or a laptop lid resumes without a reload. About
/// 200 bytes each, so ~3 MiB at most.
pub const RING: usize = 16_384;

/// Envelopes handed to a subscriber per lock of the ring.
const BATCH: usize = 256;

/// What a subscriber receives.
#[derive(Debug, Clone)]
pub enum StreamItem {
    /// The next event.
    Event(Arc<Envelope>),
    /// Events were lost to this subscriber: fetch a snapshot and
    /// resubscribe from its `seq`. Always the last item.
    Reload(Reload),
}

/// A numbered slot of the ring.
#[derive(Debug, Clone)]
enum Stamp {
    Event(Arc<Envelope>),
    /// Events the sequencer missed on the bus; subscribers reload here.
    Gap(u64),
}

impl Stamp {
    fn seq(&self) -> u64 {
        match self {
            Self::Event(e) => e.seq,
            Self::Gap(seq) => *seq,
        }
    }
}

#[derive(Debug)]
struct State {
    ring: VecDeque<Stamp>,
    cap: usize,
    /// The newest number handed out (0: none yet).
    last: u64,
    /// Calls finished since the engine started, counted as they are
    /// numbered, so they are exact at any `last`.
    calls_total: u64,
    calls_failed: u64,
    /// The engine's bus is gone: nothing more will come.
    closed: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// The newest number; wakes subscribers.
    newest: watch::Sender<u64>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain data updated in a few assignments: a panic elsewhere
        // cannot leave it half-written.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Numbers the engine's events for the console. Cloning shares it.
#[derive(Debug, Clone)]
pub struct Sequencer {
    shared: Arc<Shared>,
}

/// The stream position and the counters that go with it, read together
/// (see `control::snapshot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The newest sequence number.
    pub seq: u64,
    /// Calls finished and failed up to and including `seq`.
    pub calls_total: u64,
    /// See [`Counters::calls_failed`].
    pub calls_failed: u64,
}

impl Mark {
    /// The call counters of a snapshot at this mark; the others are
    /// filled from their lists.
    pub fn counters(&self) -> Counters {
        Counters {
            calls_total: self.calls_total,
            calls_failed: self.calls_failed,
            ..Counters::default()
        }
    }
}

impl Sequencer {
    /// Starts numbering `bus`'s console events, keeping [`RING`]. Must be
    /// called inside a tokio runtime; the task ends with the last clone.
    pub fn start(bus: &EventBus) -> Self {
        Self::with_capacity(bus, RING)
    }

    /// [`Self::start`] with a ring of `cap` envelopes (tests use a small
    /// one to fall behind quickly).
    pub fn with_capacity(bus: &EventBus, cap: usize) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                ring: VecDeque::with_capacity(cap.clamp(1, 1024)),
                cap: cap.max(1),
                last: 0,
                calls_total: 0,
                calls_failed: 0,
                closed: false,
            }),
            newest: watch::channel(0).0,
        });
        let rx = bus.subscribe_console();
        tokio::spawn(run(rx, Arc::downgrade(&shared)));
        Self { shared }
    }

    /// The newest sequence number and the call counters at it.
    pub fn mark(&self) -> Mark {
        let st = self.shared.lock();
        Mark {
            seq: st.last,
            calls_total: st.calls_total,
            calls_failed: st.calls_failed,
        }
    }

    /// A stream of everything after `after` (`None`: from now on). See the
    /// module docs for when it says reload.
    pub fn subscribe(&self, after: Option<u64>) -> Subscription {
        let rx = self.shared.newest.subscribe();
        let st = self.shared.lock();
        let next = match after {
            None => st.last + 1,
            Some(a) => a.saturating_add(1),
        };
        let reload = after.is_some_and(|a| a > st.last || !holds(&st, next));
        Subscription {
            shared: self.shared.clone(),
            rx,
            next,
            buf: VecDeque::new(),
            reload: reload.then_some(Reload { seq: st.last }),
            done: false,
        }
    }
}

/// Whether the ring still holds number `next` or it has not come yet.
fn holds(st: &State, next: u64) -> bool {
    match st.ring.front() {
        Some(first) => next >= first.seq(),
        // Nothing kept: only a subscriber waiting for the first is whole.
        None => next == st.last + 1,
    }
}

/// One client's position in the stream.
#[derive(Debug)]
pub struct Subscription {
    shared: Arc<Shared>,
    rx: watch::Receiver<u64>,
    next: u64,
    buf: VecDeque<Arc<Envelope>>,
    reload: Option<Reload>,
    done: bool,
}

impl Subscription {
    /// The next item; `None` after a reload, or once the engine is gone
    /// and every numbered event was handed out.
    pub async fn next(&mut self) -> Option<StreamItem> {
        loop {
            if self.done {
                return None;
            }
            if let Some(r) = self.reload.take() {
                self.done = true;
                return Some(StreamItem::Reload(r));
            }
            if let Some(e) = self.buf.pop_front() {
                return Some(StreamItem::Event(e));
            }
            if self.fill() {
                continue;
            }
            // Nothing new: wait for the next number. `changed` only misses
            // nothing because `fill` looked after the receiver last saw a
            // value.
            if self.rx.changed().await.is_err() {
                self.done = true;
                return None;
            }
        }
    }

    /// The subscription as a `Stream` (for SSE bodies).
    pub fn into_stream(self) -> impl futures::Stream<Item = StreamItem> + Send + 'static {
        futures::stream::unfold(self, |mut s| async move { s.next().await.map(|i| (i, s)) })
    }

    /// Copies the next batch out of the ring; true if anything (an event
    /// or a reload) is ready.
    fn fill(&mut self) -> bool {
        self.rx.borrow_and_update();
        let st = self.shared.lock();
        if self.next > st.last {
            // Caught up with an engine that is gone: the stream ends.
            self.done = st.closed;
            return st.closed;
        }
        if !holds(&st, self.next) {
            self.reload = Some(Reload { seq: st.last });
            return true;
        }
        let first = st.ring.front().map_or(self.next, Stamp::seq);
        let skip = usize::try_from(self.next - first).unwrap_or(usize::MAX);
        for stamp in st.ring.iter().skip(skip).take(BATCH) {
            match stamp {
                Stamp::Event(e) => {
                    self.buf.push_back(e.clone());
                    self.next = e.seq + 1;
                }
                Stamp::Gap(_) => {
                    self.reload = Some(Reload { seq: st.last });
                    break;
                }
            }
        }
        true
    }
}

/// The sequencer task: numbers events until the bus or the sequencer is
/// gone.
async fn run(mut rx: broadcast::Receiver<Event>, shared: Weak<Shared>) {
    loop {
        let got = rx.recv().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let stamp = match got {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("the console stream fell {n} events behind; clients will reload");
                None
            }
            Err(broadcast::error::RecvError::Closed) => {
                shared.lock().closed = true;
                shared.newest.send_modify(|_| {});
                return;
            }
        };
        let seq = push(&shared, stamp);
        shared.newest.send_replace(seq);
    }
}

/// Numbers one event (or a gap) and appends it; returns its number.
fn push(shared: &Shared, event: Option<Event>) -> u64 {
    let mut st = shared.lock();
    let seq = st.last + 1;
    st.last = seq;
    let stamp = match event {
        Some(event) => {
            if let Event::CallFinished { outcome, .. } = &event {
                st.calls_total += 1;
                if matches!(
                    outcome,
                    Outcome::Err { .. } | Outcome::Ok { is_error: true, .. }
                ) {
                    st.calls_failed += 1;
                }
            }
            Stamp::Event(Arc::new(Envelope {
                seq,
                ts_ms: crate::audit::now_ms(),
                event,
            }))
        }
        None => Stamp::Gap(seq),
    };
    if st.ring.len() == st.cap {
        st.ring.pop_front();
    }
    st.ring.push_back(stamp);
    seq
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
