//! Test support for stage tests: a scripted inner stage and call builders.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Call, CallResult, Next, Parts, Stage, allowlist, breaker, guards, loop_guard};
use crate::context::{CallContext, Caller, SessionId, SessionState};
use crate::error::CallError;
use crate::events::{EventBus, StageName};
use crate::registry::RegisteredTool;
use crate::schema::CompiledSchema;
use crate::settings::ToolSettings;
use crate::tool::{JsonObject, Tool, ToolDef, ToolName, ToolResult};

/// Default parts for `build`.
pub(crate) fn parts() -> Parts {
    let events = EventBus::new();
    Parts {
        breaker: Arc::new(breaker::Breaker::new(events.clone())),
        loop_guard: Arc::new(loop_guard::LoopGuard::new(events.clone())),
        policy: crate::policy::PolicyHandle::new(
            crate::policy::PolicyConfig::default(),
            events.clone(),
        ),
        approvals: None,
        events,
        filter: allowlist::FilterHandle::default(),
        hooks: Vec::new(),
        live_hooks: crate::pipeline::hooks::HookSet::default(),
        guards: Arc::new(guards::GuardConfig::default()),
    }
}

/// A registered tool from a definition; runner answers "ran".
pub(crate) fn registered(def: ToolDef) -> Arc<RegisteredTool> {
    let runner: Arc<dyn Tool> =
        Arc::new(|_, _: &CallContext| async { Ok(ToolResult::text("ran")) }.boxed());
    registered_with(def, runner)
}

/// A definition with the given JSON schema.
pub(crate) fn def(name: &str, schema: Value) -> ToolDef {
    let schema: JsonObject = match schema {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    ToolDef::new(ToolName::new(name).expect("test name"), "test tool", schema)
}

/// A call of `def` with `args` in session `s1`.
pub(crate) fn call_of(def: ToolDef, args: Value) -> Call {
    call_with(def, args, ToolSettings::default(), "s1")
}

/// A call with explicit settings and session.
pub(crate) fn call_with(def: ToolDef, args: Value, settings: ToolSettings, session: &str) -> Call {
    call_on(registered(def), args, settings, session)
}

/// A call of a tool with its own runner (a built-in, say).
pub(crate) fn call_on(
    tool: Arc<RegisteredTool>,
    args: Value,
    settings: ToolSettings,
    session: &str,
) -> Call {
    let ctx = CallContext {
        call_id: 1,
        caller: Arc::new(Caller::via("test")),
        session: SessionId::new(session),
        state: SessionState::default(),
    };
    Call::new(1, tool, args, ctx, Arc::new(settings))
}

/// A built tool (definition and runner) as the registry holds it.
pub(crate) fn registered_with(def: ToolDef, runner: Arc<dyn Tool>) -> Arc<RegisteredTool> {
    let schema =
        CompiledSchema::compile(def.name.as_str(), &def.input_schema, false).expect("test schema");
    Arc::new(RegisteredTool {
        shell_like: crate::guard::shell_like::ShellLike::of(&def),
        def,
        schema,
        runner,
    })
}

/// A call of a tool `t` with an open schema.
pub(crate) fn simple_call(args: Value) -> Call {
    call_of(def("t", json!({"type": "object"})), args)
}

/// An inner stage that answers from a script and records what it saw.
#[derive(Default)]
pub(crate) struct Script {
    answers: Mutex<VecDeque<CallResult>>,
    seen: Mutex<Vec<Value>>,
}

impl Script {
    /// A script answering these results in order, then `Ok("default")`.
    pub(crate) fn new(answers: Vec<CallResult>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.into()),
            seen: Mutex::default(),
        })
    }

    /// Arguments of every call that reached the script.
    pub(crate) fn seen(&self) -> Vec<Value> {
        self.seen.lock().expect("lock").clone()
    }

    /// How many calls reached the script.
    pub(crate) fn calls(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
}

impl Stage for Script {
    fn name(&self) -> StageName {
        StageName::Execute
    }

    fn handle<'a>(&'a self, call: &'a mut Call, _next: Next<'a>) -> BoxFuture<'a, CallResult> {
        self.seen.lock().expect("lock").push(call.args.clone());
        let answer = self.answers.lock().expect("lock").pop_front();
        Box::pin(async move { answer.unwrap_or_else(|| Ok(ToolResult::text("default"))) })
    }
}

/// Runs `stage` once on `call` with `script` as the rest of the pipeline.
pub(crate) async fn run_stage(
    stage: &dyn Stage,
    call: &mut Call,
    script: &Arc<Script>,
) -> CallResult {
    let bus = EventBus::new();
    let rest: Vec<Arc<dyn Stage>> = vec![script.clone()];
    stage.handle(call, Next::new(&rest, &bus)).await
}

/// Like [`run_stage`] but with a caller-supplied event bus.
pub(crate) async fn run_stage_on(
    stage: &dyn Stage,
    call: &mut Call,
    script: &Arc<Script>,
    bus: &EventBus,
) -> CallResult {
    let rest: Vec<Arc<dyn Stage>> = vec![script.clone()];
    stage.handle(call, Next::new(&rest, bus)).await
}

/// Shorthand for a failed answer.
pub(crate) fn fail(e: CallError) -> CallResult {
    Err(e)
}
