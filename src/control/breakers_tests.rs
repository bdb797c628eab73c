use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};

use crate::config::Config;
use crate::context::{CallContext, Caller, Session};
use crate::control::{Control, EngineInfo, EngineMode};
use crate::error::{CallError, ErrorKind};
use crate::pipeline::breaker::stats::{BUCKETS, CallBuckets};
use crate::tool::{JsonObject, Tool, ToolDef, ToolName, ToolResult};
use crate::wire::BreakerState;

const CONFIG: &str = "
[pipeline.retry]
max_retries = 0
[pipeline.breaker]
failure_threshold = 3
window_s = 60
cooldown_s = 30
[policy]
preset = \"autonomous\"
";

struct Rig {
    control: Control,
    failing: Arc<AtomicBool>,
    n: u64,
}

impl Rig {
    /// An engine without a database (the paused clock and SQLite's pool
    /// timeouts do not mix), one tool that fails while `failing` is set.
    async fn new() -> Self {
        let config = Config::parse(CONFIG, std::path::Path::new("t.toml")).expect("config");
        let engine = crate::Engine::builder(config).build();
        let failing = Arc::new(AtomicBool::new(false));
        let flag = failing.clone();
        let tool: Arc<dyn Tool> = Arc::new(move |_: Value, _: &CallContext| {
            let fail = flag.load(Ordering::SeqCst);
            async move {
                if fail {
                    Err(CallError::Connection {
                        message: "connection refused by upstream".into(),
                    })
                } else {
                    Ok(ToolResult::text("ok"))
                }
            }
            .boxed()
        });
        let schema: JsonObject =
            serde_json::from_value(json!({"type": "object"})).unwrap_or_default();
        let def = ToolDef::new(ToolName::new("svc").expect("name"), "a service", schema);
        engine.registry().register(def, tool).expect("register");
        let info = EngineInfo::now(EngineMode::Desktop, "/tmp/d", "/tmp/s", None);
        let control = Control::builder(engine, info)
            .start()
            .await
            .expect("control");
        Self {
            control,
            failing,
            n: 0,
        }
    }

    async fn calls(&mut self, ok: usize, failed: usize) {
        let session = Session::new("s", Caller::via("test"));
        for fail in std::iter::repeat_n(false, ok).chain(std::iter::repeat_n(true, failed)) {
            self.failing.store(fail, Ordering::SeqCst);
            self.n += 1;
            let _ = self
                .control
                .engine()
                .call(&session, "svc", json!({"n": self.n}))
                .await;
        }
    }

    fn view(&self) -> crate::control::types::BreakerView {
        let mut all = self.control.breakers();
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }
}

#[tokio::test(start_paused = true)]
async fn a_breakers_tile_shows_volume_errors_and_a_two_minute_sparkline() {
    let mut rig = Rig::new().await;
    rig.calls(2, 1).await;
    let v = rig.view();
    assert_eq!((v.calls, v.failures, v.threshold), (3, 1, 3));
    assert!((v.error_pct - 100.0 / 3.0).abs() < 1e-9, "{}", v.error_pct);
    assert_eq!(v.spark.len(), 24);
    assert_eq!(v.spark[23], 3);
    assert_eq!(v.spark_failed[23], 1);
    assert_eq!((v.window_s, v.cooldown_s), (60, 30));
    let lat = v.latency_ms.expect("call times once calls ran");
    assert!(lat.p50 <= lat.p90 && lat.p90 <= lat.p99, "{lat:?}");
    assert_eq!(lat.calls, 3, "the percentiles are over the three calls");
    let last = v.last_error.expect("last error");
    assert_eq!(last.kind, ErrorKind::Connection);
    assert!(
        last.message.contains("connection refused"),
        "{}",
        last.message
    );

    // Five seconds later the next call lands in the next bucket.
    tokio::time::advance(Duration::from_secs(5)).await;
    rig.calls(1, 0).await;
    let v = rig.view();
    assert_eq!((v.spark[22], v.spark[23]), (3, 1));
    assert_eq!(v.calls, 4);

    // Two minutes on, the old buckets have slid out of the sparkline.
    tokio::time::advance(Duration::from_secs(120)).await;
    let v = rig.view();
    assert_eq!(v.calls, 0);
    assert_eq!(
        v.latency_ms.map(|l| l.calls),
        Some(4),
        "the call times outlive the window: the tile must say they are older"
    );
    assert!(v.spark.iter().all(|c| *c == 0), "{:?}", v.spark);
    assert_eq!(v.error_pct, 0.0);
    // ...and the failure has left the breaker's 60 s window.
    assert_eq!(v.failures, 0);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_counts_down_to_its_probe_and_a_reset_closes_it() {
    let mut rig = Rig::new().await;
    rig.calls(0, 3).await;
    let v = rig.view();
    assert_eq!(v.state, BreakerState::Open);
    assert_eq!(v.retry_in_ms, Some(30_000));
    tokio::time::advance(Duration::from_secs(12)).await;
    assert_eq!(rig.view().retry_in_ms, Some(18_000));
    assert!(rig.control.reset_breaker("svc").reset);
    let v = rig.view();
    assert_eq!(
        (v.state, v.failures, v.retry_in_ms),
        (BreakerState::Closed, 0, None)
    );
    assert!(!rig.control.reset_breaker("never_called").reset);
}

#[tokio::test(start_paused = true)]
async fn buckets_are_reused_as_the_ring_turns() {
    let t0 = tokio::time::Instant::now();
    let mut b = CallBuckets::new(t0);
    b.record(t0, true);
    // 24 buckets later the same ring slot holds a new bucket.
    let later = t0 + Duration::from_secs(5 * BUCKETS as u64);
    b.record(later, false);
    let s = b.series(later);
    assert_eq!(s[BUCKETS - 1], (1, 0), "the old count was not carried over");
    assert_eq!(s.iter().map(|(c, _)| c).sum::<u32>(), 1);
    let s = b.series(t0);
    assert_eq!(
        s[BUCKETS - 1],
        (0, 0),
        "a slot reused by a later bucket is not the old one"
    );
}

#[tokio::test]
async fn the_spark_shape_is_the_engines_bucketing() {
    let rig = Rig::new().await;
    let shape = rig.control.spark_shape();
    assert_eq!(shape.bucket_ms, 5_000);
    assert_eq!(shape.buckets as usize, BUCKETS);
}
