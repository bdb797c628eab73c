//! Stage 5: loop guard.
//!
//! Contract, per session (`call.ctx.session`) and within the tool's
//! `loop_guard.window`:
//! - **Repeat**: the count is how many times this exact call (tool name +
//!   canonical arguments, so key order does not matter) was made inside the
//!   window, this one included, whether or not the earlier ones ran.
//! - **Ping-pong**: the count is the length of the unbroken alternating tail
//!   of the session's calls, `… A B A B`, this call included. It is only
//!   recognised once both calls were made twice (a tail of 4), so "read,
//!   write" once is never a loop. Counting calls, not rounds, means an
//!   alternation meets a threshold after as many wasted calls as a plain
//!   repeat does; any third call in between breaks the tail.
//! - count ≥ `warn_at`: the call runs, and the model gets a visible warning
//!   ([`Call::notice`], outside the trust wrapper);
//! - count ≥ `block_at`: the call is refused with
//!   [`CallError::LoopDetected`] `{ halted: false }` and does not run;
//! - count ≥ `halt_at`: the session is halted: this and every later call of
//!   the session is refused with `halted: true` until [`LoopGuard::reset`].
//!
//! A threshold of 0 disables its level. Each level change is published as
//! [`Event::LoopGuard`] (a halted session's later refusals are not, so a
//! stuck agent cannot flood the stream).
//!
//! Every attempt counts, refused ones too: a model that keeps sending a
//! refused call is still looping, which is how `block` escalates to `halt`.
//!
//! Calls are identified by a keyed 64-bit SipHash of the tool name and the
//! canonical JSON (SHA-256 would cost more than the rest of the stage). The
//! key is random per process, so a caller cannot craft colliding calls.
//!
//! Memory stays bounded: timestamps older than the window are dropped when
//! their call is seen again, a sweep at most every [`SWEEP_EVERY`] drops
//! expired calls and idle sessions, and no session keeps more than
//! [`MAX_TRACKED`] timestamps per call or calls in its alternation tail.
//! Halted sessions keep only their halt record, until reset.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::{Call, Enter, Stage};
use crate::canonical::{HashSink, write_canonical};
use crate::context::SessionId;
use crate::error::{CallError, LoopPattern};
use crate::events::{Event, EventBus, StageName};
use crate::settings::LoopGuardConfig;
use crate::wire::LoopLevel;

/// How often idle sessions and expired calls are swept out.
pub const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Most timestamps kept per call, and most calls kept in a session's
/// alternation tail; counts saturate here.
pub const MAX_TRACKED: usize = 256;

/// What the guard decided for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Pass,
    Warn(LoopPattern, u32),
    Block(LoopPattern, u32),
    /// This call halted the session.
    HaltNow(LoopPattern, u32),
    /// The session was already halted.
    Halted(LoopPattern, u32),
}

/// Timestamps of one call identity in one session.
#[derive(Debug)]
struct KeyTrack {
    window: Duration,
    times: Times,
}

/// Timestamps, oldest first. Most calls are made once, so the first is
/// kept inline and a queue is only allocated when a call repeats (a queue
/// per distinct call was most of the stage's cost, in allocation and in
/// the memory it kept touching).
#[derive(Debug)]
enum Times {
    One(Instant),
    Many(VecDeque<Instant>),
}

impl Times {
    /// Drops the timestamps outside `window`; returns how many are left.
    fn retain_within(&mut self, now: Instant, window: Duration) -> usize {
        match self {
            Self::One(t) => usize::from(within(*t, now, window)),
            Self::Many(q) => {
                q.retain(|t| within(*t, now, window));
                q.len()
            }
        }
    }

    /// Adds `now` after dropping the timestamps outside `window`; returns
    /// how many there are, `now` included.
    fn push_within(&mut self, now: Instant, window: Duration) -> usize {
        if self.retain_within(now, window) == 0 {
            *self = Self::One(now);
            return 1;
        }
        match self {
            Self::One(t) => *self = Self::Many(VecDeque::from([*t, now])),
            Self::Many(q) => push_bounded(q, now),
        }
        self.len()
    }

    fn len(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::Many(q) => q.len(),
        }
    }
}

/// Keys here are already keyed SipHash values, as random as a hash gets:
/// hashing them again only costs time. (A ten-line hasher rather than a
/// crate for it.)
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used for `u64` keys; this keeps the trait's
        // contract for anything else.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Call identities to what is known of them.
type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// One session's history.
#[derive(Debug)]
struct Track {
    keys: KeyMap<KeyTrack>,
    /// The most recent calls, oldest first, for ping-pong detection.
    tail: VecDeque<(Instant, u64)>,
    halted: Option<(LoopPattern, u32)>,
    max_window: Duration,
}

impl Track {
    fn new() -> Self {
        Self {
            keys: KeyMap::default(),
            tail: VecDeque::new(),
            halted: None,
            max_window: Duration::ZERO,
        }
    }

    /// Records a call and returns its (repeat, ping-pong) counts.
    fn record(&mut self, key: u64, window: Duration, now: Instant) -> (u32, u32) {
        self.max_window = self.max_window.max(window);
        if self.keys.len() >= MAX_KEYS && !self.keys.contains_key(&key) {
            // A session making very many distinct calls: forget the calls
            // seen once (they are no loop yet) so memory stays bounded.
            self.keys
                .retain(|_, k| k.times.retain_within(now, k.window) > 1);
        }
        let repeats = match self.keys.entry(key) {
            Entry::Vacant(v) => {
                v.insert(KeyTrack {
                    window,
                    times: Times::One(now),
                });
                1
            }
            Entry::Occupied(mut o) => {
                let k = o.get_mut();
                k.window = window;
                count(k.times.push_within(now, window))
            }
        };
        push_bounded(&mut self.tail, (now, key));
        (repeats, self.ping_pong(now, window))
    }

    /// Length of the alternating tail `… A B A B` inside `window`, or 0
    /// when it is shorter than 4.
    fn ping_pong(&self, now: Instant, window: Duration) -> u32 {
        // Walks back from the newest call only as far as the alternation
        // lasts: no allocation, usually two or three steps.
        let mut recent = self
            .tail
            .iter()
            .rev()
            .take_while(|(t, _)| within(*t, now, window))
            .map(|(_, k)| *k);
        let (Some(a), Some(b)) = (recent.next(), recent.next()) else {
            return 0;
        };
        if a == b {
            return 0;
        }
        let expect = [a, b];
        let run = 2 + recent
            .enumerate()
            .take_while(|(i, k)| *k == expect[i % 2])
            .count();
        if run >= 4 { count(run) } else { 0 }
    }

    /// Drops expired calls; true when nothing worth keeping is left.
    fn sweep(&mut self, now: Instant) -> bool {
        self.keys
            .retain(|_, k| k.times.retain_within(now, k.window) > 0);
        let max = self.max_window;
        self.tail.retain(|(t, _)| within(*t, now, max));
        self.halted.is_none() && self.keys.is_empty()
    }

    /// Halts the session and frees its history.
    fn halt(&mut self, pattern: LoopPattern, repeats: u32) {
        self.halted = Some((pattern, repeats));
        self.keys = KeyMap::default();
        self.tail = VecDeque::new();
    }
}

/// Distinct calls remembered per session before single calls are dropped.
const MAX_KEYS: usize = 4096;

fn within(at: Instant, now: Instant, window: Duration) -> bool {
    now.duration_since(at) < window
}

fn push_bounded<T>(q: &mut VecDeque<T>, item: T) {
    if q.len() >= MAX_TRACKED {
        q.pop_front();
    }
    q.push_back(item);
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// 0 = none, 1 = warn, 2 = block, 3 = halt. A threshold of 0 is disabled.
fn level(n: u32, cfg: &LoopGuardConfig) -> u8 {
    let reached = |t: u32| t > 0 && n >= t;
    if reached(cfg.halt_at) {
        3
    } else if reached(cfg.block_at) {
        2
    } else if reached(cfg.warn_at) {
        1
    } else {
        0
    }
}

/// Picks the pattern with the higher level (repeat on a tie) and decides.
fn decide(repeats: u32, ping_pong: u32, cfg: &LoopGuardConfig) -> Decision {
    let (r, p) = (level(repeats, cfg), level(ping_pong, cfg));
    let (lvl, pattern, n) = if p > r {
        (p, LoopPattern::PingPong, ping_pong)
    } else {
        (r, LoopPattern::Repeat, repeats)
    };
    match lvl {
        0 => Decision::Pass,
        1 => Decision::Warn(pattern, n),
        2 => Decision::Block(pattern, n),
        _ => Decision::HaltNow(pattern, n),
    }
}

#[derive(Debug)]
struct State {
    sessions: HashMap<SessionId, Track>,
    last_sweep: Option<Instant>,
}

impl State {
    fn maybe_sweep(&mut self, now: Instant) {
        if self
            .last_sweep
            .is_some_and(|t| now.duration_since(t) < SWEEP_EVERY)
        {
            return;
        }
        self.last_sweep = Some(now);
        self.sessions.retain(|_, track| !track.sweep(now));
    }
}

/// The loop-guard stage. Holds per-session history, so one instance is
/// shared by every call of the engine.
pub struct LoopGuard {
    events: EventBus,
    hasher: RandomState,
    state: Mutex<State>,
}

impl LoopGuard {
    /// A stage reporting levels on `events`.
    pub fn new(events: EventBus) -> Self {
        Self {
            events,
            hasher: RandomState::new(),
            state: Mutex::new(State {
                sessions: HashMap::new(),
                last_sweep: None,
            }),
        }
    }

    /// Lifts a halt (and forgets the session's history): the way a person
    /// lets a halted agent continue.
    pub fn reset(&self, session: &SessionId) {
        self.lock().sessions.remove(session);
    }

    /// Whether `session` is halted; for the UI.
    pub fn is_halted(&self, session: &SessionId) -> bool {
        self.lock()
            .sessions
            .get(session)
            .is_some_and(|t| t.halted.is_some())
    }

    /// How many sessions the guard currently remembers.
    pub fn tracked_sessions(&self) -> usize {
        self.lock().sessions.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update leaves the maps consistent, so a poisoned lock is safe.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The identity of a call: keyed hash of tool name and canonical args,
    /// hashed as the canonical form is produced (never held). `0xff`, a
    /// byte no UTF-8 text contains, ends the name.
    fn key(&self, tool: &str, args: &Value) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(tool.as_bytes());
        h.write_u8(0xff);
        write_canonical(args, &mut HashSink(&mut h));
        h.finish()
    }

    /// Records one call of `session` at `now` and decides its fate.
    fn observe(
        &self,
        session: &SessionId,
        key: u64,
        cfg: &LoopGuardConfig,
        now: Instant,
    ) -> Decision {
        let mut state = self.lock();
        state.maybe_sweep(now);
        let track = state
            .sessions
            .entry(session.clone())
            .or_insert_with(Track::new);
        if let Some((pattern, n)) = track.halted {
            return Decision::Halted(pattern, n);
        }
        let (repeats, ping_pong) = track.record(key, cfg.window, now);
        let decision = decide(repeats, ping_pong, cfg);
        if let Decision::HaltNow(pattern, n) = decision {
            track.halt(pattern, n);
        }
        decision
    }

    fn emit(&self, call: &Call, level: LoopLevel) {
        self.events.emit(Event::LoopGuard {
            session: call.ctx.session.as_str().to_owned(),
            tool: call.tool.def.name.clone(),
            level,
        });
    }

    /// Acts on a decision: `Err` refuses the call, `Ok` lets it run.
    fn apply(&self, call: &mut Call, decision: Decision) -> Result<(), CallError> {
        let refuse = |pattern, repeats, halted| CallError::LoopDetected {
            pattern,
            repeats,
            halted,
        };
        match decision {
            Decision::Pass => Ok(()),
            Decision::Warn(pattern, n) => {
                self.emit(call, LoopLevel::Warn);
                let text = warning(pattern, n, &call.settings.loop_guard);
                call.notice(text);
                call.note(
                    StageName::LoopGuard,
                    format!("warned: {} × {n}", name(pattern)),
                );
                Ok(())
            }
            Decision::Block(pattern, n) => {
                self.emit(call, LoopLevel::Block);
                call.note(
                    StageName::LoopGuard,
                    format!("blocked: {} × {n}", name(pattern)),
                );
                Err(refuse(pattern, n, false))
            }
            Decision::HaltNow(pattern, n) => {
                self.emit(call, LoopLevel::Halt);
                let text = format!("halted session: {} × {n}", name(pattern));
                call.note(StageName::LoopGuard, text);
                Err(refuse(pattern, n, true))
            }
            Decision::Halted(pattern, n) => Err(refuse(pattern, n, true)),
        }
    }
}

fn name(pattern: LoopPattern) -> &'static str {
    match pattern {
        LoopPattern::Repeat => "repeat",
        LoopPattern::PingPong => "ping-pong",
    }
}

/// The warning the model reads; says what comes next so it can change
/// course before being refused.
fn warning(pattern: LoopPattern, n: u32, cfg: &LoopGuardConfig) -> String {
    let what = match pattern {
        LoopPattern::Repeat => format!(
            "this exact call was made {n} times in the last {}s",
            cfg.window.as_secs()
        ),
        LoopPattern::PingPong => {
            format!("the last {n} calls alternated between the same two calls")
        }
    };
    format!(
        "toolgate loop guard: {what}. It looks like a loop: the same call will be refused \
         from count {}. Change the arguments or try another approach.",
        cfg.block_at
    )
}

impl Stage for LoopGuard {
    fn name(&self) -> StageName {
        StageName::LoopGuard
    }

    fn enter(&self, call: &mut Call) -> Enter {
        let key = self.key(call.tool_name(), &call.args);
        let cfg = &call.settings.loop_guard;
        let decision = self.observe(&call.ctx.session, key, cfg, Instant::now());
        match self.apply(call, decision) {
            Ok(()) => Enter::Pass,
            Err(e) => Enter::Refuse(e),
        }
    }
}

#[cfg(test)]
#[path = "loop_guard_tests.rs"]
mod tests;
