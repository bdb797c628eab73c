//! Breaker tests: stage tests on a paused clock, then properties of the pure
//! state machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use proptest::prelude::*;
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use tokio::time::{Instant, advance};

use super::*;
use crate::error::LoopPattern;
use crate::events::Event;
use crate::pipeline::testing::{Script, call_with, def, fail, run_stage_on};
use crate::settings::ToolSettings;
use crate::tool::ToolResult;

const COOLDOWN: Duration = Duration::from_secs(30);
const WINDOW: Duration = Duration::from_secs(60);

fn cfg(threshold: u32, probes: u32) -> BreakerConfig {
    BreakerConfig {
        failure_threshold: threshold,
        window: WINDOW,
        cooldown: COOLDOWN,
        half_open_probes: probes,
        count_is_error: false,
    }
}

fn call_for(tool: &str, breaker: BreakerConfig) -> Call {
    let settings = ToolSettings {
        breaker,
        ..ToolSettings::default()
    };
    call_with(
        def(tool, json!({"type": "object"})),
        json!({}),
        settings,
        "s1",
    )
}

fn conn() -> CallError {
    CallError::Connection {
        message: "reset".into(),
    }
}

/// An inner stage that never answers, so a call stays in flight.
#[derive(Default)]
struct Hang {
    calls: AtomicUsize,
}

impl Stage for Hang {
    fn name(&self) -> StageName {
        StageName::Execute
    }

    fn handle<'a>(&'a self, _call: &'a mut Call, _next: Next<'a>) -> BoxFuture<'a, CallResult> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(futures::future::pending())
    }
}

struct Rig {
    stage: Breaker,
    bus: EventBus,
    events: Receiver<Event>,
}

impl Rig {
    fn new() -> Self {
        let bus = EventBus::new();
        let events = bus.subscribe();
        Self {
            stage: Breaker::new(bus.clone()),
            bus,
            events,
        }
    }

    async fn call(&self, tool: &str, c: &BreakerConfig, script: &Arc<Script>) -> CallResult {
        let mut call = call_for(tool, c.clone());
        run_stage_on(&self.stage, &mut call, script, &self.bus).await
    }

    /// Drives `tool`'s breaker open with `threshold` scripted failures.
    async fn trip(&self, tool: &str, c: &BreakerConfig) {
        let failures = (0..c.failure_threshold).map(|_| fail(conn())).collect();
        let script = Script::new(failures);
        for _ in 0..c.failure_threshold {
            assert!(self.call(tool, c, &script).await.is_err());
        }
        assert_eq!(self.state(tool), Some(BreakerState::Open));
    }

    fn state(&self, tool: &str) -> Option<BreakerState> {
        self.status(tool).map(|s| s.state)
    }

    fn status(&self, tool: &str) -> Option<BreakerStatus> {
        self.stage
            .snapshot()
            .into_iter()
            .find(|s| s.tool.as_str() == tool)
    }

    fn transitions(&mut self) -> Vec<(BreakerState, BreakerState)> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            if let Event::BreakerTransition { from, to, .. } = e {
                out.push((from, to));
            }
        }
        out
    }
}

fn retry_in(result: &CallResult) -> Option<Duration> {
    match result {
        Err(CallError::BreakerOpen { retry_in, .. }) => Some(*retry_in),
        _ => None,
    }
}

use BreakerState::{Closed, HalfOpen, Open};

#[tokio::test(start_paused = true)]
async fn opens_after_threshold_and_then_fails_fast() {
    let mut rig = Rig::new();
    let c = cfg(3, 1);
    let script = Script::new(vec![fail(conn()), fail(conn()), fail(conn())]);
    for _ in 0..2 {
        assert!(rig.call("t", &c, &script).await.is_err());
    }
    let status = rig.status("t").expect("seen");
    assert_eq!((status.state, status.failures), (Closed, 2));

    assert!(matches!(
        rig.call("t", &c, &script).await,
        Err(CallError::Connection { .. })
    ));
    let fast = rig.call("t", &c, &script).await;
    assert!(
        matches!(&fast, Err(CallError::BreakerOpen { tool, .. }) if tool == "t"),
        "{fast:?}"
    );
    assert_eq!(retry_in(&fast), Some(COOLDOWN));
    assert_eq!(script.calls(), 3, "an open breaker must not reach the tool");
    assert_eq!(rig.transitions(), [(Closed, Open)]);
}

/// An `isError` result is the tool's answer to one call
/// (a 404 page, a command exiting 1, "no such issue"); any agent can
/// provoke it, so by default it says nothing about the tool's health.
#[tokio::test(start_paused = true)]
async fn a_result_the_tool_marked_as_error_does_not_count_by_default() {
    let mut rig = Rig::new();
    let c = cfg(2, 1);
    let script = Script::new((0..6).map(|_| Ok(ToolResult::error("boom"))).collect());
    for _ in 0..6 {
        assert!(rig.call("t", &c, &script).await.is_ok());
    }
    let status = rig.status("t").expect("seen");
    assert_eq!((status.state, status.failures), (Closed, 0));
    assert!(rig.transitions().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_result_the_tool_marked_as_error_counts_where_configured() {
    let rig = Rig::new();
    let c = BreakerConfig {
        count_is_error: true,
        ..cfg(2, 1)
    };
    let script = Script::new(vec![
        Ok(ToolResult::error("boom")),
        Ok(ToolResult::error("boom")),
    ]);
    for _ in 0..2 {
        assert!(rig.call("t", &c, &script).await.is_ok());
    }
    assert_eq!(rig.state("t"), Some(Open));
}

/// Errors of the caller's making (a missing file) never count, so no one
/// agent can open a tool's breaker for every agent (five reads of missing
/// files once did that to `fs_read`); the same message as a failure of the
/// tool itself does count.
#[tokio::test(start_paused = true)]
async fn caller_errors_never_count_but_tool_failures_do() {
    let rig = Rig::new();
    let c = cfg(2, 1);
    let missing = || fail(CallError::caller_error("`nope.txt` does not exist"));
    let script = Script::new((0..6).map(|_| missing()).collect());
    for _ in 0..6 {
        assert!(rig.call("t", &c, &script).await.is_err());
    }
    let status = rig.status("t").expect("seen");
    assert_eq!((status.state, status.failures), (Closed, 0));
    // They are still traffic: the tile counts six calls, none failed.
    let stats = rig.stage.stats();
    let (calls, failed) = stats[0]
        .buckets
        .iter()
        .fold((0, 0), |(c, f), (bc, bf)| (c + bc, f + bf));
    assert_eq!((calls, failed), (6, 0));
    assert!(stats[0].latency.is_some());
    let broken = || fail(CallError::tool_failed("`nope.txt` does not exist"));
    let script = Script::new(vec![broken(), broken()]);
    for _ in 0..2 {
        assert!(rig.call("t", &c, &script).await.is_err());
    }
    assert_eq!(rig.state("t"), Some(Open));
}

#[tokio::test(start_paused = true)]
async fn refusals_never_count_and_never_change_state() {
    let mut rig = Rig::new();
    let c = cfg(2, 1);
    let refusals = vec![
        CallError::Denied { reason: None },
        CallError::PolicyDenied {
            reason: "no".into(),
        },
        CallError::InvalidArgs {
            tool: "t".into(),
            problems: vec![],
        },
        CallError::LoopDetected {
            pattern: LoopPattern::Repeat,
            repeats: 5,
            halted: false,
        },
        CallError::BreakerOpen {
            tool: "t".into(),
            retry_in: COOLDOWN,
        },
        CallError::NeedsApproval {
            tool: "t".into(),
            reason: "risky".into(),
        },
    ];
    let n = refusals.len();
    let script = Script::new(refusals.into_iter().map(fail).collect());
    for _ in 0..n {
        assert!(rig.call("t", &c, &script).await.is_err());
    }
    assert_eq!(script.calls(), n, "every refusal reached the inner stage");
    let status = rig.status("t").expect("seen");
    assert_eq!((status.state, status.failures), (Closed, 0));
    assert!(rig.transitions().is_empty());
}

#[tokio::test(start_paused = true)]
async fn failures_outside_the_window_do_not_add_up() {
    let rig = Rig::new();
    let c = cfg(3, 1);
    let script = Script::new((0..5).map(|_| fail(conn())).collect());
    for _ in 0..2 {
        let _ = rig.call("t", &c, &script).await;
    }
    advance(WINDOW + Duration::from_secs(1)).await;
    for _ in 0..2 {
        let _ = rig.call("t", &c, &script).await;
    }
    let status = rig.status("t").expect("seen");
    assert_eq!((status.state, status.failures), (Closed, 2));
    let _ = rig.call("t", &c, &script).await;
    assert_eq!(rig.state("t"), Some(Open));
}

#[tokio::test(start_paused = true)]
async fn half_opens_after_cooldown_and_a_good_probe_closes() {
    let mut rig = Rig::new();
    let c = cfg(2, 1);
    rig.trip("t", &c).await;

    advance(COOLDOWN - Duration::from_millis(1)).await;
    let ok = Script::new(vec![]);
    let early = rig.call("t", &c, &ok).await;
    assert_eq!(retry_in(&early), Some(Duration::from_millis(1)));
    assert_eq!(ok.calls(), 0);

    advance(Duration::from_millis(1)).await;
    let mut probe = call_for("t", c.clone());
    let result = run_stage_on(&rig.stage, &mut probe, &ok, &rig.bus).await;
    assert!(result.is_ok());
    assert_eq!(ok.calls(), 1);
    assert!(probe.notes().iter().any(|(_, n)| n.contains("probe")));
    let status = rig.status("t").expect("seen");
    assert_eq!((status.state, status.failures), (Closed, 0));
    assert_eq!(
        rig.transitions(),
        [(Closed, Open), (Open, HalfOpen), (HalfOpen, Closed)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_with_a_fresh_cooldown() {
    let mut rig = Rig::new();
    let c = cfg(2, 1);
    rig.trip("t", &c).await;
    advance(COOLDOWN).await;

    let bad = Script::new(vec![fail(CallError::Timeout {
        after: Duration::from_secs(1),
    })]);
    assert!(rig.call("t", &c, &bad).await.is_err());
    let fast = rig.call("t", &c, &bad).await;
    assert_eq!(retry_in(&fast), Some(COOLDOWN));
    assert_eq!(bad.calls(), 1);
    assert_eq!(
        rig.transitions(),
        [(Closed, Open), (Open, HalfOpen), (HalfOpen, Open)]
    );
}

#[tokio::test(start_paused = true)]
async fn every_probe_must_succeed_before_closing() {
    let rig = Rig::new();
    let c = cfg(1, 2);
    rig.trip("t", &c).await;
    advance(COOLDOWN).await;

    let script = Script::new(vec![Ok(ToolResult::text("ok")), fail(conn())]);
    assert!(rig.call("t", &c, &script).await.is_ok());
    assert_eq!(
        rig.state("t"),
        Some(HalfOpen),
        "one of two probes is not enough"
    );
    assert!(rig.call("t", &c, &script).await.is_err());
    assert_eq!(rig.state("t"), Some(Open));
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_no_more_than_the_probe_limit() {
    let rig = Rig::new();
    let c = cfg(1, 2);
    rig.trip("t", &c).await;
    advance(COOLDOWN).await;

    let hang = Arc::new(Hang::default());
    let rest: Vec<Arc<dyn Stage>> = vec![hang.clone()];
    let (mut c1, mut c2) = (call_for("t", c.clone()), call_for("t", c.clone()));
    let mut p1 = rig.stage.handle(&mut c1, Next::new(&rest, &rig.bus));
    let mut p2 = rig.stage.handle(&mut c2, Next::new(&rest, &rig.bus));
    assert!(futures::poll!(&mut p1).is_pending());
    assert!(futures::poll!(&mut p2).is_pending());
    assert_eq!(hang.calls.load(Ordering::SeqCst), 2);

    let script = Script::new(vec![]);
    let third = rig.call("t", &c, &script).await;
    assert_eq!(retry_in(&third), Some(Duration::ZERO));
    assert_eq!(script.calls(), 0);
    assert_eq!(rig.state("t"), Some(HalfOpen));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_probe_frees_its_slot() {
    let rig = Rig::new();
    let c = cfg(1, 1);
    rig.trip("t", &c).await;
    advance(COOLDOWN).await;

    let hang = Arc::new(Hang::default());
    let rest: Vec<Arc<dyn Stage>> = vec![hang.clone()];
    let mut c1 = call_for("t", c.clone());
    {
        let mut probe = rig.stage.handle(&mut c1, Next::new(&rest, &rig.bus));
        assert!(futures::poll!(&mut probe).is_pending());
        let script = Script::new(vec![]);
        assert!(rig.call("t", &c, &script).await.is_err(), "slot is taken");
    } // the probe's future is dropped here: cancelled

    let script = Script::new(vec![]);
    assert!(rig.call("t", &c, &script).await.is_ok());
    assert_eq!(script.calls(), 1);
    assert_eq!(rig.state("t"), Some(Closed));
}

#[tokio::test(start_paused = true)]
async fn thresholds_are_per_tool() {
    let rig = Rig::new();
    let script = Script::new(vec![fail(conn()), fail(conn())]);
    let _ = rig.call("strict", &cfg(1, 1), &script).await;
    let _ = rig.call("lenient", &cfg(3, 1), &script).await;
    let states: Vec<_> = rig
        .stage
        .snapshot()
        .into_iter()
        .map(|s| (s.tool.as_str().to_owned(), s.state, s.failures))
        .collect();
    assert_eq!(
        states,
        [
            ("lenient".to_owned(), Closed, 1),
            ("strict".to_owned(), Open, 1)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn reset_closes_the_breaker_for_a_person() {
    let mut rig = Rig::new();
    let c = cfg(1, 1);
    rig.trip("t", &c).await;
    assert!(rig.status("t").and_then(|s| s.retry_in).is_some());

    assert!(rig.stage.reset("t"));
    let status = rig.status("t").expect("seen");
    assert_eq!(
        (status.state, status.failures, status.retry_in),
        (Closed, 0, None)
    );
    assert_eq!(rig.transitions(), [(Closed, Open), (Open, Closed)]);
    assert!(!rig.stage.reset("never-called"));
}

// ---- the pure state machine ----

fn t0() -> Instant {
    Instant::now()
}

#[test]
fn a_result_from_before_a_reset_is_ignored() {
    let (c, now) = (cfg(1, 1), t0());
    let mut circuit = Circuit::new();
    let slow = circuit.admit(now, &c).permit.expect("closed admits");
    assert!(circuit.reset().is_none(), "already closed");
    assert_eq!(circuit.complete(slow, Verdict::Failure, now, &c), None);
    assert_eq!(circuit.state(), Closed);
}

#[test]
fn a_late_success_cannot_close_a_reopened_breaker() {
    let (c, now) = (cfg(1, 2), t0());
    let mut circuit = Circuit::new();
    let first = circuit.admit(now, &c).permit.expect("closed admits");
    let _ = circuit.complete(first, Verdict::Failure, now, &c);
    let later = now + COOLDOWN;
    let p1 = circuit.admit(later, &c).permit.expect("probe");
    let p2 = circuit.admit(later, &c).permit.expect("probe");
    let _ = circuit.complete(p1, Verdict::Failure, later, &c);
    assert_eq!(circuit.complete(p2, Verdict::Success, later, &c), None);
    assert_eq!(circuit.state(), Open);
}

#[test]
fn zero_thresholds_act_as_one() {
    let (c, now) = (cfg(0, 0), t0());
    let mut circuit = Circuit::new();
    let p = circuit.admit(now, &c).permit.expect("closed admits");
    assert!(circuit.complete(p, Verdict::Failure, now, &c).is_some());
    let probe = circuit.admit(now + COOLDOWN, &c).permit.expect("one probe");
    assert!(circuit.admit(now + COOLDOWN, &c).permit.is_err());
    let _ = circuit.complete(probe, Verdict::Success, now + COOLDOWN, &c);
    assert_eq!(circuit.state(), Closed);
}

#[derive(Debug, Clone)]
enum Op {
    Admit,
    Finish(prop::sample::Index, Verdict),
    Cancel(prop::sample::Index),
    Advance(u64),
}

fn verdict() -> impl Strategy<Value = Verdict> {
    prop_oneof![
        Just(Verdict::Success),
        Just(Verdict::Failure),
        Just(Verdict::Neutral)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Admit),
        4 => (any::<prop::sample::Index>(), verdict()).prop_map(|(i, v)| Op::Finish(i, v)),
        1 => any::<prop::sample::Index>().prop_map(Op::Cancel),
        2 => (0u64..20_000).prop_map(Op::Advance),
    ]
}

fn any_cfg() -> impl Strategy<Value = BreakerConfig> {
    (1u32..5, 1u64..30, 1u64..30, 1u32..4).prop_map(|(threshold, window, cooldown, probes)| {
        BreakerConfig {
            failure_threshold: threshold,
            window: Duration::from_secs(window),
            cooldown: Duration::from_secs(cooldown),
            half_open_probes: probes,
            count_is_error: false,
        }
    })
}

/// What the test knows independently of the machine.
struct Model {
    now: Instant,
    /// Permits not yet finished, with the "closed generation" they were
    /// admitted in (bumped whenever the machine re-enters Closed).
    outstanding: Vec<(Permit, u32)>,
    generation: u32,
    /// Counted failures of non-probe calls of the current generation.
    failures: Vec<Instant>,
}

impl Model {
    fn failures_in_window(&self, window: Duration) -> usize {
        self.failures
            .iter()
            .filter(|t| self.now.saturating_duration_since(**t) < window)
            .count()
    }

    fn probes_out(&self, circuit: &Circuit) -> u32 {
        let n = self
            .outstanding
            .iter()
            .filter(|(p, _)| p.probe && p.epoch == circuit.epoch)
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    fn observe(&mut self, t: Option<Transition>, c: &BreakerConfig) -> Result<(), TestCaseError> {
        let Some(t) = t else { return Ok(()) };
        if t.from == Closed && t.to == Open {
            prop_assert!(
                self.failures_in_window(c.window) >= c.failure_threshold as usize,
                "opened on {} failures in the window, threshold {}",
                self.failures_in_window(c.window),
                c.failure_threshold
            );
        }
        if t.to == Closed {
            self.generation += 1;
            self.failures.clear();
        }
        Ok(())
    }
}

fn step(
    op: Op,
    m: &mut Model,
    circuit: &mut Circuit,
    c: &BreakerConfig,
) -> Result<(), TestCaseError> {
    match op {
        Op::Advance(ms) => m.now += Duration::from_millis(ms),
        Op::Admit => {
            let before = circuit.state();
            let cooling = circuit.retry_in(m.now, c).is_some_and(|d| !d.is_zero());
            let a = circuit.admit(m.now, c);
            if before == Open && cooling {
                prop_assert!(a.permit.is_err(), "admitted while cooling down");
            }
            if let Ok(p) = a.permit {
                m.outstanding.push((p, m.generation));
            }
            m.observe(a.transition, c)?;
        }
        Op::Finish(..) | Op::Cancel(..) if m.outstanding.is_empty() => {}
        Op::Finish(i, v) => {
            let (p, generation) = m.outstanding.swap_remove(i.index(m.outstanding.len()));
            let (state, failures) = (circuit.state(), circuit.failures_in_window(m.now, c));
            if v == Verdict::Failure && !p.probe && generation == m.generation {
                m.failures.push(m.now);
            }
            let t = circuit.complete(p, v, m.now, c);
            if v == Verdict::Neutral {
                prop_assert_eq!(t, None);
                prop_assert_eq!(circuit.state(), state);
                prop_assert_eq!(circuit.failures_in_window(m.now, c), failures);
            }
            m.observe(t, c)?;
        }
        Op::Cancel(i) => {
            let (p, _) = m.outstanding.swap_remove(i.index(m.outstanding.len()));
            let (state, failures) = (circuit.state(), circuit.failures_in_window(m.now, c));
            circuit.release(p);
            prop_assert_eq!(circuit.state(), state);
            prop_assert_eq!(circuit.failures_in_window(m.now, c), failures);
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn the_state_machine_keeps_its_promises(c in any_cfg(), ops in prop::collection::vec(op(), 1..200)) {
        let mut circuit = Circuit::new();
        let mut m = Model { now: t0(), outstanding: Vec::new(), generation: 0, failures: Vec::new() };
        for op in ops {
            step(op, &mut m, &mut circuit, &c)?;
            if circuit.state() == HalfOpen {
                let out = m.probes_out(&circuit);
                prop_assert!(out <= c.half_open_probes, "{out} probes in flight");
                prop_assert_eq!(circuit.probes_in_flight(), out);
            }
        }
    }
}
