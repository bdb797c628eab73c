//! Shared fixtures for the integration tests.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::broadcast;
use toolgate::config::Config;
use toolgate::context::{CallContext, Caller, Session};
use toolgate::engine::EngineBuilder;
use toolgate::events::Event;
use toolgate::setup::{Env, engine_with};
use toolgate::tool::{JsonObject, Tool, ToolDef, ToolName, ToolResult};
use toolgate::{CallError, Engine};

/// An engine from TOML text, with `root` as its only file root and the
/// given allowlist environment.
pub(crate) fn engine(root: &Path, toml: &str, allowed: Option<&str>) -> Engine {
    engine_adjusted(root, toml, allowed, |b| b)
}

/// Like [`engine`], with a hook into the builder.
pub(crate) fn engine_adjusted(
    root: &Path,
    toml: &str,
    allowed: Option<&str>,
    adjust: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Engine {
    let mut config = Config::parse(toml, Path::new("test.toml")).expect("test config");
    config.builtin.roots = vec![root.to_owned()];
    let env = Env {
        allowed_tools: allowed.map(str::to_owned),
        warden: Some(warden()),
        ..Env::default()
    };
    engine_with(config, &env, adjust).expect("engine")
}

/// The `toolgate` binary this test run built: it is the warden that
/// confines governed processes (see `toolgate::barrier`).
pub(crate) fn warden() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// The barrier as a daemon on this machine applies it, with the real
/// warden and the strict defaults, hiding nothing in particular.
pub(crate) fn barrier() -> toolgate::barrier::Barrier {
    toolgate::barrier::Barrier::start(
        Some(warden()),
        toolgate::barrier::Shield::new(),
        toolgate::barrier::BarrierSettings::default(),
    )
}

/// Whether process `pid` runs: `/proc/<pid>` exists and is not a zombie (a
/// killed process whose parent has not reaped it yet is gone for our
/// purposes).
pub(crate) fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_some_and(|state| !matches!(state, 'Z' | 'X'))
    })
}

/// Waits (10 s at most) until no process in `pids` runs.
pub(crate) async fn all_gone(pids: &[u32]) -> bool {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        if pids.iter().all(|p| !running(*p)) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    false
}

/// A test session.
pub(crate) fn session(id: &str) -> Session {
    Session::new(id, Caller::via("test"))
}

/// A JSON object from a `json!` literal.
pub(crate) fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

/// Registers a tool backed by a closure.
pub(crate) fn register<F, Fut>(engine: &Engine, name: &str, schema: Value, f: F)
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolResult, CallError>> + Send + 'static,
{
    let def = ToolDef::new(
        ToolName::new(name).expect("name"),
        format!("test tool {name}"),
        obj(schema),
    );
    register_def(engine, def, f);
}

/// Registers a tool with a full definition.
pub(crate) fn register_def<F, Fut>(engine: &Engine, def: ToolDef, f: F)
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<ToolResult, CallError>> + Send + 'static,
{
    let f = Arc::new(f);
    let tool: Arc<dyn Tool> = Arc::new(move |args: Value, _: &CallContext| {
        let f = f.clone();
        async move { f(args).await }.boxed()
    });
    engine.registry().register(def, tool).expect("register");
}

/// Every event already in the receiver.
pub(crate) fn drain(rx: &mut broadcast::Receiver<Event>) -> Vec<Value> {
    std::iter::from_fn(|| rx.try_recv().ok())
        .map(|e| serde_json::to_value(e).expect("event json"))
        .collect()
}

/// The `type` of each event.
pub(crate) fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

pub(crate) mod catalog;
pub(crate) mod daemon;
pub(crate) mod escapes;
pub(crate) mod postgres;
pub(crate) mod python;
pub(crate) mod roles;
pub(crate) mod serve;

/// An HTTP client for the console's tests: follows no redirects (the
/// login's 303 is checked) and keeps no cookies (each test sends the ones
/// it means to).
pub(crate) fn console_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Trades the one-time login link `url` for a session; returns the
/// `Cookie` header value (`tg_console=...`).
pub(crate) async fn session_cookie(url: &str) -> String {
    let r = console_client().get(url).send().await.unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER, "{url}");
    let set = r.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}
