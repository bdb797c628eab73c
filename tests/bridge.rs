//! `toolgate serve` and `toolgate mcp-bridge` as real processes, with the
//! official Python MCP SDK as the client.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::common::daemon::TestDaemon;
use crate::common::python::{python_str, run_client};

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

#[tokio::test]
async fn the_python_sdk_works_through_the_stdio_bridge() {
    let d = TestDaemon::start("").await;
    std::fs::write(d.root().join("a.txt"), "via python").unwrap();
    let seen: Value = run_client(
        "bridge_client.py",
        &[TOOLGATE.as_ref(), d.socket.as_os_str()],
    )
    .await;
    assert_eq!(seen["server"], "toolgate");
    assert!(
        seen["instructions"]
            .as_str()
            .unwrap()
            .contains("untrusted-output")
    );
    assert_eq!(
        seen["tools"],
        serde_json::json!(["fs_list", "fs_read", "fs_write", "http_fetch", "shell_exec"])
    );
    assert_eq!(seen["text"], "via python");
    assert_eq!(seen["is_error"], false);
    assert_eq!(seen["bad_is_error"], true);
    assert!(
        seen["bad_text"]
            .as_str()
            .unwrap()
            .contains("escapes the allowed roots")
    );
    d.stop().await;
}

#[tokio::test]
async fn the_bridge_says_clearly_when_no_daemon_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(TOOLGATE)
        .args(["mcp-bridge", "--socket"])
        .arg(dir.path().join("none.sock"))
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("no toolgate daemon is listening on") && err.contains("toolgate serve"),
        "{err}"
    );
}

/// Signals the daemon and asserts it exits cleanly.
async fn stop(daemon: &mut tokio::process::Child, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(daemon.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), daemon.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// Starts `toolgate serve` and waits for its ready line.
async fn serve(dir: &std::path::Path) -> (tokio::process::Child, String) {
    let mut child = Command::new(TOOLGATE)
        .args(["serve", "--socket"])
        .arg(dir.join("agent.sock"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("ready line")
        .unwrap()
        .unwrap_or_default();
    (child, first)
}

#[tokio::test]
async fn serve_refuses_a_second_daemon_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let (mut first, ready) = serve(dir.path()).await;
    assert!(ready.contains("serving MCP on unix:"), "{ready}");
    let second = Command::new(TOOLGATE)
        .args(["serve", "--socket"])
        .arg(dir.path().join("agent.sock"))
        .arg("--data-dir")
        .arg(dir.path().join("data2"))
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .output()
        .await
        .unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("another toolgate is already serving")
    );

    let pid = rustix::process::Pid::from_raw(first.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), first.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        !dir.path().join("agent.sock").exists(),
        "socket removed on shutdown"
    );
}

#[tokio::test]
async fn a_bad_config_stops_serve_with_one_line_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[pipeline]\ntimout_ms = 5\n",
    )
    .unwrap();
    let out = Command::new(TOOLGATE)
        .args(["serve", "--socket"])
        .arg(dir.path().join("agent.sock"))
        .arg("--config")
        .arg(dir.path().join("config.toml"))
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("timout_ms") && err.contains("line 2"), "{err}");
    assert!(!dir.path().join("agent.sock").exists());
}

async fn run_cli(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(TOOLGATE)
        .args(args)
        .arg("--socket")
        .arg(dir.join("agent.sock"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .output()
        .await
        .unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        s(&out.stdout),
        s(&out.stderr),
    )
}

#[tokio::test]
async fn the_cli_talks_to_the_running_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), "daemon data").unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[builtin]\nroots = [{:?}]\n", root.display().to_string()),
    )
    .unwrap();

    let (code, _, err) = run_cli(dir.path(), &["breakers"]).await;
    assert_eq!(code, 2);
    assert!(err.contains("start `toolgate serve`"), "{err}");

    let (mut daemon, _) = serve(dir.path()).await;
    let (code, out, _) = run_cli(
        dir.path(),
        &["call", "fs_read", "--args", r#"{"path":"a.txt"}"#],
    )
    .await;
    assert_eq!((code, out.trim()), (0, "daemon data"));
    let (code, _, err) = run_cli(
        dir.path(),
        &["call", "fs_read", "--args", r#"{"path":"/etc/passwd"}"#],
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("(guard_denied)"), "{err}");
    let (code, out, _) = run_cli(dir.path(), &["tools", "--json"]).await;
    assert_eq!(code, 0);
    let tools: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tools[0]["name"], "fs_list");
    assert_eq!(tools[0]["source"], "builtin");
    let (code, out, _) = run_cli(dir.path(), &["breakers", "--json"]).await;
    assert_eq!(code, 0);
    let b: Value = serde_json::from_str(&out).unwrap();
    assert!(
        b.as_array()
            .unwrap()
            .iter()
            .any(|b| b["tool"] == "fs_read" && b["state"] == "closed"),
        "{b}"
    );
    let (code, out, _) = run_cli(dir.path(), &["audit", "--json"]).await;
    assert_eq!(code, 0);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(rows[0]["outcome"], "ok");
    assert_eq!(rows[1]["error_kind"], "guard_denied");
    assert!(
        rows[0]["caller"]
            .as_str()
            .unwrap()
            .contains("\"via\":\"socket\""),
        "went through the daemon"
    );

    stop(&mut daemon, rustix::process::Signal::INT).await;
}

/// A config with a file root, written to `dir/config.toml`.
fn config_with_root(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let text = format!(
        "[builtin]\nroots = [{:?}]\n{extra}",
        root.display().to_string()
    );
    std::fs::write(dir.join("config.toml"), text).unwrap();
    root
}

#[tokio::test]
async fn a_person_approves_and_denies_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let root = config_with_root(dir.path(), "");
    let (mut daemon, _) = serve(dir.path()).await;
    let mut agent = crate::common::daemon::Raw::connect(&dir.path().join("agent.sock")).await;
    agent.initialize().await;
    agent
        .send_json(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "shell_exec", "arguments": {"command": "echo from-the-cli"}}}),
        )
        .await;
    // The request is visible to `toolgate approvals` once the daemon queued
    // it; poll the other process with a bounded deadline.
    let started = std::time::Instant::now();
    let id = loop {
        let (code, out, err) = run_cli(dir.path(), &["approvals", "--json"]).await;
        assert_eq!(code, 0, "{err}");
        let pending: Value = serde_json::from_str(&out).unwrap();
        if let Some(id) = pending[0]["id"].as_i64() {
            assert_eq!(pending[0]["tool"], "shell_exec");
            assert_eq!(pending[0]["preview"], "echo from-the-cli");
            break id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no approval request appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The listing people read names the request by its command.
    let (code, out, err) = run_cli(dir.path(), &["approvals"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("#{id}  high  shell_exec  echo from-the-cli\n")),
        "{out}"
    );
    assert!(out.contains("denied automatically in"), "{out}");
    // Approving says what happened in a sentence, not the request record.
    let (code, out, err) = run_cli(
        dir.path(),
        &["approve", &id.to_string(), "--always", "/command=echo *"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("Approved request #{id} (shell_exec, asked by")),
        "{out}"
    );
    assert!(
        out.contains(
            "Remembered as rule #1: allow tool=shell_exec,/command=echo *, until revoked."
        ),
        "{out}"
    );
    assert!(out.lines().count() <= 3, "{out}");
    let reply = agent.recv().await.unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("from-the-cli")
    );

    // And a denial with a reason.
    let marker = root.join("nope");
    agent
        .send_json(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "shell_exec", "arguments": {"command": format!("touch {}", marker.display())}}}))
        .await;
    let started = std::time::Instant::now();
    let id = loop {
        let (_, out, _) = run_cli(dir.path(), &["approvals", "--json"]).await;
        let pending: Value = serde_json::from_str(&out).unwrap();
        if let Some(id) = pending[0]["id"].as_i64() {
            break id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no approval request appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (code, out, err) = run_cli(
        dir.path(),
        &["deny", &id.to_string(), "--reason", "not now"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("Denied request #{id} (shell_exec")),
        "{out}"
    );
    assert!(out.contains("The agent is told: not now"), "{out}");
    let reply = agent.recv().await.unwrap();
    assert_eq!(reply["result"]["_meta"]["toolgate/error"]["kind"], "denied");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not now")
    );
    assert!(!marker.exists());

    // `rules` shows the id that `--rm` takes, and the rule's use.
    let (code, out, err) = run_cli(dir.path(), &["rules"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("#1  allow  in force  "), "{out}");
    assert!(
        out.contains("Revoke one with `toolgate rules --rm ID`."),
        "{out}"
    );
    let (code, out, err) = run_cli(dir.path(), &["rules", "--rm", "1"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Revoked rule #1: allow tool=shell_exec,/command=echo *"),
        "{out}"
    );
    let (_, out, _) = run_cli(dir.path(), &["rules"]).await;
    assert!(out.starts_with("No remembered rules."), "{out}");

    let (code, out, _) = run_cli(dir.path(), &["servers", "--json"]).await;
    assert_eq!(
        (code, out.trim()),
        (0, "[]"),
        "no upstream servers configured"
    );
    let (code, out, _) = run_cli(dir.path(), &["pins", "--json"]).await;
    assert_eq!((code, out.trim()), (0, "[]"));
    stop(&mut daemon, rustix::process::Signal::TERM).await;
}

#[tokio::test]
async fn every_answered_call_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let root = config_with_root(dir.path(), "");
    std::fs::write(root.join("a.txt"), "x").unwrap();
    let (mut daemon, _) = serve(dir.path()).await;
    let mut agent = crate::common::daemon::Raw::connect(&dir.path().join("agent.sock")).await;
    agent.initialize().await;
    let mut answered = 0;
    for i in 0..50 {
        let r = agent
            .call(
                i + 1,
                "fs_read",
                serde_json::json!({"path": "a.txt", "max_bytes": 100 + i}),
            )
            .await;
        assert_eq!(r["result"]["isError"], false);
        answered += 1;
    }
    daemon.start_kill().unwrap(); // SIGKILL: no shutdown, no flush
    daemon.wait().await.unwrap();
    let log = toolgate::audit::AuditLog::open(&dir.path().join("data/audit.db"))
        .await
        .unwrap();
    let rows = log.recent_calls(1000).await.unwrap();
    assert_eq!(
        rows.iter()
            .filter(|r| r.tool == "fs_read" && r.outcome == "ok")
            .count(),
        answered
    );
}

#[tokio::test]
async fn editing_the_config_adds_an_upstream_server_to_the_running_daemon() {
    let dir = tempfile::tempdir().unwrap();
    config_with_root(dir.path(), "[policy]\npreset = \"autonomous\"\n");
    let (mut daemon, _) = serve(dir.path()).await;
    let (_, out, _) = run_cli(dir.path(), &["tools", "--json"]).await;
    assert!(!out.contains("py__add"));

    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/py_server.py");
    let extra = format!(
        "[policy]\npreset = \"autonomous\"\n\n[[servers]]\nname = \"py\"\ntransport = \"stdio\"\ncommand = {python:?}\nargs = [{server:?}]\n",
        python = python_str()
    );
    // Rewrite the file in place while the daemon runs.
    config_with_root(dir.path(), &extra);
    let started = std::time::Instant::now();
    let status = loop {
        let (_, out, _) = run_cli(dir.path(), &["servers", "--json"]).await;
        let servers: Value = serde_json::from_str(&out).unwrap_or_default();
        if servers[0]["state"] == "ready" {
            break servers[0].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "server never became ready: {out}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["server"], "py");
    let (code, out, err) = run_cli(
        dir.path(),
        &["call", "py__add", "--args", r#"{"a": 2, "b": "40"}"#],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("42"), "{out}");
    let (code, out, _) = run_cli(dir.path(), &["pins", "--json"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("py__add"), "first sight pins the tool: {out}");
    stop(&mut daemon, rustix::process::Signal::TERM).await;
}
