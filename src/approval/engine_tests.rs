//! Approvals through the whole engine: a `shell_exec`-like critical tool
//! waits in the policy stage until a person decides through the API. The
//! agent-socket end-to-end test builds on the same setup:
//! `Approvals::open` on the audit log, `Engine::builder(..).events(bus)
//! .approvals(..)`, then call over the socket instead of `Engine::call`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::*;
use crate::audit::AuditLog;
use crate::config::Config;
use crate::context::{CallContext, Caller, Session};
use crate::error::ErrorKind;
use crate::events::{Event, EventBus};
use crate::policy::{PolicyConfig, Preset};
use crate::tool::{JsonObject, Risk, Tool, ToolDef, ToolName, ToolResult};
use crate::{CallReply, Engine};

struct Rig {
    _dir: tempfile::TempDir,
    engine: Engine,
    approvals: Approvals,
    events: broadcast::Receiver<Event>,
    runs: Arc<AtomicUsize>,
}

async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditLog::open(&dir.path().join("audit.db")).await.unwrap();
    let bus = EventBus::new();
    let approvals = Approvals::open(&audit, bus.clone(), ApprovalOptions::default())
        .await
        .unwrap();
    let engine = Engine::builder(Config::default())
        .events(bus)
        .audit(audit)
        .approvals(approvals.clone())
        .build();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let runner: Arc<dyn Tool> = Arc::new(move |args: Value, _: &CallContext| {
        counter.fetch_add(1, Ordering::SeqCst);
        let cmd = args["command"].as_str().unwrap_or_default().to_owned();
        async move { Ok(ToolResult::text(format!("ran {cmd}"))) }.boxed()
    });
    let schema: JsonObject = serde_json::from_value(json!({
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"]
    }))
    .unwrap();
    let def =
        ToolDef::new(ToolName::new("shell_exec").unwrap(), "run", schema).with_risk(Risk::Critical);
    engine.registry().register(def, runner).unwrap();
    let events = engine.subscribe();
    Rig {
        _dir: dir,
        engine,
        approvals,
        events,
        runs,
    }
}

fn session() -> Session {
    Session::new(
        "s1",
        Caller {
            pid: Some(i32::try_from(std::process::id()).unwrap()),
            client_name: Some("test-agent".into()),
            ..Caller::via("socket")
        },
    )
}

fn call(e: &Engine, command: &str) -> tokio::task::JoinHandle<CallReply> {
    let e = e.clone();
    let args = json!({ "command": command });
    tokio::spawn(async move { e.call(&session(), "shell_exec", args).await })
}

async fn requested(rx: &mut broadcast::Receiver<Event>) -> (i64, String) {
    loop {
        if let Event::ApprovalRequested { id, reason, .. } = rx.recv().await.unwrap() {
            return (id, reason);
        }
    }
}

#[tokio::test]
async fn approve_runs_the_waiting_call() {
    let mut r = rig().await;
    let waiting = call(&r.engine, "rm -rf build");
    let (id, reason) = requested(&mut r.events).await;
    assert!(reason.contains("recursive or forced delete"), "{reason}");
    let pending = r.approvals.pending();
    assert_eq!(pending[0].args, json!({"command": "rm -rf build"}));
    assert_eq!(pending[0].caller.client_name.as_deref(), Some("test-agent"));
    assert_eq!(
        r.runs.load(Ordering::SeqCst),
        0,
        "nothing ran before the decision"
    );
    let t = tokio::time::Instant::now();
    r.approvals
        .decide(id, Decision::approve().by("cli"))
        .await
        .unwrap();
    let reply = waiting.await.unwrap();
    let latency = t.elapsed();
    eprintln!("decision latency (approve call → engine reply): {latency:?}");
    assert_eq!(reply.result.unwrap().joined_text(), "ran rm -rf build");
    assert_eq!(r.runs.load(Ordering::SeqCst), 1);
    let notes: Vec<&str> = reply.notes.iter().map(|(_, n)| n.as_str()).collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("ask (critical risk) by default:shell-rm-recursive")),
        "{notes:?}"
    );
    assert!(notes.contains(&"approved by cli"), "{notes:?}");
    let rows = r.engine.audit().unwrap().recent_calls(5).await.unwrap();
    assert_eq!(rows.last().map(|c| c.decision.as_str()), Some("allowed"));
}

#[tokio::test]
async fn deny_with_reason_reaches_the_agent_as_denied() {
    let mut r = rig().await;
    let waiting = call(&r.engine, "git push --force");
    let (id, _) = requested(&mut r.events).await;
    r.approvals
        .deny(id, Some("not on main".into()))
        .await
        .unwrap();
    let e = waiting.await.unwrap().result.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied);
    assert_eq!(e.to_string(), "a person denied this call: not on main");
    assert_eq!(r.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn nobody_deciding_is_approval_timed_out() {
    let mut r = rig().await;
    let waiting = call(&r.engine, "make");
    requested(&mut r.events).await;
    // Paused after the request is stored; see queue_tests for why not
    // `start_paused`.
    tokio::time::pause();
    let reply = waiting.await.unwrap();
    tokio::time::resume();
    let e = reply.result.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ApprovalTimedOut);
    assert_eq!(
        e.to_string(),
        "nobody approved this call within 120s, so it was denied"
    );
    assert_eq!(r.runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn denials_never_trip_the_breaker() {
    let mut r = rig().await;
    // Distinct commands: the loop guard (before policy) would refuse repeats.
    for i in 0..7 {
        let waiting = call(&r.engine, &format!("make t{i}"));
        let (id, _) = requested(&mut r.events).await;
        r.approvals.deny(id, None).await.unwrap();
        assert_eq!(
            waiting.await.unwrap().result.unwrap_err().kind(),
            ErrorKind::Denied
        );
    }
    let waiting = call(&r.engine, "make all");
    let (id, _) = requested(&mut r.events).await;
    r.approvals.approve(id, None).await.unwrap();
    assert!(
        waiting.await.unwrap().result.is_ok(),
        "breaker still closed"
    );
}

#[tokio::test]
async fn always_allow_lets_calls_in_scope_run_without_asking() {
    let mut r = rig().await;
    let waiting = call(&r.engine, "make test");
    let (id, _) = requested(&mut r.events).await;
    let d = r
        .approvals
        .approve(id, Some("/command=make *"))
        .await
        .unwrap();
    let rule = d.rule.unwrap();
    assert!(waiting.await.unwrap().result.is_ok());
    // In scope: runs at once, and the note names the rule.
    let reply = call(&r.engine, "make lint").await.unwrap();
    assert!(reply.result.is_ok());
    let note = &reply
        .notes
        .iter()
        .find(|(s, _)| s.as_str() == "policy")
        .unwrap()
        .1;
    assert!(
        note.starts_with(&format!("allow: always-allow rule #{}", rule.id)),
        "{note}"
    );
    // Out of scope: asks again.
    let waiting = call(&r.engine, "cargo publish");
    let (id, _) = requested(&mut r.events).await;
    r.approvals.deny(id, None).await.unwrap();
    assert!(waiting.await.unwrap().result.is_err());
    // Revoked: asks again.
    r.approvals.revoke_rule(rule.id).await.unwrap();
    let waiting = call(&r.engine, "make docs");
    let (id, _) = requested(&mut r.events).await;
    r.approvals.deny(id, None).await.unwrap();
    assert!(waiting.await.unwrap().result.is_err());
    assert_eq!(r.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_policy_swap_to_deny_wins_over_a_pending_approval() {
    let mut r = rig().await;
    let waiting = call(&r.engine, "make");
    let (id, _) = requested(&mut r.events).await;
    let c = PolicyConfig {
        preset: Preset::ReadOnly,
        ..PolicyConfig::default()
    };
    assert_eq!(r.engine.policy().swap(c), 2);
    r.approvals.approve(id, None).await.unwrap();
    let e = waiting.await.unwrap().result.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PolicyDenied);
    assert!(e.to_string().contains("policy changed to version 2"), "{e}");
    assert_eq!(r.runs.load(Ordering::SeqCst), 0);
    assert_eq!(r.approvals.get(id).await.unwrap().policy_version, 1);
}

#[tokio::test]
async fn without_a_queue_ask_is_needs_approval() {
    let e = Engine::builder(Config::default()).build();
    let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).unwrap();
    let def =
        ToolDef::new(ToolName::new("shell_exec").unwrap(), "run", schema).with_risk(Risk::Critical);
    let runner: Arc<dyn Tool> =
        Arc::new(|_: Value, _: &CallContext| async { Ok(ToolResult::text("ran")) }.boxed());
    e.registry().register(def, runner).unwrap();
    assert!(e.approvals().is_none());
    let err = e
        .call(&session(), "shell_exec", json!({}))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NeedsApproval);
}
