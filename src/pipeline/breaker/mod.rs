//! Stage 9/11: per-tool circuit breaker.
//!
//! Contract (pipeline steps 9 and 11, docs/architecture/overview.md,
//! "Breaker, retry and timeout"):
//!
//! - **Closed**: calls pass. Once `failure_threshold` counted failures fall
//!   inside the sliding `window`, the breaker opens. Successes do not wipe
//!   the window: a tool failing every other call is still failing.
//! - **Open**: calls fail fast with [`CallError::BreakerOpen`] (carrying the
//!   time left) without reaching retry, timeout or the tool, until `cooldown`
//!   has passed.
//! - **HalfOpen**: at most `half_open_probes` probe calls are admitted. Once
//!   that many probes have succeeded the breaker closes and forgets its
//!   failures; any failed probe re-opens it with a fresh cooldown.
//!
//! What counts ([`Verdict::of`]): only what says the tool is unhealthy,
//! errors whose [`CallError::counts_as_failure`] is true (timeouts,
//! connection failures, server errors, failures of [`Fault::Tool`]).
//! Refusals made by toolgate or a person (denials, validation errors, guard
//! and loop-guard blocks, an open breaker) and errors of the caller's
//! making (a missing file: [`Fault::Caller`]) never count and never change
//! state; counting them would let a person who keeps denying a call, or any
//! one agent asking for missing files, switch the tool off for every agent
//! (PraisonAI special-cases approval denials for the same reason; we leave
//! out every refusal and every caller's mistake, not only denials). `Ok`
//! results the tool marked `is_error` are its answer to that one call and
//! count only where [`BreakerConfig::count_is_error`] says so (an upstream
//! server configured with `breaker_counts_is_error = true`).
//!
//! [`Fault::Tool`]: crate::error::Fault::Tool
//! [`Fault::Caller`]: crate::error::Fault::Caller
//!
//! PraisonAI hard-codes 5 failures / 60 s for every tool; here all
//! thresholds come from `call.settings.breaker`, per tool.
//!
//! The state machine ([`Circuit`]) is pure: it takes `now` and the config as
//! parameters, never reading the clock, so its properties are tested
//! without sleeping.
//! Results are tagged with the *epoch* of the state they were admitted in;
//! a result that arrives after the breaker has moved on (re-opened, was
//! reset) is stale and ignored, so a slow call from before an outage cannot
//! close a breaker that a later probe re-opened.
//!
//! A probe whose future is dropped (the caller went away, an outer timeout
//! fired) releases its slot through a drop guard; without it a cancelled
//! probe would hold the breaker half-open forever.
//!
//! The state machine and the stage live here; what the console shows of a
//! breaker's recent traffic (calls per bucket, latencies, the last
//! failure) is counted under the same lock but kept in [`stats`].

pub mod stats;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use self::stats::{BreakerStats, CallBuckets, LastFailure, Latencies};
use super::{Call, CallResult, Next, Stage};
use crate::error::CallError;
use crate::events::{Event, EventBus, StageName};
use crate::settings::BreakerConfig;
use crate::slices::Slice;
use crate::tool::ToolName;

use crate::wire::BreakerState;

/// How a finished call bears on its tool's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The tool ran and did not report an error.
    Success,
    /// The tool (or its transport) failed.
    Failure,
    /// The outcome says nothing about the tool: a refusal by toolgate or a
    /// person. Frees a probe slot, changes nothing else.
    Neutral,
}

impl Verdict {
    /// Classifies a result by asking the error, never its message; an
    /// `is_error` result counts only where `cfg` says such results do.
    pub fn of(result: &CallResult, cfg: &BreakerConfig) -> Self {
        match result {
            Ok(r) if r.is_error && cfg.count_is_error => Self::Failure,
            // The tool answered, but with a failure of this one call: no
            // sign of sickness, and no proof of health for a probe either.
            Ok(r) if r.is_error => Self::Neutral,
            Ok(_) => Self::Success,
            Err(e) if e.counts_as_failure() => Self::Failure,
            Err(_) => Self::Neutral,
        }
    }
}

/// A change of state, reported so the stage can emit
/// [`Event::BreakerTransition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The state left.
    pub from: BreakerState,
    /// The state entered.
    pub to: BreakerState,
}

/// Admission of one call. Hand it back through [`Circuit::complete`] or
/// [`Circuit::release`] exactly once, or a probe slot stays taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a permit must be completed or released"]
pub struct Permit {
    epoch: u64,
    probe: bool,
}

impl Permit {
    /// Whether this call is a half-open probe whose outcome decides the
    /// breaker's next state.
    pub fn is_probe(&self) -> bool {
        self.probe
    }
}

/// What [`Circuit::admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// A permit, or the time until a probe may be admitted (zero when the
    /// probes are in flight and only their outcome can tell).
    pub permit: Result<Permit, Duration>,
    /// Set when admitting moved an open breaker to half-open.
    pub transition: Option<Transition>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed,
    Open { since: Instant },
    HalfOpen { in_flight: u32, succeeded: u32 },
}

/// The pure breaker state machine of one tool.
///
/// Holds no config, so a reloaded config applies to the next call; a
/// `failure_threshold` or `half_open_probes` of 0 is treated as 1 (config
/// validation should reject it; the breaker must not divide the world by it).
#[derive(Debug, Clone)]
pub struct Circuit {
    phase: Phase,
    epoch: u64,
    /// Times of counted failures, oldest first, at most `failure_threshold`.
    failures: VecDeque<Instant>,
}

impl Default for Circuit {
    fn default() -> Self {
        Self::new()
    }
}

impl Circuit {
    /// A closed breaker with no failures.
    pub fn new() -> Self {
        Self {
            phase: Phase::Closed,
            epoch: 0,
            failures: VecDeque::new(),
        }
    }

    /// The current state. An open breaker whose cooldown has passed still
    /// reads `Open` until the next call is admitted as a probe.
    pub fn state(&self) -> BreakerState {
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// Counted failures inside the window ending at `now`.
    pub fn failures_in_window(&self, now: Instant, cfg: &BreakerConfig) -> u32 {
        let recent = self
            .failures
            .iter()
            .filter(|t| now.saturating_duration_since(**t) < cfg.window)
            .count();
        u32::try_from(recent).unwrap_or(u32::MAX)
    }

    /// Time until an open breaker admits a probe; `None` unless open.
    pub fn retry_in(&self, now: Instant, cfg: &BreakerConfig) -> Option<Duration> {
        match self.phase {
            Phase::Open { since } => Some(remaining_cooldown(since, now, cfg)),
            _ => None,
        }
    }

    /// Probe calls currently running (0 unless half-open).
    pub fn probes_in_flight(&self) -> u32 {
        match self.phase {
            Phase::HalfOpen { in_flight, .. } => in_flight,
            _ => 0,
        }
    }

    /// Decides whether a call may run now.
    pub fn admit(&mut self, now: Instant, cfg: &BreakerConfig) -> Admission {
        let transition = self.half_open_if_cooled(now, cfg);
        let permit = match &mut self.phase {
            Phase::Closed => Ok(Permit {
                epoch: self.epoch,
                probe: false,
            }),
            Phase::Open { since } => Err(remaining_cooldown(*since, now, cfg)),
            Phase::HalfOpen {
                in_flight,
                succeeded,
            } => {
                if in_flight.saturating_add(*succeeded) < probe_limit(cfg) {
                    *in_flight += 1;
                    Ok(Permit {
                        epoch: self.epoch,
                        probe: true,
                    })
                } else {
                    Err(Duration::ZERO)
                }
            }
        };
        Admission { permit, transition }
    }

    /// Records how an admitted call ended.
    pub fn complete(
        &mut self,
        permit: Permit,
        verdict: Verdict,
        now: Instant,
        cfg: &BreakerConfig,
    ) -> Option<Transition> {
        if permit.epoch != self.epoch {
            return None; // stale: the breaker moved on while it ran
        }
        match (self.phase, verdict) {
            (_, Verdict::Neutral) => {
                self.release(permit);
                None
            }
            (Phase::Closed, Verdict::Failure) => self.record_failure(now, cfg),
            (Phase::Closed, Verdict::Success) => None,
            (Phase::HalfOpen { .. }, Verdict::Failure) => Some(self.enter_open(now)),
            (Phase::HalfOpen { .. }, Verdict::Success) => self.probe_succeeded(cfg),
            // No permits are issued in an open epoch.
            (Phase::Open { .. }, _) => None,
        }
    }

    /// Gives back a permit whose call never finished (cancelled) or whose
    /// outcome is [`Verdict::Neutral`]: frees a probe slot, nothing else.
    pub fn release(&mut self, permit: Permit) {
        if permit.epoch != self.epoch || !permit.probe {
            return;
        }
        if let Phase::HalfOpen { in_flight, .. } = &mut self.phase {
            *in_flight = in_flight.saturating_sub(1);
        }
    }

    /// Closes the breaker and forgets its failures (a person's override).
    /// Permits issued before are stale from now on.
    pub fn reset(&mut self) -> Option<Transition> {
        let from = self.state();
        self.enter_closed();
        (from != BreakerState::Closed).then_some(Transition {
            from,
            to: BreakerState::Closed,
        })
    }

    fn half_open_if_cooled(&mut self, now: Instant, cfg: &BreakerConfig) -> Option<Transition> {
        let Phase::Open { since } = self.phase else {
            return None;
        };
        if !remaining_cooldown(since, now, cfg).is_zero() {
            return None;
        }
        Some(self.enter(Phase::HalfOpen {
            in_flight: 0,
            succeeded: 0,
        }))
    }

    fn record_failure(&mut self, now: Instant, cfg: &BreakerConfig) -> Option<Transition> {
        let threshold = usize::try_from(cfg.failure_threshold.max(1)).unwrap_or(usize::MAX);
        while self
            .failures
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= cfg.window)
        {
            self.failures.pop_front();
        }
        self.failures.push_back(now);
        while self.failures.len() > threshold {
            self.failures.pop_front();
        }
        (self.failures.len() >= threshold).then(|| self.enter_open(now))
    }

    fn probe_succeeded(&mut self, cfg: &BreakerConfig) -> Option<Transition> {
        let Phase::HalfOpen {
            in_flight,
            succeeded,
        } = &mut self.phase
        else {
            return None;
        };
        *in_flight = in_flight.saturating_sub(1);
        *succeeded += 1;
        (*succeeded >= probe_limit(cfg)).then(|| self.enter_closed())
    }

    fn enter_open(&mut self, now: Instant) -> Transition {
        self.enter(Phase::Open { since: now })
    }

    fn enter_closed(&mut self) -> Transition {
        self.failures.clear();
        self.enter(Phase::Closed)
    }

    /// Every state change starts a new epoch, which makes permits of the
    /// old state stale.
    fn enter(&mut self, phase: Phase) -> Transition {
        let from = self.state();
        self.phase = phase;
        self.epoch += 1;
        Transition {
            from,
            to: self.state(),
        }
    }
}

fn remaining_cooldown(since: Instant, now: Instant, cfg: &BreakerConfig) -> Duration {
    cfg.cooldown
        .saturating_sub(now.saturating_duration_since(since))
}

fn probe_limit(cfg: &BreakerConfig) -> u32 {
    cfg.half_open_probes.max(1)
}

/// One tool's breaker as shown by `toolgate breakers` and the UI.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BreakerStatus {
    /// The tool.
    pub tool: ToolName,
    /// Its breaker's state.
    pub state: BreakerState,
    /// Counted failures inside the window, so a person sees a breaker about
    /// to trip before it does.
    pub failures: u32,
    /// Time until an open breaker admits a probe; `None` unless open.
    #[serde(rename = "retry_in_ms", serialize_with = "millis")]
    pub retry_in: Option<Duration>,
}

fn millis<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        None => s.serialize_none(),
    }
}

/// A tool's circuit plus the config its last call carried, which
/// [`Breaker::snapshot`] needs to read windows and cooldowns.
#[derive(Debug)]
struct Entry {
    circuit: Circuit,
    cfg: BreakerConfig,
    buckets: CallBuckets,
    last_failure: Option<LastFailure>,
    latencies: Latencies,
}

/// The breaker stage: one [`Circuit`] per tool name.
///
/// The map sits behind a std `Mutex` held only for a state update, never
/// across an `.await`, so a slow tool never blocks other tools' calls.
pub struct Breaker {
    events: EventBus,
    circuits: Mutex<HashMap<ToolName, Entry>>,
}

impl Breaker {
    /// A stage reporting transitions on `events`.
    pub fn new(events: EventBus) -> Self {
        Self {
            events,
            circuits: Mutex::default(),
        }
    }

    /// Every tool's breaker that has seen a call, sorted by tool name.
    pub fn snapshot(&self) -> Vec<BreakerStatus> {
        let now = Instant::now();
        let mut out: Vec<BreakerStatus> = self
            .lock()
            .iter()
            .map(|(tool, e)| BreakerStatus {
                tool: tool.clone(),
                state: e.circuit.state(),
                failures: e.circuit.failures_in_window(now, &e.cfg),
                retry_in: e.circuit.retry_in(now, &e.cfg),
            })
            .collect();
        out.sort_by(|a, b| a.tool.cmp(&b.tool));
        out
    }

    /// Every tool's breaker that has seen a call with its traffic over the
    /// last two minutes, sorted by tool name.
    pub fn stats(&self) -> Vec<BreakerStats> {
        let now = Instant::now();
        let mut out: Vec<BreakerStats> = self
            .lock()
            .iter()
            .map(|(tool, e)| BreakerStats {
                status: BreakerStatus {
                    tool: tool.clone(),
                    state: e.circuit.state(),
                    failures: e.circuit.failures_in_window(now, &e.cfg),
                    retry_in: e.circuit.retry_in(now, &e.cfg),
                },
                cfg: e.cfg.clone(),
                buckets: e.buckets.series(now),
                last_failure: e.last_failure.clone(),
                latency: e.latencies.percentiles(),
                latency_calls: e.latencies.len(),
            })
            .collect();
        out.sort_by(|a, b| a.status.tool.cmp(&b.status.tool));
        out
    }

    /// Closes `tool`'s breaker and clears its failures, for a person who
    /// knows the tool is healthy again. Returns false if the tool has no
    /// breaker yet (it has never been called).
    pub fn reset(&self, tool: &str) -> bool {
        let mut map = self.lock();
        let Some((name, entry)) = map.iter_mut().find(|(name, _)| name.as_str() == tool) else {
            return false;
        };
        let name = name.clone();
        let transition = entry.circuit.reset();
        drop(map);
        if let Some(t) = transition {
            self.emit(name, t);
        }
        // Failures were forgotten even when the state stayed closed.
        self.events.changed(Slice::Breakers);
        true
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ToolName, Entry>> {
        // A panic elsewhere cannot leave a circuit half-updated (each update
        // is a few plain assignments), so a poisoned map is still sound.
        self.circuits.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn admit(&self, tool: &ToolName, cfg: &BreakerConfig) -> Result<Permit, Duration> {
        let mut new = false;
        let admission = {
            let mut map = self.lock();
            let now = Instant::now();
            let entry = map.entry(tool.clone()).or_insert_with(|| {
                new = true;
                Entry {
                    circuit: Circuit::new(),
                    cfg: cfg.clone(),
                    buckets: CallBuckets::new(now),
                    last_failure: None,
                    latencies: Latencies::default(),
                }
            });
            if entry.cfg != *cfg {
                entry.cfg = cfg.clone();
            }
            entry.circuit.admit(now, cfg)
        };
        if new {
            // A tool's first call gives it a breaker: a tile views lack.
            self.events.changed(Slice::Breakers);
        }
        if let Some(t) = admission.transition {
            self.emit(tool.clone(), t);
        }
        admission.permit
    }

    fn complete(
        &self,
        tool: &ToolName,
        permit: Permit,
        result: &CallResult,
        took: Duration,
        cfg: &BreakerConfig,
    ) {
        let verdict = Verdict::of(result, cfg);
        // Made outside the lock: only failures have one.
        let failure = match verdict {
            Verdict::Failure => LastFailure::of(result),
            _ => None,
        };
        let transition = self.lock().get_mut(tool).and_then(|e| {
            let now = Instant::now();
            // Every call that reached the tool is traffic (the tile's volume
            // and times); only failures the breaker counts are failures.
            e.buckets.record(now, verdict == Verdict::Failure);
            e.latencies.record(took);
            if failure.is_some() {
                e.last_failure = failure;
            }
            e.circuit.complete(permit, verdict, now, cfg)
        });
        if let Some(t) = transition {
            self.emit(tool.clone(), t);
        }
    }

    fn release(&self, tool: &ToolName, permit: Permit) {
        if let Some(e) = self.lock().get_mut(tool) {
            e.circuit.release(permit);
        }
    }

    fn emit(&self, tool: ToolName, t: Transition) {
        tracing::info!(tool = %tool, from = ?t.from, to = ?t.to, "circuit breaker transition");
        self.events.emit(Event::BreakerTransition {
            shown_as: crate::hooks::agent::shown_as(tool.as_str()),
            tool,
            from: t.from,
            to: t.to,
        });
    }

    async fn run(&self, call: &mut Call, next: Next<'_>) -> CallResult {
        let tool = call.tool.def.name.clone();
        let settings = Arc::clone(&call.settings);
        let cfg = &settings.breaker;
        let permit = match self.admit(&tool, cfg) {
            Ok(p) => p,
            Err(retry_in) => return Err(fail_fast(call, retry_in)),
        };
        if permit.is_probe() {
            call.note(StageName::Breaker, "half-open: this call is a probe");
        }
        let mut pass = Pass {
            breaker: self,
            tool: &tool,
            permit: Some(permit),
        };
        let started = Instant::now();
        let result = next.run(call).await;
        if let Some(permit) = pass.permit.take() {
            self.complete(&tool, permit, &result, started.elapsed(), cfg);
        }
        result
    }
}

fn fail_fast(call: &mut Call, retry_in: Duration) -> CallError {
    call.note(
        StageName::Breaker,
        format!("open: failed fast, probe in {}ms", retry_in.as_millis()),
    );
    CallError::BreakerOpen {
        tool: call.tool_name().to_owned(),
        retry_in,
    }
}

/// Drop guard: a call whose future is dropped before it finishes gives its
/// permit back, so a cancelled probe cannot pin the breaker half-open.
struct Pass<'a> {
    breaker: &'a Breaker,
    tool: &'a ToolName,
    permit: Option<Permit>,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.breaker.release(self.tool, permit);
        }
    }
}

impl Stage for Breaker {
    fn name(&self) -> StageName {
        StageName::Breaker
    }

    fn handle<'a>(&'a self, call: &'a mut Call, next: Next<'a>) -> BoxFuture<'a, CallResult> {
        Box::pin(self.run(call, next))
    }
}

#[cfg(test)]
mod tests;
