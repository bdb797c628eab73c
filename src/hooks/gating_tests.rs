use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::config::Config;
use crate::context::Caller;
use crate::guard::path::PathRoots;
use crate::hooks::call::Phase;
use crate::pipeline::guards::GuardConfig;

const RULES: &str = r#"
[[policy.rules]]
tool = "shell_exec"
arg = "command"
regex = '^curl '
verdict = "deny"
reason = "no curl"

[[policy.rules]]
tool = "shell_exec"
arg = "command"
regex = '^ls -la$'
verdict = "allow"
"#;

/// An engine with `RULES`, `dir` as its root and no approval queue.
fn engine(dir: &std::path::Path) -> Engine {
    let config = Config::parse(RULES, std::path::Path::new("test.toml")).unwrap();
    let roots = PathRoots::new(&[dir.to_owned()]).unwrap();
    Engine::builder(config)
        .guards(GuardConfig {
            roots: Arc::new(roots),
            ..GuardConfig::default()
        })
        .build()
}

fn bash(phase: Phase, command: &str, key: &str) -> HookCall {
    HookCall {
        agent: HookAgent::ClaudeCode,
        phase,
        session: "s1".into(),
        call_key: key.into(),
        tool: "Bash".into(),
        input: json!({"command": command, "description": "d"}),
        cwd: None,
        ended: None,
    }
}

fn conn() -> Session {
    Session::new("conn", Caller::via("socket"))
}

async fn ask(engine: &Engine, command: &str, key: &str) -> Answer {
    let root = Cancel::new();
    before(
        engine,
        &conn(),
        bash(Phase::Before, command, key),
        &Cancel::new(),
        &root,
    )
    .await
}

#[tokio::test]
async fn a_bash_call_is_judged_like_shell_exec_and_named_as_the_agents() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let denied = ask(&engine, "curl https://example.com", "k1").await;
    assert_eq!(denied.decision, Decision::Deny, "{denied:?}");
    assert!(denied.reason.contains("no curl"), "{denied:?}");
    assert!(
        denied
            .reason
            .contains("Claude Code · Bash is judged as `shell_exec`"),
        "{denied:?}"
    );
    assert!(denied.call_id.is_some());
    // Not in the registry: no agent lists it or calls it by name.
    assert!(
        engine
            .registry()
            .snapshot()
            .get("claude-code__Bash")
            .is_none()
    );
    // The console finds its definition under the name people see.
    let def = engine
        .hook_gates()
        .def_shown_as("Claude Code · Bash")
        .unwrap();
    assert_eq!(def.name.as_str(), "claude-code__Bash");
    assert!(def.guards.iter().any(|g| g.arg == "command"), "{def:?}");
}

#[tokio::test]
async fn without_an_approver_a_risky_call_is_handed_back_to_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let answer = ask(&engine, "rm -rf build", "k1").await;
    assert_eq!(answer.decision, Decision::Ask, "{answer:?}");
    assert!(answer.reason.contains("Claude Code asks you"), "{answer:?}");
}

#[tokio::test]
async fn an_allowed_call_waits_for_its_report_and_is_finished_by_it() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let mut events = engine.subscribe();
    let allowed = ask(&engine, "ls -la", "k1").await;
    assert_eq!(allowed.decision, Decision::Allow, "{allowed:?}");
    assert_eq!(engine.hook_gates().waiting(), 1);

    let mut report = bash(Phase::After, "ls -la", "k1");
    report.ended = Some(Ended::Ok {
        text: "total 0".into(),
        is_error: false,
    });
    let done = after(&engine, report.clone()).await;
    assert_eq!(done["recorded"], true, "{done}");
    assert_eq!(done["ok"], true, "{done}");
    assert_eq!(engine.hook_gates().waiting(), 0);
    // Reported twice: nothing waits any more.
    assert_eq!(after(&engine, report).await["recorded"], false);
    let mut finished = None;
    while let Ok(e) = events.try_recv() {
        if let crate::events::Event::CallFinished { tool, .. } = e {
            finished = Some(tool);
        }
    }
    assert_eq!(finished.as_deref(), Some("Claude Code · Bash"));
}

#[tokio::test]
async fn shutdown_ends_the_calls_that_wait_for_their_report() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    assert_eq!(ask(&engine, "ls -la", "k1").await.decision, Decision::Allow);
    assert_eq!(ask(&engine, "ls -la", "k2").await.decision, Decision::Allow);
    assert_eq!(engine.hook_gates().waiting(), 2);
    engine.hook_gates().close(CancelReason::Shutdown).await;
    assert_eq!(engine.hook_gates().waiting(), 0);
    let late = after(&engine, bash(Phase::After, "ls -la", "k1")).await;
    assert_eq!(late["recorded"], false, "{late}");
}

/// A coding agent re-runs its tests after every edit: the same command
/// eight times in a row is allowed (with a warning from the fifth), the
/// twelfth is refused, and the session is never halted, so the agent's
/// other tools go on.
#[tokio::test]
async fn an_agent_re_running_a_command_is_refused_late_and_never_halted() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    for i in 1..=11 {
        let a = ask(&engine, "ls -la", &format!("k{i}")).await;
        assert_eq!(a.decision, Decision::Allow, "call {i}: {a:?}");
    }
    let refused = ask(&engine, "ls -la", "k12").await;
    assert_eq!(refused.decision, Decision::Deny, "{refused:?}");
    assert!(refused.reason.contains("repeat"), "{refused:?}");
    for i in 13..=20 {
        let a = ask(&engine, "ls -la", &format!("k{i}")).await;
        assert_eq!(a.decision, Decision::Deny, "still the same call {i}: {a:?}");
    }
    let other = ask(&engine, "curl https://example.com", "k-other").await;
    assert!(other.reason.contains("no curl"), "not halted: {other:?}");
}
