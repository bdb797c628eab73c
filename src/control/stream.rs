//! The console's live stream: engine events numbered gap-free, kept in a
//! ring so a client can resume after a disconnect, and a `reload` when it
//! cannot.
//!
//! Contract:
//! - The [`Sequencer`] is a [`ConsoleSink`] of the engine's bus: every
//!   event except the per-stage `call_stage` (whose timings come with a
//!   call's detail) is stamped as it is published, in the emitting thread,
//!   with `seq` (from 1, +1 per event, never reused while the engine runs)
//!   and `ts_ms`, and the last [`RING`] envelopes (at most [`RING_BYTES`]
//!   of them) are kept. Numbering at
//!   publication means no event is ever lost before it has a number,
//!   however busy the machine (an earlier design drained a broadcast ring
//!   from a task, which overflowed under 64 concurrent agents).
//! - [`Sequencer::subscribe`]`(after)` first replays what the ring holds
//!   after `after`, then follows live. It yields [`StreamItem::Reload`]
//!   and ends when it cannot give every event after `after`: `after` is
//!   older than the ring, newer than anything stamped (the engine
//!   restarted and numbering began again), or the subscriber fell more
//!   than a ring behind. A client then fetches a snapshot and resubscribes
//!   from its `seq`.
//! - It also keeps the calls in flight (received, not yet finished), so a
//!   snapshot lists them with the stream position they are valid at.
//!
//! Subscribers read the ring itself (a watch channel only wakes them), so
//! a slow client costs nothing but its position: there is no per-client
//! queue to fill, and "fell behind" means exactly "its next event left the
//! ring".

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use super::types::{Counters, Envelope, InFlight, Reload};
use crate::events::{ConsoleSink, Event, EventBus};
use crate::wire::Outcome;

/// Calls in flight kept for the snapshot. Every call that starts ends in a
/// `call_finished`, so the map stays as small as the engine's concurrency;
/// the cap only guards against a bug turning into unbounded memory.
const IN_FLIGHT: usize = 10_000;

/// Envelopes kept for resuming: at two events per call, the last ~8,000
/// calls, a few minutes of a busy agent, so a browser that reconnects
/// after a network blip or a laptop lid resumes without a reload. About
/// 200 bytes each, so ~3 MiB at most.
pub const RING: usize = 16_384;

/// Bytes of events kept for resuming, counted as JSON: what bounds the
/// ring when events are large (their texts are cut at
/// [`crate::events::MAX_EVENT_TEXT`], but thousands of them still add up);
/// ordinary events never reach it before [`RING`].
pub const RING_BYTES: usize = 4 * 1024 * 1024;

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

#[derive(Debug)]
struct State {
    ring: VecDeque<Arc<Envelope>>,
    /// The weight of each envelope in `ring`, in the same order.
    weights: VecDeque<usize>,
    /// Their sum, at most [`RING_BYTES`] (beyond one envelope).
    bytes: usize,
    cap: usize,
    /// The newest number handed out (0: none yet).
    last: u64,
    /// Calls finished since the engine started, counted as they are
    /// numbered, so they are exact at any `last`.
    calls_total: u64,
    calls_failed: u64,
    /// Calls received and not finished, by call id.
    in_flight: BTreeMap<u64, InFlight>,
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The newest sequence number.
    pub seq: u64,
    /// Calls finished and failed up to and including `seq`.
    pub calls_total: u64,
    /// See [`Counters::calls_failed`].
    pub calls_failed: u64,
    /// Calls received and not finished at `seq`, oldest first.
    pub in_flight: Vec<InFlight>,
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
    /// Starts numbering `bus`'s console events, keeping [`RING`]. Numbering
    /// stops when the last clone is dropped.
    pub fn start(bus: &EventBus) -> Self {
        Self::with_capacity(bus, RING)
    }

    /// [`Self::start`] with a ring of `cap` envelopes (tests use a small
    /// one to fall behind quickly).
    pub fn with_capacity(bus: &EventBus, cap: usize) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                ring: VecDeque::with_capacity(cap.clamp(1, 1024)),
                weights: VecDeque::with_capacity(cap.clamp(1, 1024)),
                bytes: 0,
                cap: cap.max(1),
                last: 0,
                calls_total: 0,
                calls_failed: 0,
                in_flight: BTreeMap::new(),
                closed: false,
            }),
            newest: watch::channel(0).0,
        });
        let sink: Arc<dyn ConsoleSink> = shared.clone();
        bus.add_console_sink(Arc::downgrade(&sink));
        Self { shared }
    }

    /// The newest sequence number, the call counters and the calls in
    /// flight at it.
    pub fn mark(&self) -> Mark {
        let st = self.shared.lock();
        Mark {
            seq: st.last,
            calls_total: st.calls_total,
            calls_failed: st.calls_failed,
            in_flight: st.in_flight.values().cloned().collect(),
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
        Some(first) => next >= first.seq,
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
        let first = st.ring.front().map_or(self.next, |e| e.seq);
        let skip = usize::try_from(self.next - first).unwrap_or(usize::MAX);
        for e in st.ring.iter().skip(skip).take(BATCH) {
            self.buf.push_back(e.clone());
            self.next = e.seq + 1;
        }
        true
    }
}

impl ConsoleSink for Shared {
    fn publish(&self, event: &Event) {
        let seq = push(self, event);
        self.newest.send_replace(seq);
    }

    fn close(&self) {
        self.lock().closed = true;
        self.newest.send_modify(|_| {});
    }
}

/// Numbers one event and appends it; returns its number.
fn push(shared: &Shared, event: &Event) -> u64 {
    let weight = event.weight();
    let mut st = shared.lock();
    // Read under the lock, so timestamps never go backwards as numbers go up.
    let ts_ms = crate::audit::now_ms();
    let seq = st.last + 1;
    st.last = seq;
    match event {
        Event::CallReceived {
            call_id,
            tool,
            caller,
            session,
            preview,
        } if st.in_flight.len() < IN_FLIGHT => {
            let call = InFlight {
                call_id: *call_id,
                ts_ms,
                tool: tool.clone(),
                caller: caller.clone(),
                session: session.clone(),
                preview: preview.clone(),
            };
            st.in_flight.insert(*call_id, call);
        }
        Event::CallFinished {
            call_id, outcome, ..
        } => {
            st.in_flight.remove(call_id);
            st.calls_total += 1;
            if matches!(
                outcome,
                Outcome::Err { .. } | Outcome::Ok { is_error: true, .. }
            ) {
                st.calls_failed += 1;
            }
        }
        _ => {}
    }
    while st.ring.len() >= st.cap || (!st.ring.is_empty() && st.bytes + weight > RING_BYTES) {
        st.ring.pop_front();
        st.bytes -= st.weights.pop_front().unwrap_or(0);
    }
    st.ring.push_back(Arc::new(Envelope {
        seq,
        ts_ms,
        event: event.clone(),
    }));
    st.weights.push_back(weight);
    st.bytes += weight;
    seq
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
