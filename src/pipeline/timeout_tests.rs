//! Timeout tests on a paused clock, including retry and timeout sharing one
//! deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::events::EventBus;
use crate::pipeline::retry::Retry;
use crate::pipeline::testing::{Script, call_with, def, run_stage};
use crate::settings::{RetryConfig, ToolSettings};
use crate::tool::ToolResult;

/// An inner stage that takes `delay` (virtual time) before answering "slow".
struct Slow {
    delay: Duration,
    calls: AtomicUsize,
}

impl Stage for Slow {
    fn name(&self) -> StageName {
        StageName::Execute
    }

    fn handle<'a>(&'a self, _call: &'a mut Call, _next: Next<'a>) -> BoxFuture<'a, CallResult> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Ok(ToolResult::text("slow"))
        })
    }
}

fn slow(secs: u64) -> Arc<Slow> {
    Arc::new(Slow {
        delay: Duration::from_secs(secs),
        calls: AtomicUsize::new(0),
    })
}

fn call(timeout: Duration) -> Call {
    let settings = ToolSettings {
        timeout,
        ..ToolSettings::default()
    };
    call_with(
        def("t", json!({"type": "object"})),
        json!({}),
        settings,
        "s1",
    )
}

async fn run_slow(stage: &dyn Stage, c: &mut Call, inner: &Arc<Slow>) -> CallResult {
    let bus = EventBus::new();
    let rest: Vec<Arc<dyn Stage>> = vec![inner.clone()];
    stage.handle(c, Next::new(&rest, &bus)).await
}

fn timed_out_after(result: &CallResult) -> Option<Duration> {
    match result {
        Err(CallError::Timeout { after }) => Some(*after),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_fast_attempt_passes_through() {
    let script = Script::new(vec![Ok(ToolResult::text("ok"))]);
    let result = run_stage(&Timeout::new(), &mut call(Duration::from_secs(1)), &script).await;
    assert_eq!(result.expect("ok").joined_text(), "ok");
}

#[tokio::test(start_paused = true)]
async fn a_slow_attempt_is_cut_off_at_the_tool_timeout() {
    let inner = slow(10);
    let mut c = call(Duration::from_secs(1));
    let result = run_slow(&Timeout::new(), &mut c, &inner).await;
    assert_eq!(timed_out_after(&result), Some(Duration::from_secs(1)));
    assert!(c.notes().iter().any(|(s, _)| *s == StageName::Timeout));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_shortens_the_limit() {
    let inner = slow(10);
    let mut c = call(Duration::from_secs(5));
    c.deadline = Some(Instant::now() + Duration::from_millis(300));
    let result = run_slow(&Timeout::new(), &mut c, &inner).await;
    assert_eq!(timed_out_after(&result), Some(Duration::from_millis(300)));
}

#[tokio::test(start_paused = true)]
async fn a_passed_deadline_refuses_without_running() {
    let script = Script::new(vec![]);
    let mut c = call(Duration::from_secs(5));
    c.deadline = Some(Instant::now());
    tokio::time::advance(Duration::from_millis(1)).await;
    let result = run_stage(&Timeout::new(), &mut c, &script).await;
    assert!(timed_out_after(&result).is_some(), "{result:?}");
    assert_eq!(script.calls(), 0);
}

#[test]
fn attempt_limit_is_the_smaller_of_timeout_and_time_left() {
    let now = Instant::now();
    let s = Duration::from_secs;
    assert_eq!(attempt_limit(s(5), None, now), Some(s(5)));
    assert_eq!(attempt_limit(s(5), Some(now + s(2)), now), Some(s(2)));
    assert_eq!(attempt_limit(s(1), Some(now + s(2)), now), Some(s(1)));
    assert_eq!(attempt_limit(s(1), Some(now), now), None);
    assert_eq!(attempt_limit(s(1), Some(now), now + s(1)), None);
}

#[tokio::test(start_paused = true)]
async fn retries_of_timed_out_attempts_share_one_deadline() {
    let inner = slow(10);
    let settings = ToolSettings {
        timeout: Duration::from_secs(1),
        deadline: Duration::from_millis(2_500),
        retry: RetryConfig {
            max_retries: 10,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(10),
            multiplier: 1.0,
        },
        ..ToolSettings::default()
    };
    let mut c = call_with(
        def("t", json!({"type": "object"})),
        json!({}),
        settings,
        "s1",
    );
    let bus = EventBus::new();
    let rest: Vec<Arc<dyn Stage>> = vec![Arc::new(Timeout::new()), inner.clone()];
    let started = Instant::now();
    let retry = Retry::with_seed(bus.clone(), 5);
    let result = retry.handle(&mut c, Next::new(&rest, &bus)).await;

    // 1 s + backoff + 1 s + backoff + what is left of 2.5 s, then no more.
    let last = timed_out_after(&result).expect("timed out");
    assert!(last < Duration::from_secs(1), "last attempt got {last:?}");
    assert_eq!(inner.calls.load(Ordering::SeqCst), 3);
    assert!(started.elapsed() <= Duration::from_millis(2_500));
}
