//! Governed call vs direct call of a trivial tool.
//!
//! `governed`: `Engine::call` with every stage on (allowlist, hooks, trust,
//! truncate, loop guard, cast + validate, guards, policy, breaker, retry,
//! timeout) and one subscriber on the event stream, as when the UI watches.
//! `direct`: the same tool's `Tool::call`. The difference is toolgate's
//! overhead per call. `governed_audited`: `governed` with an audit log, as
//! the daemon runs; the difference to `governed` is what a durable row
//! costs. Arguments change every iteration so the loop guard sees distinct
//! calls, as it would in real use. `onion_noop_0` / `onion_noop_12` /
//! `onion_pass_12`: the same tool through zero stages, through twelve
//! stages that only pass the call on each in a boxed future of its own (as
//! wrapping stages run), and through twelve that pass it on from `enter`
//! (run in one frame, as the pre-call checks run); the differences are what
//! the pipeline's machinery costs per stage, apart from any stage's work.
//!
//! The console's variants: `governed_console` / `governed_audited_console`
//! are `governed` / `governed_audited` with the control service attached
//! instead of a full event subscriber, as `toolgate serve` runs with the
//! console: its sequencer follows calls arriving and finishing (no
//! per-stage events are built) and every call's output is kept raw and as
//! seen. `governed_outputs` is `governed` plus only the output store: the
//! difference is what keeping outputs costs a call. On this bench's
//! single-threaded runtime the sequencer task does not run between
//! iterations, so these measure the calling thread's share (emitting and
//! copying), which is what a call waits for; numbering runs on another
//! worker in the daemon.

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
use toolgate::control::{Control, EngineInfo, EngineMode, OutputLimits, RecentOutputs};
use toolgate::events::{EventBus, StageName};
use toolgate::pipeline::{Call, CallResult, Enter, Next, Pipeline, Stage};
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
    audited
        .registry()
        .register(def.clone(), tool.clone())
        .expect("register");
    let def_tool = (def, tool);
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
    console(&mut g, &rt, &session, &def_tool);
    onion(&mut g, &rt, &engine, &ctx);
    g.finish();
}

/// The `governed*` sides with the console's control service (see the
/// module docs).
fn console(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    session: &Session,
    (def, tool): &(ToolDef, Arc<dyn Tool>),
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = rt
        .block_on(AuditLog::open(&dir.path().join("audit.db")))
        .expect("audit log");
    let plain = Engine::builder(Config::default()).build();
    let audited = Engine::builder(Config::default()).audit(audit).build();
    let outputs = Engine::builder(Config::default()).build();
    for e in [&plain, &audited, &outputs] {
        e.registry()
            .register(def.clone(), tool.clone())
            .expect("register");
    }
    let _watcher = outputs.subscribe();
    outputs.record_outputs(Arc::new(RecentOutputs::new(OutputLimits::default())));
    let info = EngineInfo::now(EngineMode::Serve, dir.path(), dir.path().join("s"), None);
    let _controls: Vec<Control> = [&plain, &audited]
        .into_iter()
        .map(|e| {
            rt.block_on(Control::builder(e.clone(), info.clone()).start())
                .expect("control")
        })
        .collect();
    let n = AtomicU64::new(1 << 40);
    for (name, engine) in [
        ("governed_console", &plain),
        ("governed_audited_console", &audited),
        ("governed_outputs", &outputs),
    ] {
        g.bench_function(name, |b| {
            b.to_async(rt).iter(|| async {
                let i = n.fetch_add(1, Ordering::Relaxed);
                engine
                    .call(session, "echo", json!({"text": "hi", "n": i}))
                    .await
            })
        });
    }
}

/// A stage that only passes the call on, in a boxed future of its own
/// (as a wrapping stage such as retry is run).
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

/// A stage that only passes the call on from `enter`, so the pipeline
/// runs it in its frame (as the pre-call checks are run).
struct Pass;

impl Stage for Pass {
    fn name(&self) -> StageName {
        StageName::Guards
    }

    fn enter(&self, _call: &mut Call) -> Enter {
        Enter::Pass
    }
}

/// Makes one stage of a benchmarked pipeline.
type MakeStage = fn() -> Arc<dyn Stage>;

fn onion(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    engine: &Engine,
    ctx: &CallContext,
) {
    let tool = engine.registry().resolve("echo").expect("echo");
    let settings = engine.settings().resolve("echo");
    let sides: [(&str, usize, MakeStage); 3] = [
        ("onion_noop_0", 0, || Arc::new(PassOn)),
        ("onion_noop_12", 12, || Arc::new(PassOn)),
        ("onion_pass_12", 12, || Arc::new(Pass)),
    ];
    for (name, depth, stage) in sides {
        let stages: Vec<Arc<dyn Stage>> = (0..depth).map(|_| stage()).collect();
        let pipeline = Pipeline::from_stages(stages, EventBus::new());
        g.bench_function(name, |b| {
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
