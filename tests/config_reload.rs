//! A config reload during which a `keyring:` secret cannot be resolved
//! keeps the running servers on their last good spec and reports the
//! problem. Real `toolgate serve` (the binary), a config file edited while
//! it runs, the Python SDK fixture server as its upstream, a raw client on
//! the agent socket and on the control socket. The keychain is made
//! unreachable on purpose (no D-Bus session), as on a headless box or with
//! a locked keyring.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::common::daemon::Raw;
use crate::common::python::python_str;
use crate::upstream_support::py_server;

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");
const SECRET: &str = "tg_reload_missing_token";

fn write_config(dir: &Path, servers: &str) {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let text = format!(
        "[builtin]\nroots = [{:?}]\n\n[policy]\npreset = \"autonomous\"\n\n{servers}",
        root.display().to_string()
    );
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn py_entry(name: &str, env: &str) -> String {
    format!(
        "[[servers]]\nname = \"{name}\"\ntransport = \"stdio\"\ncommand = {:?}\nargs = [{:?}]\n{env}\n",
        python_str(),
        py_server()
    )
}

/// `toolgate serve` with its stderr lines forwarded to a channel.
fn serve(dir: &Path) -> (Child, mpsc::UnboundedReceiver<String>) {
    let mut child = Command::new(TOOLGATE)
        .args(["serve", "--no-http", "--socket"])
        .arg(dir.join("run/agent.sock"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        // No keychain can be reached: every `keyring:` lookup fails.
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        // `config reloaded` (info) says when a reload has been applied.
        .env("TOOLGATE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// Connects once the daemon listens (bounded).
async fn connect(socket: &Path) -> Raw {
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::UnixStream::connect(socket).await.is_err() {
        assert!(Instant::now() < deadline, "the daemon never listened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Raw::connect(socket).await
}

async fn tool_names(c: &mut Raw, id: u64) -> Vec<String> {
    let r = c.request(id, "tools/list", json!({})).await;
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// Every stderr line up to and including the first that contains `end`
/// (bounded).
async fn stderr_until(rx: &mut mpsc::UnboundedReceiver<String>, end: &str) -> Vec<String> {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = rx.recv().await.expect("daemon stderr open");
            let done = line.contains(end);
            seen.push(line);
            if done {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no stderr line with {end:?} in {seen:#?}"));
    seen
}

/// The one line in `lines` that contains every one of `parts`.
fn line_with<'a>(lines: &'a [String], parts: &[&str]) -> &'a str {
    lines
        .iter()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in {lines:#?}"))
}

async fn servers(dir: &Path) -> Vec<Value> {
    let mut ctl = Raw::connect_control(&dir.join("run/agent.sock.ctl"), &dir.join("data")).await;
    let r = ctl.request(1, "toolgate/servers", json!({})).await;
    r["result"]["servers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn find<'a>(all: &'a [Value], name: &str) -> Option<&'a Value> {
    all.iter().find(|s| s["server"] == name)
}

/// The number a call answered (inside its trust wrapper).
fn number(r: &Value) -> u64 {
    assert_eq!(r["result"]["isError"], false, "{r}");
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    text.lines()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number in {text}"))
}

async fn py_pid(c: &mut Raw, id: u64) -> u64 {
    number(&c.call(id, "py__pid", json!({})).await)
}

#[tokio::test]
async fn a_reload_with_an_unreadable_secret_keeps_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_config(dir, &py_entry("py", ""));
    let (mut daemon, mut stderr) = serve(dir);
    let socket: PathBuf = dir.join("run/agent.sock");
    let mut c = connect(&socket).await;
    c.initialize().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 1;
    while !tool_names(&mut c, id).await.iter().any(|n| n == "py__pid") {
        assert!(
            Instant::now() < deadline,
            "the fixture server never came up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        id += 1;
    }
    let pid = py_pid(&mut c, 100).await;

    // The running server now wants a secret that cannot be read, and a new
    // server wants it too.
    let env = format!("env = {{ TOKEN = \"keyring:{SECRET}\" }}");
    write_config(
        dir,
        &format!("{}\n{}", py_entry("py", &env), py_entry("py2", &env)),
    );
    // The daemon's line, logged once the reload is applied (the watcher
    // logs its own `config reloaded` before that).
    let lines = stderr_until(&mut stderr, "toolgate::daemon: config reloaded").await;

    let names = tool_names(&mut c, 200).await;
    assert!(names.iter().any(|n| n == "py__add"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("py2__")), "{names:?}");
    assert_eq!(
        py_pid(&mut c, 201).await,
        pid,
        "the same process, not restarted"
    );
    let r = c.call(202, "py__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(number(&r), 42, "{r}");
    // One line per server, naming it and the secret.
    let kept = line_with(
        &lines,
        &["server `py` keeps running on its last good config", SECRET],
    );
    let skipped = line_with(&lines, &["server `py2` not started", SECRET]);
    eprintln!("reported:\n{kept}\n{skipped}");
    let all = servers(dir).await;
    let py = find(&all, "py").expect("py listed");
    assert_eq!(py["state"], "ready", "{py}");
    assert!(
        py["config_problem"].as_str().unwrap_or("").contains(SECRET),
        "{py}"
    );
    let py2 = find(&all, "py2").expect("py2 reported");
    assert_eq!(py2["state"], "failed", "{py2}");
    assert!(
        py2["last_error"].as_str().unwrap_or("").contains(SECRET),
        "{py2}"
    );

    // Back to a config that works: the problem clears, py2 goes away, py
    // was never restarted.
    write_config(dir, &py_entry("py", ""));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = servers(dir).await;
        let clear = find(&all, "py").is_some_and(|p| p["config_problem"].is_null());
        if clear && find(&all, "py2").is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "never cleared: {all:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(py_pid(&mut c, 300).await, pid);

    let pid = rustix::process::Pid::from_raw(daemon.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), daemon.wait())
        .await
        .expect("the daemon stops")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
