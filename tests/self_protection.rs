//! Issue 13, item 7: toolgate protects itself from the tools it governs.
//! A governed call that would steer toolgate (`toolgate approve`), change
//! its config, data or runtime files, or read its tokens is refused before
//! policy, without asking anyone, with a reason naming the protected path;
//! control methods never answer on the agent socket or the agent's HTTP
//! endpoint; a decision records which process made it. Real daemon, real
//! sockets, raw JSON-RPC clients, the real `toolgate` binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolgate::config::Config;
use toolgate::events::Event;
use toolgate::mcp::{CONTROL_METHODS, ServerOptions};

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::{drain, types};

fn kind(reply: &Value) -> &str {
    reply["result"]["_meta"]["toolgate/error"]["kind"]
        .as_str()
        .unwrap_or("")
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or("")
}

/// A daemon whose file root is its whole temp dir, so its data dir
/// (`data/`), runtime dir (`run/`) and config file (`config.toml`) are all
/// inside the root: only self-protection stands between a tool and them.
async fn exposed_daemon() -> TestDaemon {
    TestDaemon::start_adjusted("", ServerOptions::default(), |c: &mut Config, dir| {
        let config = dir.join("config.toml");
        std::fs::write(&config, "").unwrap();
        c.path = Some(config);
        c.builtin.roots = vec![dir.to_owned()];
    })
    .await
}

fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

/// Sends one call and expects a refusal at once (a call waiting for a
/// person would run into the deadline).
async fn refused(c: &mut Raw, id: u64, tool: &str, args: Value) -> Value {
    let r = tokio::time::timeout(Duration::from_secs(10), c.call(id, tool, args))
        .await
        .expect("refused at once, not left waiting for a person");
    assert_eq!(kind(&r), "guard_denied", "{r}");
    r
}

fn assert_nobody_asked(d: &TestDaemon, events: &mut broadcast::Receiver<Event>) {
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    let seen = types(&drain(events));
    assert!(
        !seen.iter().any(|t| t == "approval_requested"),
        "nobody was asked: {seen:?}"
    );
}

#[tokio::test]
async fn a_shell_command_that_runs_toolgate_approve_is_refused_without_asking() {
    let d = exposed_daemon().await;
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;
    for (i, command) in [
        "toolgate approve 1",
        "/usr/bin/toolgate deny 2",
        "env toolgate rules --rm 3",
        "sh -c 'toolgate approve 1'",
    ]
    .into_iter()
    .enumerate()
    {
        let r = refused(
            &mut c,
            i as u64 + 1,
            "shell_exec",
            json!({"command": command}),
        )
        .await;
        assert!(text(&r).starts_with("argument `command` refused:"), "{r}");
        assert!(text(&r).contains("steers toolgate itself"), "{r}");
    }
    assert_nobody_asked(&d, &mut events);
    d.stop().await;
}

#[tokio::test]
async fn governed_writes_to_toolgates_files_and_reads_of_its_tokens_are_refused() {
    let d = exposed_daemon().await;
    let dir = d.dir.path().to_owned();
    // A relative symlink inside the root that leads into the runtime dir.
    std::os::unix::fs::symlink("run", dir.join("rt")).unwrap();
    let mut events = d.engine.subscribe();
    let mut c = d.raw().await;
    c.initialize().await;

    let data = real(&dir.join("data"));
    let r = refused(
        &mut c,
        1,
        "fs_write",
        json!({"path": dir.join("data/evil.txt"), "content": "x"}),
    )
    .await;
    assert!(
        text(&r).contains(&format!("data dir `{}`", data.display())),
        "{r}"
    );
    assert!(!dir.join("data/evil.txt").exists(), "nothing was written");

    let config = real(&dir.join("config.toml"));
    let r = refused(
        &mut c,
        2,
        "fs_write",
        json!({"path": "config.toml", "content": "[policy]\npreset = \"autonomous\"\n"}),
    )
    .await;
    assert!(
        text(&r).contains(&format!("config file `{}`", config.display())),
        "{r}"
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "",
        "config untouched"
    );

    let token = real(&dir.join("run/agent.sock.http"));
    for (id, path) in [(3, "rt/agent.sock.http"), (4, "run/agent.sock.http")] {
        let r = refused(&mut c, id, "fs_read", json!({"path": path})).await;
        assert!(text(&r).contains("sockets and tokens"), "{r}");
        assert!(
            text(&r).contains(&token.display().to_string()),
            "the reason names the token file: {r}"
        );
        assert!(!text(&r).contains(&d.http.1), "the token never leaks: {r}");
    }

    let r = refused(
        &mut c,
        5,
        "shell_exec",
        json!({"command": "ls", "cwd": "data"}),
    )
    .await;
    assert!(text(&r).starts_with("argument `cwd` refused:"), "{r}");
    assert_nobody_asked(&d, &mut events);

    // Ordinary work in the root still works, and toolgate's data may be read.
    let r = c
        .call(
            6,
            "fs_write",
            json!({"path": "root/ok.txt", "content": "fine"}),
        )
        .await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        std::fs::read_to_string(dir.join("root/ok.txt")).unwrap(),
        "fine"
    );
    let r = c.call(7, "fs_list", json!({"path": "data"})).await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    d.stop().await;
}

#[tokio::test]
async fn control_methods_are_unknown_on_the_agent_socket() {
    let d = TestDaemon::start("").await;
    // A pending approval that an agent would like to approve.
    let mut events = d.engine.subscribe();
    let mut asker = d.raw().await;
    asker.initialize().await;
    asker
        .send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "shell_exec", "arguments": {"command": "echo hi"}}}))
        .await;
    let pending = approval_id(&mut events).await;

    let mut agent = d.raw().await;
    agent.initialize().await;
    for (i, method) in CONTROL_METHODS.iter().enumerate() {
        let r = agent
            .request(
                10 + i as u64,
                method,
                json!({"id": pending, "tool": "shell_exec", "name": "x"}),
            )
            .await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
        assert!(r.get("result").is_none(), "{method}: {r}");
    }
    let still = d.engine.approvals().unwrap().pending();
    assert_eq!(still.len(), 1, "nothing was decided");
    assert_eq!(still[0].id, pending);
    d.engine
        .approvals()
        .unwrap()
        .deny(pending, None)
        .await
        .unwrap();
    d.stop().await;
}

#[tokio::test]
async fn control_methods_are_unknown_over_http_with_the_agent_token() {
    let d = TestDaemon::start("").await;
    let (url, token) = d.http.clone();
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = c
        .post(&url)
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    for (i, method) in CONTROL_METHODS.iter().enumerate() {
        let r = c
            .post(&url)
            .bearer_auth(&token)
            .header("mcp-session-id", &sid)
            .json(&json!({"jsonrpc": "2.0", "id": 10 + i, "method": method,
                          "params": {"id": 1, "tool": "fs_read", "name": "x"}}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(
            status == 403 || body["error"]["code"] == -32601,
            "{method}: HTTP {status} {body}"
        );
        assert!(body.get("result").is_none(), "{method}: {body}");
    }
    d.stop().await;
}

async fn approval_id(events: &mut broadcast::Receiver<Event>) -> i64 {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Event::ApprovalRequested { id, .. }) = events.recv().await {
                return id;
            }
        }
    })
    .await
    .expect("an approval request appears")
}

#[tokio::test]
async fn the_clis_decision_records_its_pid_and_executable() {
    let d = TestDaemon::start("").await;
    let mut events = d.engine.subscribe();
    let mut asker = d.raw().await;
    asker.initialize().await;
    asker
        .send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "shell_exec", "arguments": {"command": "echo decided"}}}))
        .await;
    let id = approval_id(&mut events).await;

    let exe = env!("CARGO_BIN_EXE_toolgate");
    let child = tokio::process::Command::new(exe)
        .args(["approve", &id.to_string(), "--socket"])
        .arg(&d.socket)
        .arg("--data-dir")
        .arg(d.dir.path().join("data"))
        .env_remove("TOOLGATE_SOCKET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().expect("the CLI runs");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the CLI finishes")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = format!("cli pid {pid} ({})", real(Path::new(exe)).display());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed["request"]["decided_by"],
        expected.as_str(),
        "{printed}"
    );
    let reply = loop {
        let v = asker.recv().await.expect("the approved call answers");
        if v["id"] == 1 {
            break v;
        }
    };
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let stored = d.engine.approvals().unwrap().recent(5).await.unwrap();
    let row = stored.iter().find(|r| r.id == id).expect("stored");
    assert_eq!(row.decided_by.as_deref(), Some(expected.as_str()));
    d.stop().await;
}
