//! Every call and approval has a live owner: a client that disconnects or
//! cancels takes its call with it, its pending approval is closed as
//! `cancelled` and can no longer be approved, the tool never runs, and the
//! call still ends in one audit row and one `call.finished` event. Raw line
//! clients on the real socket (and a raw HTTP client) of an in-process
//! daemon, each its own connection.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::broadcast;
use toolgate::approval::{ApprovalError, ApprovalStatus};
use toolgate::audit::{AuditLog, CallRow};
use toolgate::cancel::CancelReason;
use toolgate::events::Event;
use toolgate::wire::Outcome;

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::python::python;

/// How soon a cancelled call's pending approval must be closed: within a
/// second.
const AT_ONCE: Duration = Duration::from_secs(1);

/// Deadline for things that take no particular time (a failure, not a
/// measurement).
const SOON: Duration = Duration::from_secs(20);

/// The first event `pick` accepts, within `within`.
async fn until<T>(
    rx: &mut broadcast::Receiver<Event>,
    within: Duration,
    what: &str,
    mut pick: impl FnMut(&Event) -> Option<T>,
) -> T {
    tokio::time::timeout(within, async {
        loop {
            match rx.recv().await {
                Ok(e) => {
                    if let Some(t) = pick(&e) {
                        return t;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event stream ended: {e}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within {within:?}"))
}

/// Waits for the approval request of a call; returns (request id, call id).
async fn requested(rx: &mut broadcast::Receiver<Event>) -> (i64, u64) {
    until(rx, SOON, "approval request", |e| match e {
        Event::ApprovalRequested { id, call_id, .. } => Some((*id, *call_id)),
        _ => None,
    })
    .await
}

/// Waits (at most a second, in either order) for request `id` to be closed
/// and call `call_id` to finish; returns how each ended, and checks that no
/// second `call.finished` follows for the call.
async fn closed_and_finished(
    rx: &mut broadcast::Receiver<Event>,
    id: i64,
    call_id: u64,
) -> (ApprovalStatus, Outcome) {
    let (mut status, mut outcome) = (None, None);
    until(rx, AT_ONCE, "closing and call.finished", |e| {
        match e {
            Event::ApprovalDecided {
                id: i, status: s, ..
            } if *i == id => status = Some(*s),
            Event::CallFinished {
                call_id: c,
                outcome: o,
                ..
            } if *c == call_id => {
                assert!(outcome.is_none(), "one call.finished per call");
                outcome = Some(o.clone());
            }
            _ => {}
        }
        (status.is_some() && outcome.is_some()).then_some(())
    })
    .await;
    no_second_finish(rx, call_id);
    (status.unwrap(), outcome.unwrap())
}

/// Waits for call `call_id`'s `call.finished`; returns its outcome, and
/// checks no second one follows for it.
async fn finished(rx: &mut broadcast::Receiver<Event>, call_id: u64) -> Outcome {
    let outcome = until(rx, SOON, "call.finished", |e| match e {
        Event::CallFinished {
            call_id: c,
            outcome,
            ..
        } if *c == call_id => Some(outcome.clone()),
        _ => None,
    })
    .await;
    no_second_finish(rx, call_id);
    outcome
}

fn no_second_finish(rx: &mut broadcast::Receiver<Event>, call_id: u64) {
    let again = std::iter::from_fn(|| rx.try_recv().ok())
        .any(|e| matches!(e, Event::CallFinished { call_id: c, .. } if c == call_id));
    assert!(!again, "one call.finished per call");
}

fn cancelled(reason: CancelReason) -> (ApprovalStatus, Outcome) {
    (ApprovalStatus::Cancelled, Outcome::Cancelled { reason })
}

/// The audit rows of call `call_id` once the daemon has stopped.
async fn rows_of(dir: &tempfile::TempDir, call_id: u64) -> Vec<CallRow> {
    let log = AuditLog::open(&dir.path().join("data/audit.db"))
        .await
        .unwrap();
    log.recent_calls(1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.call_id == i64::try_from(call_id).unwrap())
        .collect()
}

/// Checks the one audit row of a cancelled call.
fn assert_cancelled_row(rows: &[CallRow], reason: &str) {
    assert_eq!(rows.len(), 1, "exactly one row: {rows:?}");
    let r = &rows[0];
    assert_eq!(r.outcome, "cancelled", "{r:?}");
    assert_eq!(r.error_kind.as_deref(), Some("cancelled"));
    assert!(
        r.error_message
            .as_deref()
            .is_some_and(|m| m.contains(reason)),
        "{r:?}"
    );
}

fn call_request(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

fn cancelled_notification(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "user pressed stop"}})
}

/// The approval API's answer to a late approval.
async fn approve_fails_as_cancelled(d: &TestDaemon, id: i64) {
    let e = d
        .engine
        .approvals()
        .unwrap()
        .approve(id, None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ApprovalError::AlreadyDecided {
                status: ApprovalStatus::Cancelled,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("approval request #{id} is already cancelled")
    );
}

// The orphaned approval: a request whose agent disconnected is closed as
// cancelled. Before the fix it stayed pending (waiting) and approving it
// ran the command for nobody.
#[tokio::test]
async fn a_risky_call_whose_client_disconnects_is_cancelled_and_never_runs() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let marker = d.root().join("ran-for-nobody");
    let mut agent = d.raw().await;
    agent.initialize().await;
    agent
        .send_json(call_request(
            1,
            "shell_exec",
            json!({"command": format!("touch {}", marker.display())}),
        ))
        .await;
    let (id, call_id) = requested(&mut events).await;
    drop(agent);
    assert_eq!(
        closed_and_finished(&mut events, id, call_id).await,
        cancelled(CancelReason::ClientDisconnected)
    );
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    approve_fails_as_cancelled(&d, id).await;
    let stored = d.engine.approvals().unwrap().get(id).await.unwrap();
    assert_eq!(stored.status, ApprovalStatus::Cancelled);
    let dir = d.stop().await;
    assert!(!marker.exists(), "the tool never ran");
    assert_cancelled_row(&rows_of(&dir, call_id).await, "the client disconnected");
}

#[tokio::test]
async fn notifications_cancelled_closes_the_approval_and_the_connection_keeps_working() {
    let d = TestDaemon::start("").await;
    std::fs::write(d.root().join("a.txt"), "still here").unwrap();
    let mut events = d.engine.subscribe();
    let marker = d.root().join("cancelled-by-client");
    let mut agent = d.raw().await;
    agent.initialize().await;
    agent
        .send_json(call_request(
            1,
            "shell_exec",
            json!({"command": format!("touch {}", marker.display())}),
        ))
        .await;
    let (id, call_id) = requested(&mut events).await;
    agent.send_json(cancelled_notification(1)).await;
    assert_eq!(
        closed_and_finished(&mut events, id, call_id).await,
        cancelled(CancelReason::ClientCancelled)
    );
    approve_fails_as_cancelled(&d, id).await;
    // MCP: no response for the cancelled request; the next line is the
    // reply to the next request, and calls still work.
    let pong = agent.request(2, "ping", json!({})).await;
    assert_eq!(pong["id"], 2, "{pong}");
    let r = agent.call(3, "fs_read", json!({"path": "a.txt"})).await;
    assert_eq!(r["result"]["content"][0]["text"], "still here", "{r}");
    drop(agent);
    let dir = d.stop().await;
    assert!(!marker.exists(), "the tool never ran");
    assert_cancelled_row(&rows_of(&dir, call_id).await, "the client cancelled it");
}

/// The pid `sh` wrote to `file`, once it is there.
async fn pid_in(file: &std::path::Path) -> i32 {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the command never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

#[tokio::test]
async fn a_running_command_cancelled_by_its_client_is_killed_and_audited() {
    let d = TestDaemon::start("[tools.shell_exec]\npolicy = \"allow\"\n").await;
    let mut events = d.engine.subscribe();
    let pidfile = d.root().join("sleep.pid");
    let mut agent = d.raw().await;
    agent.initialize().await;
    let command = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    agent
        .send_json(call_request(1, "shell_exec", json!({"command": command})))
        .await;
    let call_id = until(&mut events, SOON, "call.received", |e| match e {
        Event::CallReceived { call_id, .. } => Some(*call_id),
        _ => None,
    })
    .await;
    let sleeper = pid_in(&pidfile).await;
    assert!(!is_gone(sleeper));
    agent.send_json(cancelled_notification(1)).await;
    assert_eq!(
        finished(&mut events, call_id).await,
        Outcome::Cancelled {
            reason: CancelReason::ClientCancelled
        }
    );
    let deadline = tokio::time::Instant::now() + AT_ONCE;
    while !is_gone(sleeper) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the command's process group outlived its call"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(agent.request(2, "ping", json!({})).await["id"], 2);
    drop(agent);
    let dir = d.stop().await;
    let rows = rows_of(&dir, call_id).await;
    assert_cancelled_row(&rows, "the client cancelled it");
    assert_eq!(rows[0].decision, "allowed", "the tool did run");
}

/// A raw HTTP/1.1 POST to the MCP endpoint on a connection of its own,
/// left open; the caller drops it to disconnect.
async fn raw_post(d: &TestDaemon, session: &str, body: &Value) -> tokio::net::TcpStream {
    let (url, token) = &d.http;
    let host = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut s = tokio::net::TcpStream::connect(&host).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    s
}

async fn http_session(d: &TestDaemon) -> String {
    let (url, token) = &d.http;
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-http", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.headers()["mcp-session-id"].to_str().unwrap().to_owned()
}

// A call whose HTTP client went away (the server drops its handler) is
// cancelled and still audited; before the fix it left no row.
#[tokio::test]
async fn an_http_call_whose_client_drops_the_connection_is_cancelled_and_audited() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let marker = d.root().join("http-nobody");
    let session = http_session(&d).await;
    let conn = raw_post(
        &d,
        &session,
        &call_request(
            1,
            "shell_exec",
            json!({"command": format!("touch {}", marker.display())}),
        ),
    )
    .await;
    let (id, call_id) = requested(&mut events).await;
    drop(conn);
    assert_eq!(
        closed_and_finished(&mut events, id, call_id).await,
        cancelled(CancelReason::ClientDisconnected)
    );
    approve_fails_as_cancelled(&d, id).await;
    let dir = d.stop().await;
    assert!(!marker.exists());
    assert_cancelled_row(&rows_of(&dir, call_id).await, "the client disconnected");
}

#[tokio::test]
async fn deleting_an_http_session_cancels_its_calls() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let session = http_session(&d).await;
    let (url, token) = d.http.clone();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = client
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &session)
        .json(&call_request(1, "shell_exec", json!({"command": "true"})))
        .send();
    let post = tokio::spawn(async move { post.await.unwrap().json::<Value>().await.unwrap() });
    let (id, call_id) = requested(&mut events).await;
    let deleted = client
        .delete(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(
        closed_and_finished(&mut events, id, call_id).await,
        cancelled(CancelReason::ClientDisconnected)
    );
    // The POST still gets its answer: the call was cancelled.
    let reply = tokio::time::timeout(SOON, post).await.unwrap().unwrap();
    assert_eq!(
        reply["result"]["_meta"]["toolgate/error"]["kind"], "cancelled",
        "{reply}"
    );
    d.stop().await;
}

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

/// Whether process `pid` is gone, waiting at most `within`.
async fn exits_within(pid: i32, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while !is_gone(pid) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

// The orphaned approval as a user meets it: an MCP client built on the
// official Python SDK reaches toolgate through `toolgate mcp-bridge` and
// dies while its call waits for approval. The bridge must go with it, so
// the daemon sees the hang-up; before, the bridge waited on for a reply
// nobody would read and the request stayed pending.
#[tokio::test]
async fn an_mcp_client_that_dies_behind_the_bridge_takes_its_pending_call_with_it() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let marker = d.root().join("ran-after-the-client-died");
    let mut client = tokio::process::Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/risky_client.py"
        ))
        .arg(TOOLGATE)
        .arg(&d.socket)
        .arg(format!("touch {}", marker.display()))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (id, call_id, bridge) = until(&mut events, SOON, "approval request", |e| match e {
        Event::ApprovalRequested {
            id,
            call_id,
            caller,
            ..
        } => Some((*id, *call_id, caller.clone())),
        _ => None,
    })
    .await;
    // The caller is the bridge process (its peer pid on the socket).
    let bridge: i32 = bridge.pid.unwrap_or_else(|| panic!("no pid in {bridge:?}"));
    client.kill().await.unwrap();
    assert_eq!(
        closed_and_finished(&mut events, id, call_id).await,
        cancelled(CancelReason::ClientDisconnected)
    );
    approve_fails_as_cancelled(&d, id).await;
    assert!(
        exits_within(bridge, SOON).await,
        "the bridge outlived its client"
    );
    let dir = d.stop().await;
    assert!(!marker.exists(), "the tool never ran");
    assert_cancelled_row(&rows_of(&dir, call_id).await, "the client disconnected");
}

// A half-closed client (what `toolgate mcp-bridge` does when its stdin
// ends) still wants its replies: its call runs to the end and is answered.
#[tokio::test]
async fn a_half_closed_client_still_gets_its_reply() {
    let d = TestDaemon::start("").await;
    std::fs::write(d.root().join("a.txt"), "after the half-close").unwrap();
    let mut agent = Raw::connect(&d.socket).await;
    agent.initialize().await;
    agent
        .send_json(call_request(1, "fs_read", json!({"path": "a.txt"})))
        .await;
    agent.wr.shutdown().await.unwrap();
    let r = agent.recv().await.expect("the reply arrives");
    assert_eq!(r["result"]["content"][0]["text"], "after the half-close");
    assert!(agent.recv().await.is_none(), "then the daemon closes");
    d.stop().await;
}
