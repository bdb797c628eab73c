//! A team on one Postgres beside one engine alone on SQLite, in the same
//! run: what sharing the audit log and the approval queue costs.
//!
//! - **Audit rows/s.** Engines as real `toolgate serve` processes, each
//!   with its own data dir and `[storage] url` naming the one Postgres,
//!   each driven by agents (child processes of this binary) making allowed
//!   `fs_read` calls, their arguments differing call to call as real ones
//!   do (the loop guard rightly refuses a call repeated five times). It
//!   measures the calls answered per second in total, and how long after
//!   the last answer every row is in Postgres's `team_calls` (engines ship
//!   committed rows every half second). Beside it, one `toolgate serve`
//!   with no `[storage]` takes the same load (as many agents and calls, on
//!   the one engine): calls per second, and how long until every row is
//!   committed to its `audit.db`.
//! - **Decision to agent.** Agents on the team's engines call `shell_exec`
//!   with distinct commands, which asks a person; an engine in this
//!   process decides each request through the team (`Team::decide`),
//!   approve and deny in turn, one at a time: the next once the agent of
//!   the last has its reply, so exactly one decision is in flight on
//!   either side. Measured: from calling `decide` to the raising agent
//!   reading its reply. Beside it, the same decisions made locally on one
//!   engine alone on SQLite, in this process (`Approvals::decide`), for
//!   as many agents on that engine. An approved call runs `echo` under the warden before the
//!   agent hears back; a denied one does not, so the deny rows are the
//!   decision's path alone.
//!
//! Agents report when they read a reply as `CLOCK_MONOTONIC` readings,
//! the clock this process reads when it calls `decide`: one machine, one
//! clock. Sides take turns, round after round, so drift in the machine's
//! load (large on a shared machine) hits both alike; the figures to read
//! are the ratios. Postgres is a private cluster made for the run (the
//! integration tests' helper: `initdb` in a temp dir, `fsync=off`), so
//! its disk flushes are not in the figures.
//!
//! Run: `cargo bench --bench team` (needs Debian's `postgresql` server
//! binaries, as the tests do). Under `cargo test` (the test command builds
//! every target) it runs once with small counts. Prints tables; no
//! assertions on speed. `ROUNDS=N` changes the number of rounds.
//!
//! One run on the shared development machine (2 cores shared with other
//! builds; bench profile with `CARGO_PROFILE_BENCH_LTO=off
//! CARGO_PROFILE_BENCH_CODEGEN_UNITS=16`, which shifts both sides alike):
//!
//! ```text
//! 8 engines (`toolgate serve` processes) on one Postgres, beside one engine alone on SQLite; 3 round(s), the sides taking turns, after a warm-up
//!
//! audit rows: 32 agents (8 processes) making allowed fs_read calls, 32000 calls per side per round
//!                                                         calls/s  all rows stored after
//! one engine alone, SQLite (rows in its audit.db)           11453                  55 ms
//! 8 engines, one Postgres (rows in team_calls)              10364                 354 ms
//! ratio team / alone: 0.90 (calls/s); "stored after": from the last answer, worst round
//!
//! decision to agent: 960 shell_exec requests per side, decided one at a time, approve and deny in turn
//!                                                             p50        p99
//! local approve (the engine alone; then runs echo)        6.80 ms   14.46 ms
//! local deny                                              0.32 ms    3.72 ms
//! team approve (decided from another engine)             11.09 ms   22.79 ms
//! team deny                                               2.25 ms    6.65 ms
//! ratio team / local: approve p50 1.63, p99 1.58; deny p50 7.05, p99 1.79
//! ```
//!
//! Run to run on that machine the calls/s ratio moved between 0.79 and
//! 0.90, and the decision ratios by up to a quarter.

// A benchmark binary: printing is its output.
#![allow(missing_docs, clippy::print_stdout)]

/// The allocator the `toolgate` binary ships with (see Cargo.toml).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// The integration tests' Postgres: one cluster per run, made and removed
// here. Its kill and restart helpers serve the tests only.
#[path = "../tests/common/postgres.rs"]
#[allow(dead_code)]
mod postgres;
mod serve_env;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate::approval::{ApprovalStatus, Approvals, Decision};
use toolgate::config::Config;
use toolgate::daemon::{Daemon, ServeOptions};
use toolgate::mcp::ServerOptions;
use toolgate::team::{Team, TeamState};

use crate::postgres::Postgres;

/// Set in the child processes that play the agents.
const CLIENT: &str = "TOOLGATE_BENCH_TEAM_CLIENT";

/// The file the `fs_read` load reads, in every engine's root.
const PAGE: &str = "page.txt";

/// How long any wait in the bench may take before it calls the run
/// broken (nothing here should come near it).
const WITHIN: Duration = Duration::from_secs(120);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// How much a run does.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Team engines (`toolgate serve` processes).
    engines: usize,
    /// Agents per team engine making `fs_read` calls.
    readers: usize,
    /// Calls per reading agent.
    reads: usize,
    /// `shell_exec` calls (so decisions) per asking agent; one asking
    /// agent per team engine.
    asks: usize,
    /// Rounds, the sides taking turns in each.
    rounds: usize,
}

impl Sizes {
    /// Full sizes under `cargo bench`; a quick smoke run under `cargo
    /// test`, which runs bench targets without `--bench`.
    fn get() -> Self {
        let full = std::env::args().any(|a| a == "--bench");
        let rounds = std::env::var("ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if full { 3 } else { 1 });
        if full {
            Self {
                engines: 8,
                readers: 4,
                reads: 1000,
                asks: 40,
                rounds,
            }
        } else {
            Self {
                engines: 2,
                readers: 2,
                reads: 50,
                asks: 4,
                rounds,
            }
        }
    }
}

/// `CLOCK_MONOTONIC` in ns: comparable between the processes of one
/// machine, unlike an `Instant`.
fn now_ns() -> i128 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec)
}

// ---------------------------------------------------------------- agents

/// One agent's MCP session over the socket, newline-delimited JSON-RPC.
struct Agent {
    rd: BufReader<tokio::net::unix::OwnedReadHalf>,
    wr: tokio::net::unix::OwnedWriteHalf,
    buf: String,
}

impl Agent {
    async fn connect(socket: &Path) -> Self {
        let (rd, wr) = UnixStream::connect(socket)
            .await
            .expect("connect")
            .into_split();
        let mut a = Self {
            rd: BufReader::new(rd),
            wr,
            buf: String::new(),
        };
        a.rpc(INITIALIZE).await;
        a.wr.write_all(format!("{INITIALIZED}\n").as_bytes())
            .await
            .expect("write");
        a
    }

    /// Sends one request; returns its reply (notifications skipped).
    async fn rpc(&mut self, line: &str) -> Value {
        self.wr.write_all(line.as_bytes()).await.expect("write");
        self.wr.write_all(b"\n").await.expect("write");
        loop {
            self.buf.clear();
            let n = self.rd.read_line(&mut self.buf).await.expect("read");
            assert!(n > 0, "the engine closed the connection");
            let v: Value = serde_json::from_str(&self.buf).expect("a JSON line");
            if v.get("id").is_some() && v.get("method").is_none() {
                return v;
            }
        }
    }

    async fn call(&mut self, id: usize, tool: &str, args: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}});
        self.rpc(&req.to_string()).await
    }
}

fn is_error(reply: &Value) -> bool {
    reply["result"]["isError"] == true || reply["error"].is_object()
}

/// Child: `reads SOCKET AGENTS CALLS`. Connects its agents, says
/// `ready`, waits for a line on stdin, then each agent makes CALLS
/// `fs_read` calls, one after the other. Prints when it started and
/// ended (monotonic ns).
fn reads_client(socket: &Path, agents: usize, calls: usize) {
    single_thread().block_on(async {
        let mut conns = Vec::new();
        for _ in 0..agents {
            conns.push(Agent::connect(socket).await);
        }
        go_signal().await;
        let start = now_ns();
        let tasks: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(k, mut a)| {
                tokio::spawn(async move {
                    for i in 0..calls {
                        let n = k * calls + i;
                        // `max_bytes` above the page's size: every call
                        // reads the whole page, and no two are the same.
                        let r = a
                            .call(
                                n + 1,
                                "fs_read",
                                json!({"path": PAGE, "max_bytes": 65_536 + n}),
                            )
                            .await;
                        assert!(!is_error(&r), "fs_read failed: {r}");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("agent");
        }
        println!("{start} {}", now_ns());
    });
}

/// Child: `asks SOCKET AGENTS CALLS TAG`. Each agent makes CALLS
/// `shell_exec` calls one after the other, each waiting for a person.
/// Prints a line as it reads each reply: its command, when (monotonic ns),
/// and whether it was an error.
fn asks_client(socket: &Path, agents: usize, calls: usize, tag: &str) {
    single_thread().block_on(async {
        let tasks: Vec<_> = (0..agents)
            .map(|k| {
                let socket = socket.to_owned();
                let tag = tag.to_owned();
                tokio::spawn(async move {
                    let mut a = Agent::connect(&socket).await;
                    for i in 0..calls {
                        let command = format!("echo {tag}-{k}-{i}");
                        let r = a
                            .call(i + 1, "shell_exec", json!({"command": command}))
                            .await;
                        // Stdout is line-buffered: the line leaves now.
                        println!("{command}\t{}\t{}", now_ns(), is_error(&r));
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("agent");
        }
    });
}

fn single_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Says `ready` and waits for the parent's line.
async fn go_signal() {
    println!("ready");
    use std::io::Write;
    std::io::stdout().flush().expect("flush");
    let mut line = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .expect("stdin");
}

fn child_main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let socket = Path::new(&args[2]);
    let n = |i: usize| -> usize { args[i].parse().expect("a count") };
    match args[1].as_str() {
        "reads" => reads_client(socket, n(3), n(4)),
        "asks" => asks_client(socket, n(3), n(4), &args[5]),
        other => panic!("unknown client mode {other}"),
    }
}

/// This binary again, as agents.
fn agents(args: &[String]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("exe"));
    cmd.env(CLIENT, "1")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    cmd.spawn().expect("agent process")
}

/// Waits for a child whose output is read elsewhere to exit successfully.
async fn exited(mut child: Child) {
    let status = child.wait().await.expect("agent process");
    assert!(status.success(), "agent process failed: {status}");
}

/// Everything a child printed, once it exited successfully.
async fn output(child: Child) -> String {
    let out = child.wait_with_output().await.expect("agent process");
    assert!(out.status.success(), "agent process failed: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

// --------------------------------------------------------------- engines

/// A `toolgate serve` process in a temp dir of its own.
struct Serve {
    child: Child,
    socket: PathBuf,
    dir: tempfile::TempDir,
}

impl Serve {
    /// Starts one; `storage` is the team database, if any.
    async fn start(storage: Option<&str>) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("tg-bench-team-")
            .tempdir()
            .expect("temp dir");
        let base = dir.path();
        for d in ["home", "root", "data", "run", "config", "share"] {
            std::fs::create_dir_all(base.join(d)).expect("dir");
        }
        use std::os::unix::fs::PermissionsExt;
        for d in ["run", "data"] {
            std::fs::set_permissions(base.join(d), std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
        }
        std::fs::write(base.join("root").join(PAGE), page_text()).expect("page");
        let config =
            storage.map_or_else(String::new, |url| format!("[storage]\nurl = \"{url}\"\n"));
        std::fs::write(base.join("config/config.toml"), config).expect("config");
        let stderr = std::fs::File::create(base.join("stderr.log")).expect("log");
        let bin = Path::new(env!("CARGO_BIN_EXE_toolgate"));
        let mut child = serve_env::serve(bin, base, "bench")
            .arg("--no-http")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true)
            .spawn()
            .expect("toolgate serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = async {
            while let Some(line) = lines.next_line().await.expect("stdout") {
                if let Some((_, s)) = line.split_once("serving MCP on unix:") {
                    return Some(PathBuf::from(s.trim()));
                }
            }
            None
        };
        let socket = tokio::time::timeout(WITHIN, ready)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                panic!(
                    "toolgate serve did not start: {}",
                    std::fs::read_to_string(base.join("stderr.log")).unwrap_or_default()
                )
            });
        // Whatever it prints later is drained, so it never blocks.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, socket, dir }
    }

    fn audit_db(&self) -> PathBuf {
        self.dir.path().join("data/audit.db")
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// A 1 KiB text page, a small source file's worth.
fn page_text() -> String {
    (0..18)
        .map(|n| format!("line {n:04}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

/// An engine in this process: the team's decider, or the engine alone
/// whose queue is decided locally.
struct InProcess {
    approvals: Approvals,
    team: Option<Team>,
    socket: PathBuf,
    stop: CancellationToken,
    run: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl InProcess {
    async fn start(storage: Option<&str>) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("tg-bench-team-")
            .tempdir()
            .expect("temp dir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).expect("root");
        let toml = storage.map_or_else(String::new, |url| format!("[storage]\nurl = \"{url}\"\n"));
        let mut config = Config::parse(&toml, &dir.path().join("config.toml")).expect("config");
        config.builtin.roots = vec![root];
        let opts = ServeOptions {
            socket: dir.path().join("agent.sock"),
            data_dir: dir.path().join("data"),
            retention: Duration::from_secs(86_400),
            http_port: None,
            mode: toolgate::control::EngineMode::Serve,
            // The CLI confines `shell_exec`, as beside `toolgate serve`.
            warden: Some(PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))),
            // The agents are this binary too: none is a bridge.
            bridges: toolgate::socket::BridgeExes::none(),
        };
        let daemon = Daemon::start_with(config, &opts, ServerOptions::default())
            .await
            .expect("daemon");
        let approvals = daemon.engine().approvals().expect("a queue").clone();
        let team = daemon.team().cloned();
        let socket = daemon.socket_path().to_owned();
        let stop = CancellationToken::new();
        let run = tokio::spawn(daemon.run(stop.clone()));
        Self {
            approvals,
            team,
            socket,
            stop,
            run,
            _dir: dir,
        }
    }

    async fn stop(self) {
        self.stop.cancel();
        let _ = self.run.await;
    }
}

/// Waits until `team` is online and sees `n` engines online.
async fn all_online(team: &Team, n: usize) {
    let mut changes = team.changes();
    let found = tokio::time::timeout(WITHIN, async {
        loop {
            changes.borrow_and_update();
            let s = team.status();
            if s.state == TeamState::Online && s.engines.iter().filter(|e| e.online).count() >= n {
                return;
            }
            changes.changed().await.expect("the link runs");
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("the team never had {n} engines online: {:?}", team.status()));
}

// ------------------------------------------------------------ audit rows

/// Runs `agents_each` reading agents on each socket at once; returns the
/// calls answered per second in total and when the last one was (ns).
async fn read_load(sockets: &[&Path], agents_each: usize, calls: usize) -> (f64, i128) {
    let mut children: Vec<Child> = sockets
        .iter()
        .map(|s| {
            agents(&[
                "reads".into(),
                s.display().to_string(),
                agents_each.to_string(),
                calls.to_string(),
            ])
        })
        .collect();
    // All connected before any starts, so the span is the load's alone.
    let mut stdins: Vec<ChildStdin> = Vec::new();
    for c in &mut children {
        let mut out = BufReader::new(c.stdout.as_mut().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).await.expect("ready");
        assert_eq!(line.trim(), "ready", "agent process said {line:?}");
        stdins.push(c.stdin.take().expect("stdin"));
    }
    for s in &mut stdins {
        s.write_all(b"go\n").await.expect("go");
    }
    let (mut first, mut last) = (i128::MAX, 0);
    for c in children {
        let out = output(c).await;
        let v: Vec<i128> = out
            .split_whitespace()
            .map(|t| t.parse().expect("ns"))
            .collect();
        first = first.min(v[0]);
        last = last.max(v[1]);
    }
    let total = (sockets.len() * agents_each * calls) as f64;
    (total / ((last - first) as f64 / 1e9), last)
}

/// Waits until `count` reaches `want`, looking every 10 ms (the resolution
/// of the lag figure); returns when it did (monotonic ns).
async fn until_count<F, Fut>(want: i64, mut count: F) -> i128
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = i64>,
{
    let deadline = tokio::time::Instant::now() + WITHIN;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    loop {
        tick.tick().await;
        let n = count().await;
        if n >= want {
            return now_ns();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {n} of {want} rows arrived"
        );
    }
}

fn sqlite_rows(db: &Path) -> i64 {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("audit.db");
    c.query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
        .expect("count")
}

async fn team_rows(pool: &sqlx::PgPool) -> i64 {
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM team_calls")
        .fetch_one(pool)
        .await
        .expect("count");
    n
}

/// One side's audit-row figures over the rounds.
#[derive(Default)]
struct Rows {
    calls: usize,
    secs: f64,
    lags: Vec<f64>,
}

impl Rows {
    fn add(&mut self, calls: usize, rate: f64, lag_ns: i128) {
        self.calls += calls;
        self.secs += calls as f64 / rate;
        self.lags.push(lag_ns as f64 / 1e6);
    }

    fn rate(&self) -> f64 {
        self.calls as f64 / self.secs
    }

    fn worst_lag(&self) -> f64 {
        self.lags.iter().copied().fold(0.0, f64::max)
    }
}

// ------------------------------------------------------------- decisions

/// Agents' replies as they read them: command, when (ns), whether it was
/// an error.
type Replies = mpsc::UnboundedReceiver<(String, i128, bool)>;

/// Asking agents on `socket`, their replies sent to `tx` as they come.
fn askers(
    socket: &Path,
    agents: usize,
    calls: usize,
    tag: &str,
    tx: mpsc::UnboundedSender<(String, i128, bool)>,
) -> Child {
    let mut child = self::agents(&[
        "asks".into(),
        socket.display().to_string(),
        agents.to_string(),
        calls.to_string(),
        tag.into(),
    ]);
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let f: Vec<&str> = line.split('\t').collect();
            let reply = (f[0].to_owned(), f[1].parse().expect("ns"), f[2] == "true");
            if tx.send(reply).is_err() {
                return;
            }
        }
    });
    child
}

/// The `n`th decision of a side: approve and deny in turn.
fn decision(n: usize) -> (Decision, bool) {
    if n.is_multiple_of(2) {
        (Decision::approve(), true)
    } else {
        (Decision::deny(None), false)
    }
}

fn command_of(args: &Value) -> String {
    args["command"].as_str().expect("a command").to_owned()
}

/// Waits for the reply to the decision made at `at` on `command`, and
/// adds how long it took.
async fn reply_to(replies: &mut Replies, command: &str, at: i128, approve: bool, t: &mut Times) {
    let (cmd, read, err) = tokio::time::timeout(WITHIN, replies.recv())
        .await
        .expect("the agent hears back")
        .expect("agents run");
    // One decision in flight: every other agent still waits for a person.
    assert_eq!(cmd, command, "a reply to another call came first");
    assert_eq!(err, !approve, "{cmd}: the reply contradicts the decision");
    let took = (read - at) as f64;
    if approve {
        t.approve.push(took);
    } else {
        t.deny.push(took);
    }
}

/// Decides `want` requests of the other engines through `team`, oldest
/// first as they arrive, each once the previous one's agent has its reply.
async fn decide_team(team: &Team, want: usize, replies: &mut Replies) -> Times {
    let mut t = Times::default();
    let mut done: HashSet<(String, i64)> = HashSet::new();
    let mut changes = team.changes();
    while done.len() < want {
        changes.borrow_and_update();
        let pending: Vec<_> = team
            .requests()
            .into_iter()
            .filter(|r| r.status == ApprovalStatus::Pending)
            .filter(|r| !done.contains(&(r.engine.id.clone(), r.id)))
            .collect();
        if pending.is_empty() {
            tokio::time::timeout(WITHIN, changes.changed())
                .await
                .expect("a request arrives")
                .expect("the link runs");
            continue;
        }
        for r in pending {
            let (d, approve) = decision(done.len());
            let at = now_ns();
            let o = team.decide(&r.engine.id, r.id, d).await.expect("decide");
            assert!(o.took_effect, "{o:?}");
            done.insert((r.engine.id.clone(), r.id));
            reply_to(replies, &command_of(&r.args), at, approve, &mut t).await;
        }
    }
    t
}

/// Decides `want` requests of `approvals`' own queue, oldest first as
/// they arrive, each once the previous one's agent has its reply.
async fn decide_local(approvals: &Approvals, want: usize, replies: &mut Replies) -> Times {
    let mut t = Times::default();
    let mut done: HashSet<i64> = HashSet::new();
    let mut events = approvals.subscribe();
    while done.len() < want {
        let mut pending = approvals.pending();
        pending.retain(|r| !done.contains(&r.id));
        pending.sort_by_key(|r| r.id);
        if pending.is_empty() {
            // Any event may be the request's; a lagging receiver has
            // missed some, and looks again as well.
            let _ = tokio::time::timeout(WITHIN, events.recv())
                .await
                .expect("a request arrives");
            continue;
        }
        for r in pending {
            let (d, approve) = decision(done.len());
            let at = now_ns();
            approvals.decide(r.id, d).await.expect("decide");
            done.insert(r.id);
            reply_to(replies, &command_of(&r.args), at, approve, &mut t).await;
        }
    }
    t
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p) as usize]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// One side's decision times (ns), approvals and denials.
#[derive(Default)]
struct Times {
    approve: Vec<f64>,
    deny: Vec<f64>,
}

impl Times {
    fn extend(&mut self, other: Self) {
        self.approve.extend(other.approve);
        self.deny.extend(other.deny);
    }
}

// ------------------------------------------------------------------ main

fn main() {
    if std::env::var_os(CLIENT).is_some() {
        child_main();
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(Sizes::get()));
}

/// One round of decisions on each side, the engine alone first: `asks`
/// calls per asking agent, one asking agent per team engine and as many on
/// the engine alone.
async fn decisions(
    local: &InProcess,
    team: &Team,
    engines: &[Serve],
    asks: usize,
    tag: &str,
) -> (Times, Times) {
    let want = engines.len() * asks;
    let (tx, mut replies) = mpsc::unbounded_channel();
    let child = askers(
        &local.socket,
        engines.len(),
        asks,
        &format!("{tag}local"),
        tx,
    );
    let here = decide_local(&local.approvals, want, &mut replies).await;
    exited(child).await;
    let (tx, mut replies) = mpsc::unbounded_channel();
    let children: Vec<Child> = engines
        .iter()
        .enumerate()
        .map(|(k, e)| askers(&e.socket, 1, asks, &format!("{tag}team{k}"), tx.clone()))
        .collect();
    drop(tx);
    let there = decide_team(team, want, &mut replies).await;
    for c in children {
        exited(c).await;
    }
    (here, there)
}

async fn run(z: Sizes) {
    let pg = Postgres::start();
    let url = pg.url();
    let decider = InProcess::start(Some(&url)).await;
    let team = decider.team.clone().expect("[storage] url starts the link");
    let mut engines = Vec::new();
    for _ in 0..z.engines {
        engines.push(Serve::start(Some(&url)).await);
    }
    let alone = Serve::start(None).await;
    let local = InProcess::start(None).await;
    all_online(&team, z.engines + 1).await;
    let pool = sqlx::PgPool::connect(&url).await.expect("team database");
    let team_sockets: Vec<&Path> = engines.iter().map(|e| e.socket.as_path()).collect();
    // The engine alone gets its load from as many agent processes.
    let alone_sockets = vec![alone.socket.as_path(); z.engines];

    println!(
        "{} engines (`toolgate serve` processes) on one Postgres, beside one engine alone on SQLite; \
         {} round(s), the sides taking turns, after a warm-up",
        z.engines, z.rounds
    );
    println!();

    // Every engine has served calls and decisions before anything counts.
    read_load(&alone_sockets, 1, 20).await;
    read_load(&team_sockets, 1, 20).await;
    decisions(&local, &team, &engines, 2, "warm").await;

    // Audit rows: as many agents and calls on each side.
    let per_side = z.engines * z.readers * z.reads;
    let (mut solo, mut shared) = (Rows::default(), Rows::default());
    let db = alone.audit_db();
    for _ in 0..z.rounds {
        let before = sqlite_rows(&db);
        let (rate, last) = read_load(&alone_sockets, z.readers, z.reads).await;
        let want = before + per_side as i64;
        let done = until_count(want, || std::future::ready(sqlite_rows(&db))).await;
        solo.add(per_side, rate, done - last);

        let before = team_rows(&pool).await;
        let (rate, last) = read_load(&team_sockets, z.readers, z.reads).await;
        let done = until_count(before + per_side as i64, || team_rows(&pool)).await;
        shared.add(per_side, rate, done - last);
    }
    println!(
        "audit rows: {} agents ({} processes) making allowed fs_read calls, {per_side} calls per side per round",
        z.engines * z.readers,
        z.engines,
    );
    println!(
        "{:<52} {:>10} {:>22}",
        "", "calls/s", "all rows stored after"
    );
    println!(
        "{:<52} {:>10.0} {:>19.0} ms",
        "one engine alone, SQLite (rows in its audit.db)",
        solo.rate(),
        solo.worst_lag()
    );
    println!(
        "{:<52} {:>10.0} {:>19.0} ms",
        format!("{} engines, one Postgres (rows in team_calls)", z.engines),
        shared.rate(),
        shared.worst_lag()
    );
    println!(
        "ratio team / alone: {:.2} (calls/s); \"stored after\": from the last answer, worst round",
        shared.rate() / solo.rate()
    );
    println!();

    let (mut here, mut there) = (Times::default(), Times::default());
    for round in 0..z.rounds {
        let (h, t) = decisions(&local, &team, &engines, z.asks, &format!("r{round}")).await;
        here.extend(h);
        there.extend(t);
    }
    println!(
        "decision to agent: {} shell_exec requests per side, decided one at a time, approve and deny in turn",
        z.engines * z.asks * z.rounds
    );
    println!("{:<52} {:>10} {:>10}", "", "p50", "p99");
    let ms = |v: f64| format!("{:.2} ms", v / 1e6);
    let row = |name: &str, v: &[f64]| {
        println!(
            "{name:<52} {:>10} {:>10}",
            ms(pct(v, 0.5)),
            ms(pct(v, 0.99))
        );
    };
    let (here_yes, here_no) = (sorted(here.approve), sorted(here.deny));
    let (there_yes, there_no) = (sorted(there.approve), sorted(there.deny));
    row(
        "local approve (the engine alone; then runs echo)",
        &here_yes,
    );
    row("local deny", &here_no);
    row("team approve (decided from another engine)", &there_yes);
    row("team deny", &there_no);
    let ratio = |a: &[f64], b: &[f64], p: f64| pct(a, p) / pct(b, p);
    println!(
        "ratio team / local: approve p50 {:.2}, p99 {:.2}; deny p50 {:.2}, p99 {:.2}",
        ratio(&there_yes, &here_yes, 0.5),
        ratio(&there_yes, &here_yes, 0.99),
        ratio(&there_no, &here_no, 0.5),
        ratio(&there_no, &here_no, 0.99),
    );

    pool.close().await;
    for e in engines {
        e.stop().await;
    }
    alone.stop().await;
    local.stop().await;
    decider.stop().await;
    drop(pg);
}
