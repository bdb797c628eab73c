use std::sync::Arc;

use serde_json::json;
use tokio::sync::broadcast::Receiver;

use super::*;
use crate::pipeline::CallResult;
use crate::pipeline::testing::{Script, call_with, def, run_stage_on};
use crate::settings::ToolSettings;

/// Defaults: window 120 s, warn 3, block 5, halt 8.
fn settings() -> ToolSettings {
    ToolSettings::default()
}

struct Rig {
    guard: LoopGuard,
    bus: EventBus,
    events: Receiver<Event>,
    script: Arc<Script>,
}

impl Rig {
    fn new() -> Self {
        let bus = EventBus::new();
        Self {
            guard: LoopGuard::new(bus.clone()),
            events: bus.subscribe(),
            bus,
            script: Script::new(vec![]),
        }
    }

    /// One call of `tool` with `args` in `session`; returns the result and
    /// the notices the call collected.
    async fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
        session: &str,
    ) -> (CallResult, Vec<String>) {
        let d = def(tool, json!({"type": "object"}));
        let mut call = call_with(d, args, settings(), session);
        let r = run_stage_on(&self.guard, &mut call, &self.script, &self.bus).await;
        (r, call.notices().to_vec())
    }

    async fn a(&self) -> (CallResult, Vec<String>) {
        self.call("t", json!({"q": "a"}), "s1").await
    }

    async fn b(&self) -> (CallResult, Vec<String>) {
        self.call("t", json!({"q": "b"}), "s1").await
    }

    /// Levels of the LoopGuard events published so far.
    fn levels(&mut self) -> Vec<&'static str> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            if let Event::LoopGuard {
                level,
                session,
                tool,
            } = e
            {
                assert_eq!(tool.as_str(), "t");
                assert_eq!(session, "s1");
                out.push(level.as_str());
            }
        }
        out
    }
}

fn loop_err(r: &CallResult) -> (LoopPattern, u32, bool) {
    match r {
        Err(CallError::LoopDetected {
            pattern,
            repeats,
            halted,
        }) => (*pattern, *repeats, *halted),
        other => panic!("expected LoopDetected, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn repeats_warn_then_block_then_halt_the_session() {
    let mut rig = Rig::new();
    for _ in 0..2 {
        let (r, notices) = rig.a().await;
        assert!(r.is_ok());
        assert!(notices.is_empty(), "{notices:?}");
    }
    for n in 3..=4 {
        let (r, notices) = rig.a().await;
        assert!(r.is_ok());
        assert_eq!(notices.len(), 1);
        assert!(
            notices[0].contains(&format!("made {n} times in the last 120s")),
            "{notices:?}"
        );
        assert!(notices[0].contains("refused from count 5"), "{notices:?}");
    }
    assert_eq!(rig.script.calls(), 4);
    for n in 5..=7 {
        let (r, _) = rig.a().await;
        assert_eq!(loop_err(&r), (LoopPattern::Repeat, n, false));
    }
    let (r, _) = rig.a().await;
    assert_eq!(loop_err(&r), (LoopPattern::Repeat, 8, true));
    assert!(rig.guard.is_halted(&SessionId::new("s1")));
    // Any call of the halted session is refused, not only the looping one.
    let (r, _) = rig.call("other", json!({}), "s1").await;
    assert_eq!(loop_err(&r), (LoopPattern::Repeat, 8, true));
    assert_eq!(rig.script.calls(), 4, "refused calls must not run");
    assert_eq!(
        rig.levels(),
        ["warn", "warn", "block", "block", "block", "halt"]
    );
}

#[tokio::test(start_paused = true)]
async fn reset_lifts_the_halt() {
    let rig = Rig::new();
    for _ in 0..8 {
        let _ = rig.a().await;
    }
    let s1 = SessionId::new("s1");
    assert!(rig.guard.is_halted(&s1));
    rig.guard.reset(&s1);
    assert!(!rig.guard.is_halted(&s1));
    let (r, notices) = rig.a().await;
    assert!(r.is_ok());
    assert!(notices.is_empty());
}

#[tokio::test(start_paused = true)]
async fn identity_is_tool_plus_canonical_args_per_session() {
    let rig = Rig::new();
    for i in 0..4 {
        // Alternate key order: still the same call.
        let args = if i % 2 == 0 {
            json!({"a": 1, "b": 2})
        } else {
            json!({"b": 2, "a": 1})
        };
        let _ = rig.call("t", args, "s1").await;
    }
    let (r, _) = rig.call("t", json!({"b": 2, "a": 1}), "s1").await;
    assert_eq!(loop_err(&r).1, 5);
    // Same args, other tool or other session: counted separately.
    let (r, notices) = rig.call("u", json!({"a": 1, "b": 2}), "s1").await;
    assert!(r.is_ok() && notices.is_empty());
    let (r, notices) = rig.call("t", json!({"a": 1, "b": 2}), "s2").await;
    assert!(r.is_ok() && notices.is_empty());
}

#[tokio::test(start_paused = true)]
async fn calls_outside_the_window_stop_counting() {
    let rig = Rig::new();
    let window = settings().loop_guard.window;
    let _ = rig.a().await;
    let _ = rig.a().await;
    tokio::time::advance(window - Duration::from_secs(1)).await;
    // Still inside: third repeat warns.
    let (_, notices) = rig.a().await;
    assert_eq!(notices.len(), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    // The first two fell out; only the third and this one count.
    let (r, notices) = rig.a().await;
    assert!(r.is_ok());
    assert!(notices.is_empty(), "{notices:?}");
    let (_, notices) = rig.a().await;
    assert!(notices[0].contains("made 3 times"), "{notices:?}");
}

#[tokio::test(start_paused = true)]
async fn ping_pong_counts_the_alternating_tail() {
    let mut rig = Rig::new();
    // A B A: not yet a ping-pong; no call repeated 3 times.
    for r in [rig.a().await, rig.b().await, rig.a().await] {
        assert!(r.0.is_ok() && r.1.is_empty(), "{r:?}");
    }
    // A B A B: tail of 4 ≥ warn_at.
    let (r, notices) = rig.b().await;
    assert!(r.is_ok());
    assert!(
        notices[0].contains("last 4 calls alternated"),
        "{notices:?}"
    );
    // A B A B A: tail of 5 = block_at, although A was made only 3 times.
    let (r, _) = rig.a().await;
    assert_eq!(loop_err(&r), (LoopPattern::PingPong, 5, false));
    let _ = rig.b().await;
    let _ = rig.a().await;
    let (r, _) = rig.b().await;
    assert_eq!(loop_err(&r), (LoopPattern::PingPong, 8, true));
    assert_eq!(rig.script.calls(), 4);
    assert_eq!(rig.levels(), ["warn", "block", "block", "block", "halt"]);
}

#[tokio::test(start_paused = true)]
async fn a_third_call_breaks_the_alternation() {
    let rig = Rig::new();
    let _ = rig.a().await;
    let _ = rig.b().await;
    let _ = rig.call("t", json!({"q": "c"}), "s1").await;
    let _ = rig.a().await;
    // Tail is now "c A B": 3 calls alternate, below recognition.
    let (r, notices) = rig.b().await;
    assert!(r.is_ok());
    assert!(notices.is_empty(), "{notices:?}");
}

#[tokio::test(start_paused = true)]
async fn idle_sessions_are_dropped_but_halts_are_kept() {
    let rig = Rig::new();
    for _ in 0..8 {
        let _ = rig.a().await; // s1 halts
    }
    let _ = rig.call("t", json!({}), "s2").await;
    let _ = rig.call("t", json!({}), "s3").await;
    assert_eq!(rig.guard.tracked_sessions(), 3);
    tokio::time::advance(settings().loop_guard.window + SWEEP_EVERY).await;
    let _ = rig.call("t", json!({}), "s4").await;
    // s2 and s3 expired; the halted s1 and the new s4 remain.
    assert_eq!(rig.guard.tracked_sessions(), 2);
    assert!(rig.guard.is_halted(&SessionId::new("s1")));
}

#[test]
fn zero_thresholds_disable_their_level() {
    let cfg = LoopGuardConfig {
        window: Duration::from_secs(1),
        warn_at: 0,
        block_at: 2,
        halt_at: 0,
    };
    assert_eq!(decide(1, 0, &cfg), Decision::Pass);
    assert_eq!(
        decide(100, 0, &cfg),
        Decision::Block(LoopPattern::Repeat, 100)
    );
    assert_eq!(
        decide(1, 4, &cfg),
        Decision::Block(LoopPattern::PingPong, 4)
    );
}

#[test]
fn timestamps_stay_inline_until_a_call_repeats_and_expire_by_window() {
    let t0 = Instant::now();
    let window = Duration::from_secs(10);
    let mut times = Times::One(t0);
    // Inside the window: the repeat moves them to a queue.
    assert_eq!(times.push_within(t0 + Duration::from_secs(1), window), 2);
    assert!(matches!(times, Times::Many(_)));
    assert_eq!(times.push_within(t0 + Duration::from_secs(2), window), 3);
    // 10.5 s on, the first is outside the window.
    assert_eq!(
        times.retain_within(t0 + Duration::from_millis(10_500), window),
        2
    );
    // A call seen once, long ago, counts afresh.
    let mut once = Times::One(t0);
    assert_eq!(once.push_within(t0 + Duration::from_secs(60), window), 1);
    assert!(matches!(once, Times::One(t) if t == t0 + Duration::from_secs(60)));
}

#[test]
fn a_repeat_queue_is_bounded() {
    let t0 = Instant::now();
    let window = Duration::from_secs(3600);
    let mut times = Times::One(t0);
    for i in 1..(MAX_TRACKED as u64 * 2) {
        times.push_within(t0 + Duration::from_millis(i), window);
    }
    assert_eq!(times.len(), MAX_TRACKED);
}

#[test]
fn the_key_hasher_passes_u64_keys_through_and_mixes_other_input() {
    let mut h = KeyHasher::default();
    h.write_u64(0xdead_beef);
    assert_eq!(h.finish(), 0xdead_beef);
    let mut a = KeyHasher::default();
    a.write(b"ab");
    let mut b = KeyHasher::default();
    b.write(b"ba");
    assert_ne!(a.finish(), b.finish());
}
