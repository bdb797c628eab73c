//! A `tools/call` to a stdio MCP server through toolgate (`Engine::call`,
//! the full pipeline) versus the same call from an rmcp client straight to
//! the same kind of server, in one run. Target: toolgate ≤ 1.1× direct.
//!
//! Two servers, each with one `echo` tool: this very binary re-executed as
//! a minimal rmcp server, so the server's own cost is as small as it gets
//! and toolgate's overhead is as visible as it can be; then npm's
//! server-everything (the integration tests' reference server) when
//! `scripts/setup-test-deps` has installed it. Each side has its own
//! server process. Two views of the same sides, in one run:
//!
//! - interleaved call by call, in an order where each side follows each
//!   other side equally often, so drift in machine load and the after-
//!   effects of one side's call on the next hit all alike; every call
//!   finds the caches warmed by the other two;
//! - in blocks of [`BLOCK`] calls per side, taking turns: each side runs
//!   warm, as one busy agent would. This view also reports the calling
//!   thread's CPU time per call, which is toolgate's own work apart from
//!   scheduling on shared cores.
//!
//! A fourth side in the block view, the direct client followed by
//! appending a line of an audit row's size to a file, shows what any
//! record made durable before the reply costs on this machine with no
//! toolgate code at all. Each toolgate side also reports its stages' own
//! times per call, from the timings every reply carries. Ratios come with
//! the p50 difference in µs: the round trip itself varies with the load
//! on this shared machine, toolgate's added time much less.
//!
//! Every call has distinct arguments (the loop guard would otherwise refuse
//! identical repeats, as it should). All sides use the daemon's allocator.
//!
//! Run: `cargo bench --bench upstream` (env `ROUNDS`, `CALLS` to change).
//! With `SPAWN=1` the calls run in a spawned task on a runtime worker, as
//! the daemon runs an agent's calls, instead of on `block_on`'s thread:
//! the direct client's round trip is faster there (its wake-ups stay on one
//! worker), toolgate's added time about the same, so the ratios are higher.
//! The calling thread's CPU is not reported then (a task moves between
//! workers).

#![allow(missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use toolgate::Engine;
use toolgate::audit::AuditLog;
use toolgate::config::Config;
use toolgate::config::servers::{ServerSpec, TransportSpec};
use toolgate::context::{Caller, Session};
use toolgate::events::StageName;
use toolgate::upstream::{PinStore, ServerState, UpstreamOptions, Upstreams};

/// The allocator the `toolgate` binary ships with (see Cargo.toml), for
/// both sides alike.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const SERVE: &str = "TOOLGATE_BENCH_SERVE";

#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = match json!({"type": "object", "properties": {"message": {"type": "string"}}})
        {
            serde_json::Value::Object(o) => Arc::new(o),
            _ => Arc::default(),
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo", "Echoes.", schema,
        )]))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let m = req
            .arguments
            .and_then(|a| a.get("message").and_then(|m| m.as_str()).map(str::to_owned))
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(m)]).into())
    }
}

/// A stdio server both sides call, and how to start it.
#[derive(Clone)]
struct Server {
    /// What the report calls it.
    label: &'static str,
    command: String,
    args: Vec<String>,
    env: std::collections::BTreeMap<String, String>,
}

impl Server {
    /// This binary as a minimal rmcp server: toolgate's overhead as
    /// visible as it can be.
    fn minimal() -> Self {
        let exe = std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            label: "a minimal rmcp server (this binary)",
            command: exe,
            args: vec![],
            env: [(SERVE.to_owned(), "1".to_owned())].into_iter().collect(),
        }
    }

    /// npm's server-everything (its `echo` tool), the reference server
    /// the integration tests use, if `scripts/setup-test-deps` installed
    /// it: a real server's round trip for comparison.
    fn everything() -> Option<Self> {
        let js = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "tests/fixtures/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        );
        js.is_file().then(|| Self {
            label: "npm server-everything (node)",
            command: "node".to_owned(),
            args: vec![js.to_string_lossy().into_owned(), "stdio".to_owned()],
            env: Default::default(),
        })
    }

    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.command);
        cmd.args(&self.args).envs(&self.env);
        cmd
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Stats(Vec<Duration>);

impl Stats {
    fn pct(&mut self, p: f64) -> Duration {
        self.0.sort_unstable();
        let i = ((self.0.len() as f64 - 1.0) * p).round() as usize;
        self.0.get(i).copied().unwrap_or_default()
    }

    fn mean(&self) -> Duration {
        let n = u32::try_from(self.0.len().max(1)).unwrap_or(u32::MAX);
        self.0.iter().sum::<Duration>() / n
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The echo arguments for call `n`, made before any clock starts.
fn echo_args(n: usize) -> serde_json::Map<String, serde_json::Value> {
    match json!({"message": format!("m{n}")}) {
        serde_json::Value::Object(o) => o,
        _ => serde_json::Map::new(),
    }
}

/// One call from an rmcp client straight to the server; its latency.
async fn direct_call(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    args: serde_json::Map<String, serde_json::Value>,
) -> Duration {
    let t = Instant::now();
    let r = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
        .await;
    let latency = t.elapsed();
    assert!(r.is_ok(), "direct call failed: {r:?}");
    latency
}

/// One call through toolgate; its latency. Adds the call's stage timings
/// to `stages`.
async fn toolgate_call(
    engine: &Engine,
    session: &Session,
    args: serde_json::Map<String, serde_json::Value>,
    stages: &mut StageTimes,
) -> Duration {
    let args = serde_json::Value::Object(args);
    let t = Instant::now();
    let r = engine.call(session, "bench__echo", args).await;
    let latency = t.elapsed();
    assert!(r.result.is_ok(), "toolgate call failed: {:?}", r.result);
    stages.add(&r.trace);
    latency
}

/// Each stage's own time (its time minus the stages inside it), summed
/// over calls, from the stage timings every reply carries.
#[derive(Default)]
struct StageTimes {
    own: Vec<(StageName, Duration)>,
    calls: u32,
}

impl StageTimes {
    fn add(&mut self, trace: &[(StageName, Duration)]) {
        // Innermost first; each stage's time includes the ones before it.
        let mut inner = Duration::ZERO;
        for (i, (name, t)) in trace.iter().enumerate() {
            if self.own.len() <= i {
                self.own.push((*name, Duration::ZERO));
            }
            self.own[i].1 += t.saturating_sub(inner);
            inner = *t;
        }
        self.calls += 1;
    }

    /// "allowlist 0.7, hooks 0.2, ..., execute 171.3" in µs per call,
    /// outermost first.
    fn line(&self) -> String {
        let per_call = |d: Duration| us(d / self.calls.max(1));
        let parts: Vec<String> = self
            .own
            .iter()
            .rev()
            .map(|(name, d)| format!("{} {:.1}", name.as_str(), per_call(*d)))
            .collect();
        parts.join(", ")
    }
}

async fn toolgate_engine(
    audit: Option<AuditLog>,
    pins: PinStore,
    server: &Server,
) -> (Engine, Upstreams) {
    // The benchmark measures the path, not a person: let external tools run.
    let config = Config::parse(
        "[policy]\npreset = \"autonomous\"\n",
        std::path::Path::new("bench.toml"),
    )
    .unwrap_or_else(|e| panic!("config: {e}"));
    let mut b = Engine::builder(config);
    if let Some(a) = audit {
        b = b.audit(a);
    }
    let engine = b.build();
    let up = Upstreams::new(engine.clone(), pins, UpstreamOptions::default());
    let spec = ServerSpec::new(
        "bench",
        TransportSpec::Stdio {
            command: server.command.clone(),
            args: server.args.clone(),
            env: server.env.clone(),
            cwd: None,
        },
    );
    up.apply(vec![spec]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while up
        .status("bench")
        .is_none_or(|s| s.state != ServerState::Ready)
    {
        assert!(
            Instant::now() < deadline,
            "bench server not ready: {:?}",
            up.status("bench")
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (engine, up)
}

fn report(name: &str, s: &mut Stats) -> (f64, f64) {
    let (p50, p99, mean) = (us(s.pct(0.5)), us(s.pct(0.99)), us(s.mean()));
    println!(
        "{name:<28} p50 {p50:8.1} µs   p99 {p99:8.1} µs   mean {mean:8.1} µs   (n={})",
        s.0.len()
    );
    (p50, mean)
}

async fn bench(rounds: usize, calls: usize, server: &Server, spawned: bool) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let audit = AuditLog::open(&dir.path().join("bench.db"))
        .await
        .unwrap_or_else(|e| panic!("audit: {e}"));
    let pins = PinStore::open(audit.pool().clone())
        .await
        .unwrap_or_else(|e| panic!("pins: {e}"));

    // Every side has its own server process, so in the interleaved view
    // no side finds a server its predecessor just warmed.
    let direct = direct_client(server).await;
    let journaled = direct_client(server).await;
    let (plain, up_plain) = toolgate_engine(None, pins.clone(), server).await;
    let (audited, up_audited) = toolgate_engine(Some(audit), pins, server).await;
    let journal = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("floor.jsonl"))
        .unwrap_or_else(|e| panic!("journal: {e}"));
    let sides = Sides {
        direct: direct.peer(),
        journaled: journaled.peer(),
        plain: &plain,
        audited: &audited,
        session: Session::new("bench", Caller::via("bench")),
        journal,
    };

    // Warm-up: first calls pay for lazy initialisation on every side.
    let mut ignored = StageTimes::default();
    for side in Side::ALL {
        for i in 0..200 {
            let _ = sides.call(side, i, &mut ignored).await;
        }
    }
    let n = rounds * calls;
    // Interleaved call by call, so load changes (2 shared cores) and the
    // audit writer's background work hit all sides alike. What a call
    // finds depends on the call before it (the audited side's journal
    // write slows whatever upstream call comes next), so the order walks
    // every ordered pair of different sides once per cycle: each side
    // follows each other side equally often. (Rotating one fixed order
    // does not: the first side would always follow the last.) The floor
    // side is left out here: a fourth side would make every call colder
    // than this view measures.
    let mut lat = [const { Vec::new() }; Side::ALL.len()];
    for i in 0..n * 3 {
        let side = INTERLEAVED[i % INTERLEAVED.len()];
        let latency = sides.call(side, 1_000_000 + i, &mut ignored).await;
        lat[side as usize].push(latency);
    }
    let harness = if spawned {
        "in a spawned task"
    } else {
        "on block_on's thread"
    };
    println!(
        "tools/call echo to {} over stdio: {n} sequential calls each, {harness}",
        server.label
    );
    println!("-- interleaved call by call (every call finds the caches of the other two)");
    let _ = table(&mut lat);
    // In blocks of BLOCK calls per side, taking turns: each side runs warm,
    // as one busy agent would. The main thread's CPU time per call shows
    // the work toolgate adds, apart from scheduling on the shared cores.
    let mut lat = [const { Vec::new() }; Side::ALL.len()];
    let mut stages: [StageTimes; Side::ALL.len()] = Default::default();
    let mut cpu = [Duration::ZERO; Side::ALL.len()];
    let block = BLOCK.min(n);
    for b in 0..n.div_ceil(block) {
        for side in Side::ALL {
            let k = side as usize;
            let before = thread_cpu();
            for i in 0..block {
                let n = 2_000_000_000 + b * block + i;
                lat[k].push(sides.call(side, n, &mut stages[k]).await);
            }
            cpu[k] += thread_cpu().saturating_sub(before);
        }
    }
    println!("-- in blocks of {block} calls per side, taking turns");
    let direct_mean = table(&mut lat);
    let per_call = |side: Side| us(cpu[side as usize]) / (n.div_ceil(block) * block) as f64;
    if !spawned {
        let cpu_line: Vec<String> = Side::ALL
            .iter()
            .map(|&side| format!("{} {:.1} µs", side.label(), per_call(side)))
            .collect();
        println!("calling thread CPU per call: {}", cpu_line.join(", "));
    }
    println!(
        "own µs per call by stage, outermost first (execute = the upstream call, direct: {direct_mean:.1} mean)"
    );
    for side in [Side::Plain, Side::Audited] {
        println!("  {:<28} {}", side.label(), stages[side as usize].line());
    }
    up_plain.shutdown().await;
    up_audited.shutdown().await;
    let _ = direct.cancel().await;
    let _ = journaled.cancel().await;
}

/// An rmcp client with its own server process.
async fn direct_client(server: &Server) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    // Its stderr goes nowhere, as toolgate's goes to a log buffer.
    let (transport, _) = TokioChildProcess::builder(server.command())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    ().serve(transport)
        .await
        .unwrap_or_else(|e| panic!("direct: {e}"))
}

/// The interleaved view's order, repeated: D→P, P→A, A→D, D→A, A→P and
/// (wrapping round) P→D, every ordered pair of different sides once, and
/// each side twice per cycle.
const INTERLEAVED: [Side; 6] = [
    Side::Direct,
    Side::Plain,
    Side::Audited,
    Side::Direct,
    Side::Audited,
    Side::Plain,
];

/// Calls per side in a row in the block phase.
const BLOCK: usize = 500;

/// The ways of making the same call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// An rmcp client straight to the server.
    Direct,
    /// The same, then a line of an audit row's size appended to a file:
    /// the least any durable record before the reply costs, with no
    /// toolgate code at all.
    DirectJournaled,
    /// Through toolgate without an audit log.
    Plain,
    /// Through toolgate with one (as the daemon runs).
    Audited,
}

impl Side {
    const ALL: [Side; 4] = [
        Side::Direct,
        Side::DirectJournaled,
        Side::Plain,
        Side::Audited,
    ];

    fn label(self) -> &'static str {
        match self {
            Side::Direct => "direct rmcp client",
            Side::DirectJournaled => "direct + journal append",
            Side::Plain => "toolgate (no audit log)",
            Side::Audited => "toolgate (audit log, WAL)",
        }
    }
}

struct Sides<'a> {
    direct: &'a rmcp::service::Peer<rmcp::RoleClient>,
    /// The direct-journaled side's client (its own server).
    journaled: &'a rmcp::service::Peer<rmcp::RoleClient>,
    plain: &'a Engine,
    audited: &'a Engine,
    session: Session,
    /// The direct-journaled side's file.
    journal: std::fs::File,
}

/// The size of an audit journal line for these calls, about.
const LINE: usize = 640;

impl Sides<'_> {
    /// One call by `side` with a message unique to `n` (the loop guard
    /// would refuse identical repeats, as it should); returns its latency
    /// and adds toolgate's stage timings to `stages`.
    async fn call(&self, side: Side, n: usize, stages: &mut StageTimes) -> Duration {
        // Everything but the call itself is made before any clock starts.
        let args = echo_args(n);
        match side {
            Side::Direct => direct_call(self.direct, args).await,
            Side::DirectJournaled => {
                let mut line = format!("[{n},\"{}\"", "x".repeat(LINE)).into_bytes();
                line.truncate(LINE - 1);
                line.push(b'\n');
                let t = Instant::now();
                direct_call(self.journaled, args).await;
                std::io::Write::write_all(&mut &self.journal, &line)
                    .unwrap_or_else(|e| panic!("journal: {e}"));
                t.elapsed()
            }
            Side::Plain => toolgate_call(self.plain, &self.session, args, stages).await,
            Side::Audited => toolgate_call(self.audited, &self.session, args, stages).await,
        }
    }
}

/// Prints each side's latencies and its ratios to direct; returns the
/// direct side's mean in µs.
fn table(lat: &mut [Vec<Duration>; Side::ALL.len()]) -> f64 {
    let mut figures = [(0.0, 0.0); Side::ALL.len()];
    let ran: Vec<Side> = Side::ALL
        .into_iter()
        .filter(|&side| !lat[side as usize].is_empty())
        .collect();
    for &side in &ran {
        let samples = std::mem::take(&mut lat[side as usize]);
        figures[side as usize] = report(side.label(), &mut Stats(samples));
    }
    let (d50, dmean) = figures[Side::Direct as usize];
    for &side in ran.iter().filter(|&&side| side != Side::Direct) {
        let (p50, mean) = figures[side as usize];
        println!(
            "  ratio to direct: p50 {:.3}x ({:+.1} µs)  mean {:.3}x  {}",
            p50 / d50,
            p50 - d50,
            mean / dmean,
            side.label()
        );
    }
    dmean
}

/// CPU time the calling thread has used so far (Linux schedstat; zero
/// where it cannot be read, which only blanks the CPU line).
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    if std::env::var_os(SERVE).is_some() {
        rt.block_on(async {
            if let Ok(s) = Echo.serve(rmcp::transport::stdio()).await {
                let _ = s.waiting().await;
            }
        });
        return;
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs a short
    // smoke pass of both harnesses so the bench keeps working.
    let spawn = std::env::var_os("SPAWN").is_some_and(|v| v == "1");
    let (rounds, calls, harnesses) = if std::env::args().any(|a| a == "--bench") {
        (
            env_usize("ROUNDS", 5),
            env_usize("CALLS", 2000),
            vec![spawn],
        )
    } else {
        (1, 10, vec![false, true])
    };
    let servers = [Some(Server::minimal()), Server::everything()];
    for (server, spawned) in servers
        .iter()
        .flatten()
        .flat_map(|s| harnesses.iter().map(move |&h| (s, h)))
    {
        if spawned {
            let server = server.clone();
            rt.block_on(async move {
                tokio::spawn(async move { bench(rounds, calls, &server, true).await })
                    .await
                    .unwrap_or_else(|e| panic!("bench task: {e}"))
            });
        } else {
            rt.block_on(bench(rounds, calls, server, false));
        }
    }
    if servers[1].is_none() {
        println!(
            "(server-everything is not installed: run scripts/setup-test-deps to compare with it)"
        );
    }
}
