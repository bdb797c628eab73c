//! Finding the engine from HOME alone, one engine per data dir, and a
//! detached `--spawn`: real `toolgate serve` processes, and the official
//! Python MCP SDK as the client with its default, stripped environment
//! (docs/architecture/overview.md, "Processes and discovery").

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use toolgate::discovery::{self, EngineInfo};

use crate::common::python::python;

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");
const CLIENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/bridge_client.py"
);
/// A deadline for a process to finish or come up; failing it fails the test.
const WITHIN: Duration = Duration::from_secs(60);

/// A user's home in a temp dir, as a desktop session has it: a config with
/// a file root holding `a.txt`, and a private `XDG_RUNTIME_DIR` (`run/`).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = Self { dir };
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(home.root().join("a.txt"), "found from HOME").unwrap();
        let config = home.path().join(".config/toolgate/config.toml");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(
            &config,
            format!(
                "[builtin]\nroots = [{:?}]\n",
                home.root().display().to_string()
            ),
        )
        .unwrap();
        std::fs::create_dir(home.run()).unwrap();
        std::fs::set_permissions(home.run(), std::fs::Permissions::from_mode(0o700)).unwrap();
        home
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn root(&self) -> PathBuf {
        self.path().join("root")
    }

    fn run(&self) -> PathBuf {
        self.path().join("run")
    }

    /// The default data dir under this HOME.
    fn data_dir(&self) -> PathBuf {
        self.path().join(".local/share/toolgate")
    }

    /// A command with this HOME and nothing else of ours: no
    /// `XDG_RUNTIME_DIR` unless `desktop`, no `TOOLGATE_*`.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>, desktop: bool) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", self.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .kill_on_drop(true);
        if desktop {
            c.env("XDG_RUNTIME_DIR", self.run());
        }
        c
    }

    /// `toolgate serve` as a desktop session starts it (with
    /// `XDG_RUNTIME_DIR`, default paths otherwise), once it is ready.
    async fn serve(&self) -> Child {
        let mut child = self
            .command(TOOLGATE, true)
            .arg("serve")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(file) = line.strip_prefix("discovery file: ") {
                    return PathBuf::from(file);
                }
            }
            panic!("serve ended without a ready line");
        };
        let file = tokio::time::timeout(WITHIN, ready)
            .await
            .expect("serve is ready");
        assert_eq!(file, discovery::file(&self.data_dir()));
        // Keep reading so the engine never blocks on a full stdout pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        child
    }

    /// The Python SDK client, run to its end with both of its output pipes
    /// read to EOF: `mcp-bridge` plus `bridge_args`, found from HOME alone.
    async fn python_client(&self, bridge_args: &[&str]) -> Value {
        let out = self
            .command(python(), true)
            .arg(CLIENT)
            .arg(TOOLGATE)
            .arg("--home")
            .args(bridge_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output();
        let out = tokio::time::timeout(WITHIN, out)
            .await
            .expect("the client finishes and its stdout and stderr reach EOF")
            .unwrap();
        client_result(&out)
    }

    /// `toolgate ARGS` with this HOME only, as a stripped client would run it.
    async fn cli(&self, args: &[&str]) -> Output {
        let out = self.command(TOOLGATE, false).args(args).output();
        tokio::time::timeout(WITHIN, out)
            .await
            .expect("the CLI finishes")
            .unwrap()
    }

    /// The rows of `toolgate audit --json` for this HOME.
    async fn audit_rows(&self) -> Vec<Value> {
        let out = self.cli(&["audit", "--json"]).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Asserts the audit log has the client's `fs_read` of `a.txt`, made
    /// through the agent socket, answered ok.
    async fn assert_call_audited(&self) {
        let rows = self.audit_rows().await;
        assert!(
            rows.iter().any(|r| r["tool"] == "fs_read"
                && r["outcome"] == "ok"
                && r["caller"].as_str().unwrap().contains("\"via\":\"socket\"")),
            "the client's call is in the audit log: {rows:?}"
        );
    }

    fn engine(&self) -> EngineInfo {
        discovery::read(&self.data_dir())
            .unwrap()
            .expect("a discovery file")
    }

    /// `toolgate serve` processes whose HOME is this one.
    fn engines(&self) -> Vec<u32> {
        let home = format!("HOME={}", self.path().display());
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let read = |f| std::fs::read(format!("/proc/{pid}/{f}")).unwrap_or_default();
                let cmdline = read("cmdline");
                let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                let environ = read("environ");
                args.first() == Some(&TOOLGATE.as_bytes())
                    && args.get(1) == Some(&&b"serve"[..])
                    && environ.split(|b| *b == 0).any(|v| v == home.as_bytes())
                    && !zombie(*pid)
            })
            .collect()
    }
}

/// The client's JSON, after asserting it succeeded and read its file.
fn client_result(out: &Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python client failed: {err}");
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["server"], "toolgate", "{seen}");
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["text"], "found from HOME", "{seen}");
    seen
}

fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(false)
}

/// The session id of `/proc/<pid>`, read from its `stat` (field 6).
/// Not `getsid(2)` through rustix: in a container whose session leader is
/// outside the pid namespace the id is 0, which rustix's `Pid` cannot hold
/// (it panics; seen in CI).
fn session_of(pid: &str) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) may hold spaces and parentheses: the
    // fields after it start past the last `)`.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    // state ppid pgrp session
    rest.split(' ').nth(3).unwrap().parse().unwrap()
}

fn pid(p: u32) -> rustix::process::Pid {
    rustix::process::Pid::from_raw(p as i32).unwrap()
}

/// SIGTERMs an engine that is not our child; waits until it removed its
/// discovery file and exited (or is a zombie for its new parent to reap).
async fn stop_engine(home: &Home, engine: u32) {
    rustix::process::kill_process(pid(engine), rustix::process::Signal::TERM).unwrap();
    let file = discovery::file(&home.data_dir());
    let deadline = tokio::time::Instant::now() + WITHIN;
    while file.exists() || (discovery::pid_alive(engine) && !zombie(engine)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "engine {engine} did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGTERMs a spawned engine if the test ends early.
struct Reap(Option<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = rustix::process::kill_process(pid(p), rustix::process::Signal::TERM);
        }
    }
}

/// Stops `toolgate serve` (our child) with SIGTERM and checks it cleaned up.
async fn stop_serve(home: &Home, mut serve: Child) {
    rustix::process::kill_process(pid(serve.id().unwrap()), rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(WITHIN, serve.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        !discovery::file(&home.data_dir()).exists(),
        "the discovery file is removed on a clean shutdown"
    );
}

#[tokio::test]
async fn the_python_sdk_with_its_default_environment_finds_the_engine_from_home() {
    let home = Home::new();
    let serve = home.serve().await;
    // The SDK passes the bridge HOME and PATH, not XDG_RUNTIME_DIR.
    let seen = home.python_client(&[]).await;
    assert_eq!(
        seen["tools"],
        serde_json::json!(["fs_list", "fs_read", "fs_write", "http_fetch", "shell_exec"])
    );
    home.assert_call_audited().await;
    // Every CLI command that talks to the engine finds it the same way.
    let out = home.cli(&["breakers", "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let breakers: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        breakers
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["tool"] == "fs_read"),
        "the CLI reached the engine that ran the call: {breakers}"
    );
    // What they found: the discovery file of the engine, which listens in
    // the runtime dir the bridge could not see.
    let engine = home.engine();
    assert_eq!(engine.pid, serve.id().unwrap());
    assert_eq!(engine.agent_socket, home.run().join("toolgate/agent.sock"));
    stop_serve(&home, serve).await;
}

#[tokio::test]
async fn spawn_uses_the_live_engine_and_never_starts_a_second() {
    let home = Home::new();
    let serve = home.serve().await;
    let owner = serve.id().unwrap();
    home.python_client(&["--spawn"]).await;
    home.assert_call_audited().await;
    assert_eq!(
        home.engine().pid,
        owner,
        "the discovery file names the owner"
    );
    assert_eq!(home.engines(), [owner], "one engine for the data dir");
    assert!(
        !home.data_dir().join("engine.log").exists(),
        "no engine was spawned"
    );
    stop_serve(&home, serve).await;
}

#[tokio::test]
async fn spawn_starts_a_detached_engine_and_the_client_still_finishes() {
    let home = Home::new();
    // `python_client` reads the client's stdout and stderr to EOF: the
    // spawned engine must hold neither, though it keeps running.
    home.python_client(&["--spawn"]).await;
    let engine = home.engine();
    let mut reap = Reap(Some(engine.pid));
    assert!(discovery::find_live(&home.data_dir()).await.is_some());
    assert_eq!(home.engines(), [engine.pid]);
    // Its own session: not the client's (which was ours), nor led by it.
    let sid = session_of(&engine.pid.to_string());
    assert_eq!(sid, i64::from(engine.pid), "a session leader");
    assert_ne!(sid, session_of("self"));
    // Its stdio goes to a private log in the data dir.
    let log = home.data_dir().join("engine.log");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&log).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    for fd in ["0", "1", "2"] {
        let target = std::fs::read_link(format!("/proc/{}/fd/{fd}", engine.pid)).unwrap();
        assert!(
            target == Path::new("/dev/null") || target == log,
            "fd {fd} of the engine is {}",
            target.display()
        );
    }
    home.assert_call_audited().await;
    stop_engine(&home, engine.pid).await;
    reap.0 = None;
}

#[tokio::test]
async fn two_clients_spawning_at_once_share_one_engine() {
    let home = Home::new();
    let (a, b) = tokio::join!(
        home.python_client(&["--spawn"]),
        home.python_client(&["--spawn"])
    );
    assert_eq!(
        (a["text"].clone(), b["text"].clone()),
        ("found from HOME".into(), "found from HOME".into())
    );
    let engine = home.engine();
    let mut reap = Reap(Some(engine.pid));
    assert_eq!(home.engines(), [engine.pid], "one engine for the data dir");
    let rows = home.audit_rows().await;
    let ok = rows
        .iter()
        .filter(|r| r["tool"] == "fs_read" && r["outcome"] == "ok")
        .count();
    assert_eq!(ok, 2, "both clients' calls are audited: {rows:?}");
    stop_engine(&home, engine.pid).await;
    reap.0 = None;
}

#[tokio::test]
async fn a_second_engine_on_an_owned_data_dir_refuses_to_start() {
    let home = Home::new();
    let serve = home.serve().await;
    let owner = serve.id().unwrap();
    // Another socket, so only the data dir is shared.
    let other = home.path().join("other.sock");
    let out = home
        .command(TOOLGATE, true)
        .arg("serve")
        .arg("--socket")
        .arg(&other)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(20), out)
        .await
        .expect("the second engine exits instead of serving")
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let want = format!(
        "another toolgate engine (pid {owner}) already owns {}; stop it first or use --data-dir",
        home.data_dir().display()
    );
    assert!(err.contains(&want), "{err}");
    assert!(!other.exists(), "it bound nothing");
    assert_eq!(home.engine().pid, owner, "the owner's discovery file stays");
    stop_serve(&home, serve).await;
}
