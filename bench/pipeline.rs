//! Governed call vs direct call of a trivial tool.
//!
//! `governed`: `Engine::call` with every stage on (allowlist, hooks, trust,
//! truncate, loop guard, cast + validate, guards, policy, breaker, retry,
//! timeout) and one subscriber on the event stream, as when the UI watches.
//! `direct`: the same tool's `Tool::call`. The difference is toolgate's
//! overhead per call. `governed_audited`: `governed` with an audit log, as
//! the daemon runs; the difference to `governed` is what a durable row
//! costs. Arguments change every iteration so the loop guard sees distinct
//! calls, as it would in real use. `onion_noop_0` / `onion_noop_12`: the
//! same tool through zero and through twelve stages that only pass the call
//! on; the difference is what the onion itself (a boxed future, two clock
//! reads and a trace entry per stage) costs, apart from any stage's work.

// criterion_group! and criterion_main! generate undocumented items.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::FutureExt;
use serde_json::json;
use toolgate::Engine;
use toolgate::audit::AuditLog;
use toolgate::config::Config;
use toolgate::context::{CallContext, Caller, Session};
use toolgate::events::{EventBus, StageName};
use toolgate::pipeline::{Call, CallResult, Next, Pipeline, Stage};
use toolgate::tool::{JsonObject, Tool, ToolDef, ToolName, ToolResult};

fn echo() -> (ToolDef, Arc<dyn Tool>) {
    let schema: JsonObject = match json!({
        "type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["text"]
    }) {
        serde_json::Value::Object(o) => o,
        _ => unreachable!(),
    };
    let def = ToolDef::new(
        ToolName::new("echo").expect("name"),
        "Echoes its text.",
        schema,
    );
    let tool: Arc<dyn Tool> = Arc::new(|args: serde_json::Value, _: &CallContext| {
        async move {
            Ok(ToolResult::text(
                args["text"].as_str().unwrap_or_default().to_owned(),
            ))
        }
        .boxed()
    });
    (def, tool)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::builder(Config::default()).build();
    let (def, tool) = echo();
    engine
        .registry()
        .register(def.clone(), tool.clone())
        .expect("register");
    let _watcher = engine.subscribe();
    let session = Session::new("bench", Caller::via("bench"));
    let ctx = CallContext {
        call_id: 0,
        caller: session.caller.clone(),
        session: session.id.clone(),
        state: session.state.clone(),
    };
    let n = AtomicU64::new(0);
    let mut g = c.benchmark_group("pipeline");
    g.bench_function("direct", |b| {
        b.to_async(&rt).iter(|| async {
            let i = n.fetch_add(1, Ordering::Relaxed);
            tool.call(json!({"text": "hi", "n": i}), &ctx).await
        })
    });
    // The same, recording every call in an audit log (as the daemon does):
    // the difference to `governed` is what a durable row costs, hot.
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = rt
        .block_on(AuditLog::open(&dir.path().join("audit.db")))
        .expect("audit log");
    let audited = Engine::builder(Config::default()).audit(audit).build();
    audited.registry().register(def, tool).expect("register");
    let _audited_watcher = audited.subscribe();
    for (name, engine) in [("governed", &engine), ("governed_audited", &audited)] {
        g.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let i = n.fetch_add(1, Ordering::Relaxed);
                engine
                    .call(&session, "echo", json!({"text": "hi", "n": i}))
                    .await
            })
        });
    }
    onion(&mut g, &rt, &engine, &ctx);
    g.finish();
}

/// A stage that only passes the call on.
struct PassOn;

impl Stage for PassOn {
    fn name(&self) -> StageName {
        StageName::Hooks
    }

    fn handle<'a>(
        &'a self,
        call: &'a mut Call,
        next: Next<'a>,
    ) -> futures::future::BoxFuture<'a, CallResult> {
        Box::pin(next.run(call))
    }
}

fn onion(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    ctx: &CallContext,
) {
    let tool = engine.registry().resolve("echo").expect("echo");
    let settings = engine.settings().resolve("echo");
    for depth in [0, 12] {
        let stages: Vec<Arc<dyn Stage>> = (0..depth)
            .map(|_| Arc::new(PassOn) as Arc<dyn Stage>)
            .collect();
        let pipeline = Pipeline::from_stages(stages, EventBus::new());
        g.bench_function(format!("onion_noop_{depth}"), |b| {
            b.to_async(rt).iter(|| async {
                let args = json!({"text": "hi"});
                let mut call = Call::new(0, tool.clone(), args, ctx.clone(), settings.clone());
                pipeline.run(&mut call).await
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
