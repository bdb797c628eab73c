//! A real engine for the control service's tests: an audit log and an
//! approval queue in SQLite files of a temp dir, a few scripted tools, and
//! a started [`Control`]. No transport.

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};

use super::{Control, EngineInfo, EngineMode, OutputLimits};
use crate::approval::{ApprovalOptions, Approvals};
use crate::audit::AuditLog;
use crate::config::Config;
use crate::context::{CallContext, Caller, Session};
use crate::error::CallError;
use crate::events::EventBus;
use crate::pipeline::allowlist::ToolFilter;
use crate::tool::{JsonObject, Risk, Tool, ToolDef, ToolName, ToolResult, Trust};
use crate::{CallReply, Engine};

/// The config the rig runs: outputs above 256 bytes are cut, no retries,
/// breakers open after 3 failures, `forbidden` is denied by a rule,
/// critical tools ask (autonomous preset), external tools run.
pub(crate) const CONFIG: &str = r#"
[pipeline]
max_output_bytes = 256
[pipeline.retry]
max_retries = 0
[pipeline.breaker]
failure_threshold = 3
window_s = 60
cooldown_s = 30
[pipeline.loop_guard]
warn_at = 1000
block_at = 1001
halt_at = 1002
[policy]
preset = "autonomous"
[[policy.rules]]
tool = "shell_exec"
arg = "command"
glob = "urgent*"
verdict = "ask"
timeout_s = 30
[tools.forbidden]
policy = "deny"
"#;

pub(crate) struct Rig {
    _dir: tempfile::TempDir,
    pub(crate) engine: Engine,
    pub(crate) control: Control,
    pub(crate) approvals: Approvals,
}

fn schema(props: Value) -> JsonObject {
    match json!({"type": "object", "properties": props}) {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

fn tool(
    f: impl Fn(&Value) -> Result<ToolResult, CallError> + Send + Sync + 'static,
) -> Arc<dyn Tool> {
    let f = Arc::new(f);
    Arc::new(move |args: Value, _: &CallContext| {
        let r = f(&args);
        async move { r }.boxed()
    })
}

fn def(name: &str, props: Value) -> ToolDef {
    ToolDef::new(
        ToolName::new(name).unwrap_or_else(|e| panic!("{e}")),
        format!("The {name} tool.\nMore about it."),
        schema(props),
    )
}

impl Rig {
    /// The rig with default output bounds.
    pub(crate) async fn new() -> Self {
        Self::with_limits(OutputLimits::default()).await
    }

    pub(crate) async fn with_limits(limits: OutputLimits) -> Self {
        Self::build(limits, super::RING).await
    }

    pub(crate) async fn build(limits: OutputLimits, ring: usize) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let audit = AuditLog::open(&dir.path().join("audit.db"))
            .await
            .expect("audit log");
        let bus = EventBus::new();
        let approvals = Approvals::open(&audit, bus.clone(), ApprovalOptions::default())
            .await
            .expect("approvals");
        let config = Config::parse(CONFIG, std::path::Path::new("t.toml")).expect("config");
        let filter = ToolFilter::new(None, vec!["hidden_*".to_owned()]).expect("filter");
        let engine = Engine::builder(config)
            .events(bus)
            .audit(audit)
            .approvals(approvals.clone())
            .filter(filter)
            .build();
        register(&engine);
        let info = EngineInfo::now(
            EngineMode::Serve,
            dir.path(),
            dir.path().join("agent.sock"),
            None,
        );
        let control = Control::builder(engine.clone(), info)
            .outputs(limits)
            .ring(ring)
            .start()
            .await
            .expect("control");
        Self {
            _dir: dir,
            engine,
            control,
            approvals,
        }
    }

    /// One call through the whole pipeline.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> CallReply {
        self.engine.call(&session(), tool, args).await
    }
}

/// The session every rig call runs in.
pub(crate) fn session() -> Session {
    Session::new(
        "s-1",
        Caller {
            pid: i32::try_from(std::process::id()).ok(),
            // As the socket reads it: the program, then the name it gives.
            exe: std::fs::read_link("/proc/self/exe")
                .ok()
                .map(|e| e.display().to_string()),
            client_name: Some("test-agent".into()),
            ..Caller::via("socket")
        },
    )
}

fn register(engine: &Engine) {
    let text = json!({"text": {"type": "string"}});
    let tools: Vec<(ToolDef, Arc<dyn Tool>)> = vec![
        (
            def("echo", text.clone()),
            tool(|a| Ok(ToolResult::text(a["text"].as_str().unwrap_or_default()))),
        ),
        (
            def("web", text.clone()).with_trust(Trust::External),
            tool(|a| {
                Ok(ToolResult::text(format!(
                    "page says: {}",
                    a["text"].as_str().unwrap_or_default()
                )))
            }),
        ),
        (
            def("big", json!({"n": {"type": "integer"}})),
            tool(|a| {
                let n = usize::try_from(a["n"].as_u64().unwrap_or(1000)).unwrap_or(1000);
                Ok(ToolResult::text("x".repeat(n)))
            }),
        ),
        (
            def("flaky", text.clone()),
            tool(|a| {
                Err(CallError::Connection {
                    message: format!("refused: {}", a["text"].as_str().unwrap_or_default()),
                })
            }),
        ),
        (def("forbidden", text.clone()), tool(|_| Ok(ToolResult::text("ran")))),
        (def("hidden_tool", text.clone()), tool(|_| Ok(ToolResult::text("ran")))),
        (
            def("shell_exec", json!({"command": {"type": "string"}, "token": {"type": "string", "writeOnly": true}}))
                .with_risk(Risk::Critical),
            tool(|a| {
                Ok(ToolResult::text(format!(
                    "ran {}",
                    a["command"].as_str().unwrap_or_default()
                )))
            }),
        ),
    ];
    for (d, t) in tools {
        engine.registry().register(d, t).expect("register");
    }
}
