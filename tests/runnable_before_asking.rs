//! Nobody is asked to approve a call that cannot run. Every check that can
//! refuse a call, defaults included, runs before the policy stage; the
//! refusal says which config key or flag fixes it. Real daemon, real agent
//! socket, raw JSON-RPC client.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate::mcp::ServerOptions;

use crate::common::daemon::TestDaemon;
use crate::common::{drain, types};

fn kind(reply: &Value) -> &str {
    reply["result"]["_meta"]["toolgate/error"]["kind"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test]
async fn shell_exec_without_roots_is_refused_at_once_with_the_fix() {
    let d = TestDaemon::start_adjusted("", ServerOptions::default(), |c, _| {
        c.builtin.roots.clear();
    })
    .await;
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    // Before the fix this call waited for a person (and, approved, failed).
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        c.call(1, "shell_exec", json!({"command": "echo hi"})),
    )
    .await
    .expect("refused at once, not left waiting for a person");
    assert_eq!(kind(&r), "guard_denied", "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.starts_with("argument `cwd` refused:"), "{text}");
    for fix in ["[builtin]", "roots = [", "config.toml", "--root"] {
        assert!(text.contains(fix), "the error names `{fix}`: {text}");
    }
    assert!(!text.contains("path ``"), "no empty path quoted: {text}");
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    let seen = types(&drain(&mut events));
    assert!(
        !seen.iter().any(|t| t == "approval_requested"),
        "nobody was asked: {seen:?}"
    );
    d.stop().await;
}

/// An agent's own tool only runs through `toolgate/gate`; a `tools/call`
/// of it can never run, so it is refused before policy would ask about a
/// critical one.
#[tokio::test]
async fn a_tools_call_of_an_agents_own_tool_is_refused_without_asking() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let mut agent = d.raw().await;
    agent.initialize().await;
    let reg = agent
        .request(
            1,
            "toolgate/register",
            json!({"agentId": "a1", "tools": [
            {"name": "wipe", "description": "Deletes everything.", "risk": "critical",
             "inputSchema": {"type": "object"}}]}),
        )
        .await;
    assert_eq!(reg["result"]["registered"], json!(["wipe"]), "{reg}");
    let r = tokio::time::timeout(Duration::from_secs(10), agent.call(2, "wipe", json!({})))
        .await
        .expect("refused at once, not left waiting for a person");
    assert_eq!(kind(&r), "tool_failed", "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("toolgate/gate"), "{text}");
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    let seen = types(&drain(&mut events));
    assert!(!seen.iter().any(|t| t == "approval_requested"), "{seen:?}");
    d.stop().await;
}
