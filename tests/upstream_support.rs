//! Shared parts of the upstream MCP tests: an engine with an audit log and
//! a pin store in a temp dir, fixture paths (failing loudly when
//! `scripts/setup-test-deps` has not run), bounded polling, and process
//! inspection through `/proc`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use tokio::time::Instant;
use toolgate::audit::AuditLog;
use toolgate::config::Config;
use toolgate::config::servers::{ServerSpec, TransportSpec};
use toolgate::context::{Caller, Session};
use toolgate::tool::ToolResult;
use toolgate::upstream::{PinStore, ServerState, UpstreamOptions, Upstreams};
use toolgate::{CallError, Engine};

use crate::common::python::python_str;

/// Engine + upstreams + the temp dir holding their database.
pub(crate) struct Harness {
    pub(crate) engine: Engine,
    pub(crate) up: Upstreams,
    pub(crate) session: Session,
    _dir: TempDir,
}

/// Fast reconnects and short grace periods, so restarts are quick.
pub(crate) fn fast_options() -> UpstreamOptions {
    UpstreamOptions {
        connect_timeout: Duration::from_secs(60),
        backoff_initial: Duration::from_millis(50),
        backoff_max: Duration::from_millis(500),
        stable_after: Duration::from_secs(30),
        stop_grace: Duration::from_secs(2),
        stderr_lines: 100,
    }
}

impl Harness {
    pub(crate) async fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let audit = AuditLog::open(&dir.path().join("audit.db"))
            .await
            .expect("open audit log");
        let pins = PinStore::open(audit.pool().clone())
            .await
            .expect("open pin store");
        // These tests are about the upstream mechanics; approval of external
        // tools (asked by the default preset) is tested in `approval`.
        let config = Config::parse(
            "[policy]\npreset = \"autonomous\"\n",
            std::path::Path::new("t.toml"),
        )
        .expect("config");
        let engine = Engine::builder(config).audit(audit).build();
        let up = Upstreams::new(engine.clone(), pins, fast_options());
        Self {
            engine,
            up,
            session: Session::new("test-session", Caller::via("test")),
            _dir: dir,
        }
    }

    /// Calls through the whole pipeline.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<ToolResult, CallError> {
        self.engine.call(&self.session, tool, args).await.result
    }

    /// Names of the tools an agent would see.
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.engine
            .tools()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Waits until `server` is ready with at least `min_tools` tools.
    pub(crate) async fn ready(&self, server: &str, min_tools: usize, within: Duration) {
        let up = self.up.clone();
        wait_for(within, &format!("server `{server}` ready"), || {
            up.status(server)
                .is_some_and(|s| s.state == ServerState::Ready && s.tools >= min_tools)
        })
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{e}; status: {:?}; stderr: {:?}",
                up.status(server),
                up.stderr(server)
            )
        });
    }
}

/// Polls `cond` every 10 ms until it holds or `within` passes.
pub(crate) async fn wait_for(
    within: Duration,
    what: &str,
    mut cond: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("timed out after {within:?} waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const SETUP: &str = "run `scripts/setup-test-deps` first (installs the MCP test servers)";

/// `node .../server-everything/dist/index.js`.
pub(crate) fn everything_js() -> String {
    let p = repo().join(
        "tests/fixtures/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(p.is_file(), "{} is missing: {SETUP}", p.display());
    p.to_string_lossy().into_owned()
}

/// The Python fixture server, after checking the `mcp` package imports
/// (in the venv of `crate::common::python`).
pub(crate) fn py_server() -> String {
    crate::common::python::python();
    repo()
        .join("tests/fixtures/py_server.py")
        .to_string_lossy()
        .into_owned()
}

/// A server spec with default limits.
pub(crate) fn spec(name: &str, transport: TransportSpec) -> ServerSpec {
    ServerSpec::new(name, transport)
}

/// A stdio transport.
pub(crate) fn stdio(command: &str, args: &[&str], env: &[(&str, &str)]) -> TransportSpec {
    TransportSpec::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        env: env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
        cwd: None,
    }
}

/// The Python fixture over stdio.
pub(crate) fn py_spec(name: &str, env: &[(&str, &str)]) -> ServerSpec {
    let server = py_server();
    spec(name, stdio(&python_str(), &[&server], env))
}

/// All text of a result.
pub(crate) fn text(r: &ToolResult) -> String {
    r.joined_text()
}

/// A free TCP port on loopback (bound, then released).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}

/// Waits until something accepts connections on `port`.
pub(crate) async fn wait_port(port: u16, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on port {port} after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A child process killed (with its group) when dropped.
pub(crate) struct ChildGuard(pub(crate) tokio::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // A direct syscall on the child's own group. Never shell out to
        // `kill -KILL -PID`: procps reads `-PID` as an option and ends up
        // calling kill(-1), which kills every process we may signal.
        if let Some(pid) = self
            .0
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.0.start_kill();
    }
}

/// server-everything in `mode` (`sse`, `streamableHttp`) on a free port.
pub(crate) async fn everything_http(mode: &str) -> (ChildGuard, u16) {
    let port = free_port();
    let child = tokio::process::Command::new("node")
        .arg(everything_js())
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node");
    let guard = ChildGuard(child);
    wait_port(port, Duration::from_secs(30)).await;
    (guard, port)
}

/// Whether process `pid` exists and is not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    crate::common::running(pid)
}

/// Processes (zombies included) whose parent is `pid` or whose process
/// group is `pgid`.
pub(crate) fn processes_of(pid: u32, pgid: Option<u32>) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (ppid, grp) = (f.get(1).copied(), f.get(3).copied());
        let by_parent = ppid == Some(pid.to_string().as_str());
        let by_group = pgid.is_some_and(|g| grp == Some(g.to_string().as_str()));
        if by_parent || by_group {
            found.push(format!(
                "{name} {}) {}",
                head,
                f.first().copied().unwrap_or("?")
            ));
        }
    }
    found
}

/// The tool's own text: all text parts with toolgate's trust-wrapper tags
/// (`<untrusted-output id=…>`, `</untrusted-output id=…>`) removed, trimmed.
pub(crate) fn payload(r: &ToolResult) -> String {
    let mut s = r.joined_text();
    for tag in ["</untrusted-output", "<untrusted-output"] {
        while let Some(start) = s.find(tag) {
            let end = s[start..].find('>').map_or(s.len(), |e| start + e + 1);
            s.replace_range(start..end, "");
        }
    }
    s.trim().to_owned()
}

/// Calls a fixture's `pid` tool and parses the answer.
pub(crate) async fn py_pid(h: &Harness, tool: &str) -> u32 {
    let r = h.call(tool, serde_json::json!({})).await.expect("pid tool");
    payload(&r)
        .parse()
        .unwrap_or_else(|_| panic!("pid tool answered {:?}", payload(&r)))
}
