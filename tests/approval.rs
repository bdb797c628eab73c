//! Human approval end to end: a real MCP client (rmcp, over the agent
//! socket) calls `shell_exec`; the test decides through the approval API,
//! as the UI and `toolgate approve` do; the client gets the outcome.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use toolgate::events::Event;

use crate::common::daemon::TestDaemon;
use crate::common::obj;

pub(crate) fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Starts a shell_exec call from a real client and returns the pending
/// request id plus the task that yields the client's result.
pub(crate) async fn ask(
    d: &TestDaemon,
    command: &str,
) -> (i64, tokio::task::JoinHandle<CallToolResult>) {
    let mut events = d.engine.subscribe();
    let stream = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    let client = ().serve(stream).await.unwrap();
    let args = obj(json!({"command": command}));
    let call = tokio::spawn(async move {
        let r = client
            .call_tool(CallToolRequestParams::new("shell_exec").with_arguments(args))
            .await
            .unwrap();
        let _ = client.cancel().await;
        r
    });
    let id = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Event::ApprovalRequested { id, tool, .. }) = events.recv().await {
                assert_eq!(tool, "shell_exec");
                return id;
            }
        }
    })
    .await
    .expect("an approval request appears");
    (id, call)
}

fn kind(r: &CallToolResult) -> Value {
    r.meta
        .as_ref()
        .and_then(|m| m.get("toolgate/error"))
        .map(|e| e["kind"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn approve_runs_the_call_and_the_client_gets_its_output() {
    let d = TestDaemon::start("").await;
    let (id, call) = ask(&d, "echo approved-by-a-person").await;
    let pending = d.engine.approvals().unwrap().pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, id);
    let started = Instant::now();
    d.engine
        .approvals()
        .unwrap()
        .approve(id, None)
        .await
        .unwrap();
    let r = call.await.unwrap();
    let latency = started.elapsed();
    eprintln!("approve → client reply: {latency:?}");
    assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
    assert!(
        text_of(&r).contains("approved-by-a-person"),
        "{}",
        text_of(&r)
    );
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    d.stop().await;
}

#[tokio::test]
async fn deny_passes_the_persons_reason_to_the_agent() {
    let d = TestDaemon::start("").await;
    let marker = d.root().join("should-not-exist");
    let (id, call) = ask(&d, &format!("touch {}", marker.display())).await;
    d.engine
        .approvals()
        .unwrap()
        .deny(id, Some("not on a Friday".into()))
        .await
        .unwrap();
    let r = call.await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(kind(&r), "denied");
    assert!(text_of(&r).contains("not on a Friday"), "{}", text_of(&r));
    assert!(!marker.exists(), "a denied call never runs");
    d.stop().await;
}

#[tokio::test]
async fn nobody_answering_is_a_timeout_deny_distinct_from_a_person_denying() {
    let d = TestDaemon::start("[policy]\napproval_timeout_s = 1\n").await;
    let marker = d.root().join("should-not-exist");
    let (_, call) = ask(&d, &format!("touch {}", marker.display())).await;
    let r = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("timed out in time")
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(kind(&r), "approval_timed_out");
    assert!(!marker.exists());
    // The breaker never counts approval denials.
    let b = d.engine.breaker().snapshot();
    assert!(b.iter().all(|b| b.failures == 0), "{b:?}");
    d.stop().await;
}
