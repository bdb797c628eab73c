//! Retry tests: the stage on a paused clock against a scripted inner stage,
//! then properties of the backoff.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

use super::*;
use crate::error::ErrorKind;
use crate::events::Event;
use crate::pipeline::testing::{Script, call_with, def, fail, run_stage, run_stage_on};
use crate::settings::ToolSettings;
use crate::tool::ToolResult;

fn settings(max_retries: u32, deadline: Duration) -> ToolSettings {
    ToolSettings {
        deadline,
        retry: RetryConfig {
            max_retries,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(400),
            multiplier: 2.0,
        },
        ..ToolSettings::default()
    }
}

fn call(s: ToolSettings) -> Call {
    call_with(def("t", json!({"type": "object"})), json!({}), s, "s1")
}

fn default_call() -> Call {
    call(settings(2, Duration::from_secs(120)))
}

fn stage() -> Retry {
    Retry::with_seed(EventBus::new(), 7)
}

fn conn() -> CallError {
    CallError::Connection {
        message: "refused".into(),
    }
}

fn retries(rx: &mut Receiver<Event>) -> Vec<(u32, ErrorKind, Duration)> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        if let Event::CallRetry {
            attempt,
            kind,
            backoff,
            ..
        } = e
        {
            out.push((attempt, kind, backoff));
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn transient_errors_are_retried() {
    let transient = [
        CallError::Timeout {
            after: Duration::from_secs(1),
        },
        conn(),
        CallError::RateLimited { retry_after: None },
        CallError::Upstream {
            status: 503,
            message: "unavailable".into(),
        },
    ];
    for err in transient {
        let script = Script::new(vec![fail(err.clone()), Ok(ToolResult::text("ok"))]);
        let result = run_stage(&stage(), &mut default_call(), &script).await;
        assert_eq!(script.calls(), 2, "{err:?} should be retried");
        assert_eq!(result.expect("second attempt").joined_text(), "ok");
    }
}

#[tokio::test(start_paused = true)]
async fn other_errors_are_returned_at_once() {
    let final_errors = [
        CallError::tool_failed("disk full"),
        CallError::InvalidArgs {
            tool: "t".into(),
            problems: vec![],
        },
        CallError::Denied { reason: None },
        CallError::PolicyDenied {
            reason: "no".into(),
        },
        CallError::Upstream {
            status: 404,
            message: "missing".into(),
        },
        CallError::internal("bug"),
    ];
    for err in final_errors {
        let script = Script::new(vec![fail(err.clone())]);
        let result = run_stage(&stage(), &mut default_call(), &script).await;
        assert_eq!(script.calls(), 1, "{err:?} must not be retried");
        assert_eq!(result.err().map(|e| e.kind()), Some(err.kind()));
    }
}

#[tokio::test(start_paused = true)]
async fn a_result_the_tool_marked_as_error_is_not_rerun() {
    let script = Script::new(vec![Ok(ToolResult::error("charged, then failed"))]);
    let result = run_stage(&stage(), &mut default_call(), &script).await;
    assert_eq!(script.calls(), 1);
    assert!(result.expect("ok result").is_error);
}

#[tokio::test(start_paused = true)]
async fn stops_after_max_retries() {
    for max in [0, 1, 3] {
        let script = Script::new((0..10).map(|_| fail(conn())).collect());
        let mut c = call(settings(max, Duration::from_secs(120)));
        let result = run_stage(&stage(), &mut c, &script).await;
        assert_eq!(script.calls(), max as usize + 1);
        assert!(matches!(result, Err(CallError::Connection { .. })));
        let last = c.notes().last().map(|(_, n)| n.clone()).unwrap_or_default();
        assert!(last.contains("no retries left"), "{last}");
    }
}

#[tokio::test(start_paused = true)]
async fn waits_as_long_as_the_upstream_asks() {
    let bus = EventBus::new();
    let mut rx = bus.subscribe();
    let wait = Duration::from_secs(10);
    let script = Script::new(vec![
        fail(CallError::RateLimited {
            retry_after: Some(wait),
        }),
        Ok(ToolResult::text("ok")),
    ]);
    let started = Instant::now();
    let result = run_stage_on(
        &Retry::with_seed(bus.clone(), 1),
        &mut default_call(),
        &script,
        &bus,
    )
    .await;
    assert!(result.is_ok());
    assert!(started.elapsed() >= wait, "slept {:?}", started.elapsed());
    assert_eq!(retries(&mut rx), [(1, ErrorKind::RateLimit, wait)]);
}

#[tokio::test(start_paused = true)]
async fn never_starts_a_backoff_past_the_deadline() {
    let script = Script::new(vec![
        fail(CallError::RateLimited {
            retry_after: Some(Duration::from_secs(5)),
        }),
        Ok(ToolResult::text("too late")),
    ]);
    let mut c = call(settings(5, Duration::from_secs(1)));
    let started = Instant::now();
    let result = run_stage(&stage(), &mut c, &script).await;
    assert!(matches!(result, Err(CallError::RateLimited { .. })));
    assert_eq!(script.calls(), 1);
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "gave up without sleeping"
    );
    assert!(c.notes().iter().any(|(_, n)| n.contains("deadline")));
}

#[tokio::test(start_paused = true)]
async fn fixes_the_deadline_once() {
    let script = Script::new(vec![]);
    let mut c = default_call();
    let now = Instant::now();
    let _ = run_stage(&stage(), &mut c, &script).await;
    assert_eq!(c.deadline, Some(now + Duration::from_secs(120)));

    let earlier = now + Duration::from_secs(3);
    let mut c = default_call();
    c.deadline = Some(earlier);
    let _ = run_stage(&stage(), &mut c, &script).await;
    assert_eq!(c.deadline, Some(earlier), "an existing deadline is kept");
}

#[tokio::test(start_paused = true)]
async fn reports_each_retry() {
    let bus = EventBus::new();
    let mut rx = bus.subscribe();
    let timeout = CallError::Timeout {
        after: Duration::from_secs(1),
    };
    let script = Script::new(vec![
        fail(timeout),
        fail(conn()),
        Ok(ToolResult::text("ok")),
    ]);
    let mut c = default_call();
    let result = run_stage_on(&Retry::with_seed(bus.clone(), 3), &mut c, &script, &bus).await;
    assert!(result.is_ok());
    let seen = retries(&mut rx);
    let kinds: Vec<_> = seen.iter().map(|(a, k, _)| (*a, *k)).collect();
    assert_eq!(kinds, [(1, ErrorKind::Timeout), (2, ErrorKind::Connection)]);
    assert!(seen[0].2 <= Duration::from_millis(100));
    assert!(seen[1].2 <= Duration::from_millis(200));
    let notes: Vec<_> = c
        .notes()
        .iter()
        .filter(|(s, _)| *s == StageName::Retry)
        .collect();
    assert_eq!(notes.len(), 2);
    assert!(
        notes[0].1.starts_with("attempt 1 failed (timeout)"),
        "{}",
        notes[0].1
    );
}

#[tokio::test(start_paused = true)]
async fn a_seed_makes_the_jitter_reproducible() {
    async fn backoffs(seed: u64) -> Vec<Duration> {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let script = Script::new((0..4).map(|_| fail(conn())).collect());
        let mut c = call(settings(3, Duration::from_secs(120)));
        let _ = run_stage_on(&Retry::with_seed(bus.clone(), seed), &mut c, &script, &bus).await;
        retries(&mut rx).into_iter().map(|(_, _, b)| b).collect()
    }
    let first = backoffs(42).await;
    assert_eq!(first.len(), 3);
    assert_eq!(first, backoffs(42).await);
}

// ---- backoff ----

fn cfg(initial_ms: u64, max_ms: u64, multiplier: f64) -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        initial_backoff: Duration::from_millis(initial_ms),
        max_backoff: Duration::from_millis(max_ms),
        multiplier,
    }
}

#[test]
fn the_cap_grows_then_stops_at_the_maximum() {
    let c = cfg(100, 5_000, 2.0);
    let caps: Vec<_> = [0, 1, 2, 5, 6, 1_000, u32::MAX]
        .into_iter()
        .map(|n| backoff_cap(n, &c).as_millis())
        .collect();
    assert_eq!(caps, [100, 200, 400, 3_200, 5_000, 5_000, 5_000]);
}

#[test]
fn odd_multipliers_stay_in_bounds() {
    assert_eq!(
        backoff_cap(3, &cfg(100, 5_000, f64::NAN)),
        Duration::from_secs(5)
    );
    assert_eq!(backoff_cap(3, &cfg(100, 5_000, -2.0)), Duration::ZERO);
    assert_eq!(
        backoff_cap(9, &cfg(100, 5_000, 1.0)),
        Duration::from_millis(100)
    );
}

#[test]
fn full_jitter_spreads_over_the_whole_range() {
    let c = cfg(1_000, 1_000, 2.0);
    let mut rng = StdRng::seed_from_u64(9);
    let samples: Vec<_> = (0..1_000).map(|_| backoff(0, &c, &mut rng)).collect();
    let (lo, hi) = (samples.iter().min(), samples.iter().max());
    assert!(lo < Some(&Duration::from_millis(50)), "{lo:?}");
    assert!(hi > Some(&Duration::from_millis(950)), "{hi:?}");
}

#[test]
fn retry_after_raises_but_never_lowers_the_wait() {
    let c = cfg(100, 100, 2.0);
    let mut rng = StdRng::seed_from_u64(1);
    let long = CallError::RateLimited {
        retry_after: Some(Duration::from_secs(3)),
    };
    assert_eq!(retry_delay(&long, 0, &c, &mut rng), Duration::from_secs(3));
    let short = CallError::RateLimited {
        retry_after: Some(Duration::ZERO),
    };
    let mut a = StdRng::seed_from_u64(2);
    let mut b = StdRng::seed_from_u64(2);
    assert_eq!(retry_delay(&short, 0, &c, &mut a), backoff(0, &c, &mut b));
}

proptest! {
    #[test]
    fn backoff_stays_within_full_jitter_bounds(
        attempt in 0u32..80,
        initial_ms in 0u64..10_000,
        max_ms in 0u64..120_000,
        multiplier in 1.0f64..10.0,
        seed: u64,
    ) {
        let c = cfg(initial_ms, max_ms, multiplier);
        let mut rng = StdRng::seed_from_u64(seed);
        let b = backoff(attempt, &c, &mut rng).as_secs_f64();
        let grown = initial_ms as f64 / 1e3 * multiplier.powf(f64::from(attempt));
        let cap = grown.min(max_ms as f64 / 1e3);
        prop_assert!(b >= 0.0);
        prop_assert!(b <= cap + 1e-9, "backoff {b}s above cap {cap}s");
    }
}
