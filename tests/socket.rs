//! The agent socket with real clients: rmcp's Rust client and raw line
//! clients over the real Unix socket of an in-process daemon.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Notify, mpsc};
use toolgate::audit::AuditLog;
use toolgate::mcp::ServerOptions;
use toolgate::tool::ToolResult;

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::{obj, register};

/// Registers `slow`, a tool that answers `answer` once the returned
/// `Notify` is notified.
fn register_slow(d: &TestDaemon, answer: &'static str) -> Arc<Notify> {
    let release = Arc::new(Notify::new());
    let r2 = release.clone();
    register(&d.engine, "slow", json!({"type": "object"}), move |_| {
        let r = r2.clone();
        async move {
            r.notified().await;
            Ok(ToolResult::text(answer))
        }
    });
    release
}

#[derive(Clone)]
struct Watcher(mpsc::UnboundedSender<()>);

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

fn text_of(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn rmcp_client_lists_calls_and_sees_tools_added_at_run_time() {
    let d = TestDaemon::start("").await;
    std::fs::write(d.root().join("a.txt"), "from the socket").unwrap();
    let (tx, mut changed) = mpsc::unbounded_channel();
    let stream = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    let client = Watcher(tx).serve(stream).await.unwrap();

    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["fs_list", "fs_read", "fs_write", "http_fetch", "shell_exec"]
    );

    let r = client
        .call_tool(
            CallToolRequestParams::new("fs_read").with_arguments(obj(json!({"path": "a.txt"}))),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    assert_eq!(text_of(&r), "from the socket");

    let bad = client
        .call_tool(
            CallToolRequestParams::new("fs_read")
                .with_arguments(obj(json!({"path": "../../etc/shadow"}))),
        )
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(
        text_of(&bad).contains("escapes the allowed roots"),
        "{}",
        text_of(&bad)
    );

    register(
        &d.engine,
        "late_tool",
        json!({"type": "object"}),
        |_| async { Ok(ToolResult::text("late")) },
    );
    tokio::time::timeout(Duration::from_secs(10), changed.recv())
        .await
        .expect("list_changed arrives")
        .unwrap();
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"late_tool".to_owned()), "{names:?}");
    let r = client
        .call_tool(CallToolRequestParams::new("late_tool"))
        .await
        .unwrap();
    assert_eq!(text_of(&r), "late");
    client.cancel().await.unwrap();
    d.stop().await;
}

#[tokio::test]
async fn bad_input_gets_specific_errors_and_the_connection_keeps_working() {
    let d = TestDaemon::start("").await;
    let mut c = d.raw().await;
    c.initialize().await;
    let cases: [(&[u8], i64, &str); 7] = [
        (b"{oops", -32700, "invalid JSON"),
        (b"\xff\xfe{}", -32700, "not valid UTF-8"),
        (
            br#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#,
            -32600,
            "jsonrpc must be \"2.0\"",
        ),
        (
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            -32600,
            "batch",
        ),
        (
            br#"{"jsonrpc":"2.0","id":6,"method":"resources/list"}"#,
            -32601,
            "method `resources/list` not found",
        ),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            -32602,
            "missing field `name`",
        ),
        (
            br#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":3}}"#,
            -32602,
            "invalid params",
        ),
    ];
    for (frame, code, words) in cases {
        c.send(frame).await;
        let r = c.recv().await.unwrap();
        assert_eq!(
            r["error"]["code"],
            code,
            "{}: {r}",
            String::from_utf8_lossy(frame)
        );
        assert!(
            r["error"]["message"].as_str().unwrap().contains(words),
            "{r}"
        );
    }
    assert_eq!(c.request(9, "ping", json!({})).await["result"], json!({}));
    d.stop().await;
}

#[tokio::test]
async fn an_oversized_frame_is_refused_and_the_next_one_served() {
    let d = TestDaemon::start_with(
        "",
        ServerOptions {
            max_frame: 1024 * 1024,
            ..ServerOptions::default()
        },
    )
    .await;
    let mut c = d.raw().await;
    let mut big = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 3 * 1024 * 1024));
    big.extend_from_slice(br#""}}"#);
    c.send(&big).await;
    let r = c.recv().await.unwrap();
    assert_eq!(r["error"]["code"], -32600);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the 1048576 byte limit"),
        "{r}"
    );
    assert_eq!(c.request(2, "ping", json!({})).await["result"], json!({}));
    d.stop().await;
}

// A client that only closes its writing side (as `toolgate mcp-bridge`
// does when its stdin ends) still wants its replies: its call runs on. One
// that hangs up altogether has its calls cancelled (tests/lifecycle.rs).
#[tokio::test]
async fn a_client_that_half_closes_mid_call_affects_nobody_and_its_call_is_audited() {
    let d = TestDaemon::start("").await;
    let release = register_slow(&d, "done");
    let mut leaver = d.raw().await;
    leaver.initialize().await;
    leaver
        .send_json(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}}),
        )
        .await;
    leaver.wr.shutdown().await.unwrap();
    let mut other = d.raw().await;
    other.initialize().await;
    assert_eq!(
        other.request(2, "ping", json!({})).await["result"],
        json!({})
    );
    release.notify_one();
    let r = leaver.recv().await.expect("the reply still arrives");
    assert_eq!(r["result"]["content"][0]["text"], "done");
    drop(leaver);
    let dir = d.stop().await;
    let rows = AuditLog::open(&dir.path().join("data/audit.db"))
        .await
        .unwrap()
        .recent_calls(10)
        .await
        .unwrap();
    assert!(
        rows.iter().any(|r| r.tool == "slow" && r.outcome == "ok"),
        "{rows:?}"
    );
}

#[tokio::test]
async fn a_client_that_hangs_up_mid_call_has_it_cancelled_and_audited() {
    let d = TestDaemon::start("").await;
    let _never = register_slow(&d, "never");
    let mut events = d.engine.subscribe();
    let mut leaver = d.raw().await;
    leaver.initialize().await;
    leaver
        .send_json(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}}),
        )
        .await;
    assert_eq!(leaver.request(2, "ping", json!({})).await["id"], 2);
    drop(leaver);
    let outcome = tokio::time::timeout(Duration::from_secs(1), async {
        loop {
            if let Ok(toolgate::events::Event::CallFinished { outcome, .. }) = events.recv().await {
                return outcome;
            }
        }
    })
    .await
    .expect("the call ends as soon as its client is gone");
    assert_eq!(
        serde_json::to_value(&outcome).unwrap(),
        json!({"status": "cancelled", "reason": "client_disconnected"})
    );
    let dir = d.stop().await;
    let rows = AuditLog::open(&dir.path().join("data/audit.db"))
        .await
        .unwrap()
        .recent_calls(10)
        .await
        .unwrap();
    let slow: Vec<_> = rows.iter().filter(|r| r.tool == "slow").collect();
    assert_eq!(slow.len(), 1, "{rows:?}");
    assert_eq!(slow[0].outcome, "cancelled");
}

#[tokio::test]
async fn a_client_that_never_reads_is_dropped_alone() {
    let d = TestDaemon::start_with(
        "",
        ServerOptions {
            write_timeout: Duration::from_millis(200),
            ..ServerOptions::default()
        },
    )
    .await;
    let flood = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    let (_rd, mut wr) = flood.into_split();
    let writer = tokio::spawn(async move {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"................................................................................................................................................................................................................................................................"}}"#;
        for _ in 0..200_000 {
            if wr.write_all(ping).await.is_err() || wr.write_all(b"\n").await.is_err() {
                return true; // the daemon closed the connection
            }
        }
        false
    });
    let mut other = d.raw().await;
    other.initialize().await;
    assert_eq!(
        other.request(2, "ping", json!({})).await["result"],
        json!({})
    );
    let closed = tokio::time::timeout(Duration::from_secs(60), writer)
        .await
        .expect("flood ends")
        .unwrap();
    assert!(closed, "the daemon must drop a client that never reads");
    assert_eq!(
        other.request(3, "ping", json!({})).await["result"],
        json!({})
    );
    d.stop().await;
}

#[tokio::test]
async fn two_hundred_concurrent_clients_are_all_served() {
    let d = TestDaemon::start("").await;
    std::fs::write(d.root().join("a.txt"), "shared").unwrap();
    let socket = d.socket.clone();
    let clients: Vec<_> = (0..200)
        .map(|i| {
            let socket = socket.clone();
            tokio::spawn(async move {
                let mut c = Raw::connect(&socket).await;
                c.initialize().await;
                let r = c
                    .call(
                        1,
                        "fs_read",
                        json!({"path": "a.txt", "max_bytes": i + 1000}),
                    )
                    .await;
                r["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
        })
        .collect();
    for c in clients {
        assert_eq!(c.await.unwrap(), "shared");
    }
    d.stop().await;
}

/// An agent that cancels the tool it was running (an asyncio task
/// cancelled mid-call) reports `cancelled`: the call ends cancelled, not
/// as a tool failure the breaker would count.
#[tokio::test]
async fn gate_mode_report_of_a_cancelled_run_ends_the_call_cancelled() {
    let d = TestDaemon::start("").await;
    let mut agent = d.raw().await;
    agent.initialize().await;
    agent
        .request(
            1,
            "toolgate/register",
            json!({"agentId": "py-cancel", "tools": [
            {"name": "long_job", "inputSchema": {"type": "object"}}]}),
        )
        .await;
    let g = agent
        .request(
            2,
            "toolgate/gate",
            json!({"name": "long_job", "arguments": {}}),
        )
        .await;
    let gate_id = g["result"]["gateId"].as_str().expect("allowed").to_owned();
    let rep = agent
        .request(
            3,
            "toolgate/report",
            json!({"gateId": gate_id, "error": {"kind": "cancelled", "message": "task cancelled"}}),
        )
        .await;
    assert_eq!(rep["result"]["isError"], true, "{rep}");
    assert_eq!(
        rep["result"]["_meta"]["toolgate/error"]["kind"], "cancelled",
        "{rep}"
    );
    d.stop().await;
}

#[tokio::test]
async fn gate_mode_runs_the_pipeline_around_a_tool_the_agent_runs() {
    let d = TestDaemon::start("").await;
    let mut agent = d.raw().await;
    agent.initialize().await;
    let reg = agent
        .request(1, "toolgate/register", json!({"agentId": "py-agent", "tools": [
            {"name": "lookup", "description": "Looks a thing up.", "inputSchema":
                {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}},
            {"name": "wipe", "description": "Deletes everything.", "risk": "critical", "inputSchema": {"type": "object"}}
        ]}))
        .await;
    assert_eq!(reg["result"]["registered"], json!(["lookup", "wipe"]));
    let listed: Vec<Value> = agent.request(2, "tools/list", json!({})).await["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(listed.iter().any(|t| t["name"] == "lookup"));

    let g = agent
        .request(
            3,
            "toolgate/gate",
            json!({"name": "lookup", "arguments": {"count": "3"}}),
        )
        .await;
    assert_eq!(g["result"]["decision"], "allow", "{g}");
    assert_eq!(
        g["result"]["arguments"],
        json!({"count": 3}),
        "arguments come back cast"
    );
    let gate_id = g["result"]["gateId"].as_str().unwrap().to_owned();
    let rep = agent
        .request(
            4,
            "toolgate/report",
            json!({"gateId": gate_id, "result": {
            "content": [{"type": "text", "text": "found 3"}],
            "structuredContent": {"found": 3}}}),
        )
        .await;
    assert_eq!(rep["result"]["content"][0]["text"], "found 3");
    assert_eq!(rep["result"]["isError"], false);
    assert_eq!(
        rep["result"]["structuredContent"],
        json!({"found": 3}),
        "a report's structured content reaches the agent"
    );

    // A critical agent tool waits for a person, like any other tool.
    let mut events = d.engine.subscribe();
    agent
        .send_json(json!({"jsonrpc": "2.0", "id": 5, "method": "toolgate/gate",
                          "params": {"name": "wipe", "arguments": {}}}))
        .await;
    let id = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(toolgate::events::Event::ApprovalRequested { id, .. }) = events.recv().await {
                return id;
            }
        }
    })
    .await
    .expect("approval requested");
    d.engine
        .approvals()
        .unwrap()
        .deny(id, Some("never".into()))
        .await
        .unwrap();
    let denied = loop {
        let v = agent.recv().await.expect("gate reply");
        if v["id"] == 5 {
            break v;
        }
    };
    assert_eq!(denied["result"]["decision"], "deny");
    assert_eq!(denied["result"]["error"]["kind"], "denied");

    let bad = agent
        .request(
            6,
            "toolgate/gate",
            json!({"name": "lookup", "arguments": {"count": "many"}}),
        )
        .await;
    assert_eq!(bad["result"]["error"]["kind"], "invalid_args");

    let again = agent
        .request(
            7,
            "toolgate/report",
            json!({"gateId": gate_id, "result": {"content": []}}),
        )
        .await;
    assert_eq!(again["error"]["code"], -32602, "a gate is reported once");

    // Another client cannot run the agent's tool or gate it.
    let mut other = d.raw().await;
    other.initialize().await;
    let r = other.call(8, "lookup", json!({"count": 1})).await;
    assert_eq!(r["result"]["isError"], true);
    let g = other
        .request(
            9,
            "toolgate/gate",
            json!({"name": "lookup", "arguments": {"count": 1}}),
        )
        .await;
    assert_eq!(g["error"]["code"], -32602);

    // The agent leaves: its tools go with it.
    drop(agent);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while d.engine.registry().snapshot().get("lookup").is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "agent tools removed on disconnect"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let dir = d.stop().await;
    let rows = AuditLog::open(&dir.path().join("data/audit.db"))
        .await
        .unwrap()
        .recent_calls(20)
        .await
        .unwrap();
    let gated: Vec<_> = rows
        .iter()
        .filter(|r| r.tool == "lookup" && r.outcome == "ok")
        .collect();
    assert_eq!(gated.len(), 1, "one audit row for gate + report");
    assert_eq!(gated[0].args, r#"{"count":3}"#);
}

#[tokio::test]
async fn peers_with_another_uid_are_refused() {
    if rustix::process::geteuid().as_raw() != 0 {
        eprintln!("skipped: needs root to run a client as another user (CI runs as root)");
        return;
    }
    let d = TestDaemon::start("").await;
    // Open the file-system permissions so only SO_PEERCRED stands between
    // the other user and the daemon.
    use std::os::unix::fs::PermissionsExt;
    for p in [
        d.dir.path().to_owned(),
        d.socket.parent().unwrap().to_owned(),
    ] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\n\
         try:\n    s.sendall(b'{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}\\n')\n    \
         print('reply' if s.recv(4096) else 'closed')\n\
         except OSError:\n    print('closed')",
        d.socket.display().to_string()
    );
    // Debian's own python3, not the tests' venv (crate::common::python):
    // this client runs as `nobody`, who may not be able to read a venv in
    // a private checkout, and it needs nothing beyond the standard library.
    let out = tokio::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            &script,
        ])
        .output()
        .await
        .expect("setpriv and python3 are installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        "closed",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The owner is still served.
    let mut me = d.raw().await;
    assert_eq!(me.request(1, "ping", json!({})).await["result"], json!({}));
    d.stop().await;
}

#[tokio::test]
async fn shutdown_finishes_in_flight_calls_and_removes_the_socket() {
    let d = TestDaemon::start("").await;
    let release = register_slow(&d, "finished");
    let mut c = d.raw().await;
    c.initialize().await;
    c.send_json(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}}),
    )
    .await;
    // Make sure the call is in flight before shutting down.
    assert_eq!(c.request(2, "ping", json!({})).await["id"], 2);
    let socket = d.socket.clone();
    d.shutdown.cancel();
    release.notify_one();
    let r = c.recv().await.expect("the in-flight call is answered");
    assert_eq!(r["result"]["content"][0]["text"], "finished");
    tokio::time::timeout(Duration::from_secs(20), d.handle)
        .await
        .unwrap()
        .unwrap();
    assert!(!socket.exists());
}
