//! A `tools/call` to a stdio MCP server through toolgate (`Engine::call`,
//! the full pipeline) versus the same call from an rmcp client straight to
//! the same kind of server, in one run. Target: toolgate ≤ 1.1× direct.
//!
//! The upstream is this very binary re-executed as a minimal rmcp stdio
//! server with one `echo` tool, so the server's own cost is as small as it
//! gets and toolgate's overhead is as visible as it can be. Each side has
//! its own server process. Two views of the same sides, in one run:
//!
//! - interleaved call by call (direct, toolgate, toolgate+audit, direct,
//!   ...), so drift in machine load hits all alike; every call finds the
//!   caches warmed by the other two sides;
//! - in blocks of [`BLOCK`] calls per side, taking turns: each side runs
//!   warm, as one busy agent would. This view also reports the calling
//!   thread's CPU time per call, which is toolgate's own work apart from
//!   scheduling on shared cores.
//!
//! Every call has distinct arguments (the loop guard would otherwise refuse
//! identical repeats, as it should). Both sides use the daemon's allocator.
//!
//! Run: `cargo bench --bench upstream` (env `ROUNDS`, `CALLS` to change).

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
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

fn server_command() -> tokio::process::Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "upstream".into());
    let mut cmd = tokio::process::Command::new(exe);
    cmd.env(SERVE, "1");
    cmd
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

async fn direct_round(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    calls: usize,
    base: usize,
    out: &mut Vec<Duration>,
) {
    for i in 0..calls {
        let args = match json!({"message": format!("m{}", base + i)}) {
            serde_json::Value::Object(o) => o,
            _ => serde_json::Map::new(),
        };
        let t = Instant::now();
        let r = client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
            .await;
        out.push(t.elapsed());
        assert!(r.is_ok(), "direct call failed: {r:?}");
    }
}

async fn toolgate_round(
    engine: &Engine,
    session: &Session,
    calls: usize,
    base: usize,
    out: &mut Vec<Duration>,
    stages: &mut StageTimes,
) {
    for i in 0..calls {
        // Arguments are made before the clock starts, as for the direct side.
        let args = json!({"message": format!("m{}", base + i)});
        let t = Instant::now();
        let r = engine.call(session, "bench__echo", args).await;
        out.push(t.elapsed());
        assert!(r.result.is_ok(), "toolgate call failed: {:?}", r.result);
        stages.add(&r.trace);
    }
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

async fn toolgate_engine(audit: Option<AuditLog>, pins: PinStore) -> (Engine, Upstreams) {
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
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spec = ServerSpec::new(
        "bench",
        TransportSpec::Stdio {
            command: exe,
            args: vec![],
            env: [(SERVE.to_owned(), "1".to_owned())].into_iter().collect(),
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

async fn bench(rounds: usize, calls: usize) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let audit = AuditLog::open(&dir.path().join("bench.db"))
        .await
        .unwrap_or_else(|e| panic!("audit: {e}"));
    let pins = PinStore::open(audit.pool().clone())
        .await
        .unwrap_or_else(|e| panic!("pins: {e}"));

    let (transport, _) = TokioChildProcess::builder(server_command())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let direct = ().serve(transport).await.unwrap_or_else(|e| panic!("direct: {e}"));
    let (plain, up_plain) = toolgate_engine(None, pins.clone()).await;
    let (audited, up_audited) = toolgate_engine(Some(audit), pins).await;
    let session = Session::new("bench", Caller::via("bench"));

    // Warm-up: first calls pay for lazy initialisation on both sides.
    let mut sink = Vec::new();
    direct_round(direct.peer(), 200, 0, &mut sink).await;
    let mut ignored = StageTimes::default();
    toolgate_round(&plain, &session, 200, 0, &mut sink, &mut ignored).await;
    toolgate_round(&audited, &session, 200, 0, &mut sink, &mut ignored).await;

    let sides = Sides {
        direct: direct.peer(),
        plain: &plain,
        audited: &audited,
        session: &session,
    };
    let n = rounds * calls;
    // Interleaved call by call, so load changes (2 shared cores) and the
    // audit writer's background work hit all three alike.
    let mut lat = [const { Vec::new() }; 3];
    let mut stages: [StageTimes; 3] = Default::default();
    for i in 0..n {
        for (k, out) in lat.iter_mut().enumerate() {
            out.push(sides.call(k, 1_000_000 + i, &mut stages[k]).await);
        }
    }
    println!("tools/call echo to a stdio rmcp server: {n} sequential calls each");
    println!("-- interleaved call by call (every call finds the caches of the other two)");
    let _ = table(&mut lat);
    // In blocks of BLOCK calls per side, taking turns: each side runs warm,
    // as one busy agent would. The main thread's CPU time per call shows
    // the work toolgate adds, apart from scheduling on the shared cores.
    let mut lat = [const { Vec::new() }; 3];
    let mut stages: [StageTimes; 3] = Default::default();
    let mut cpu = [Duration::ZERO; 3];
    let block = BLOCK.min(n);
    for b in 0..n.div_ceil(block) {
        for (k, out) in lat.iter_mut().enumerate() {
            let before = thread_cpu();
            for i in 0..block {
                let n = 2_000_000_000 + b * block + i;
                out.push(sides.call(k, n, &mut stages[k]).await);
            }
            cpu[k] += thread_cpu().saturating_sub(before);
        }
    }
    println!("-- in blocks of {block} calls per side, taking turns");
    let direct_mean = table(&mut lat);
    let per_call = |k: usize| us(cpu[k]) / (n.div_ceil(block) * block) as f64;
    println!(
        "calling thread CPU per call: direct {:.1} µs, toolgate {:.1} µs (no audit), {:.1} µs (audited)",
        per_call(0),
        per_call(1),
        per_call(2)
    );
    println!(
        "own µs per call by stage, outermost first (execute = the upstream call, direct: {:.1} mean)",
        direct_mean
    );
    println!("  toolgate (no audit log): {}", stages[1].line());
    println!("  toolgate (audit log):    {}", stages[2].line());
    up_plain.shutdown().await;
    up_audited.shutdown().await;
    let _ = direct.cancel().await;
}

/// Calls per side in a row in the block phase.
const BLOCK: usize = 500;

/// The three ways of making the same call: 0 direct, 1 toolgate without
/// an audit log, 2 toolgate with one.
struct Sides<'a> {
    direct: &'a rmcp::service::Peer<rmcp::RoleClient>,
    plain: &'a Engine,
    audited: &'a Engine,
    session: &'a Session,
}

impl Sides<'_> {
    /// One call by side `k` with a message unique to `n` (the loop guard
    /// would refuse identical repeats, as it should); returns its latency
    /// and adds toolgate's stage timings to `stages`.
    async fn call(&self, k: usize, n: usize, stages: &mut StageTimes) -> Duration {
        let mut out = Vec::with_capacity(1);
        match k {
            0 => direct_round(self.direct, 1, n, &mut out).await,
            1 => toolgate_round(self.plain, self.session, 1, n, &mut out, stages).await,
            _ => toolgate_round(self.audited, self.session, 1, n, &mut out, stages).await,
        }
        out.pop().unwrap_or_default()
    }
}

/// Prints the three sides' latencies and toolgate's ratios to direct;
/// returns the direct side's mean in µs.
fn table(lat: &mut [Vec<Duration>; 3]) -> f64 {
    let [d, p, a] = lat;
    let (d50, dmean) = report("direct rmcp client", &mut Stats(std::mem::take(d)));
    let (p50, pmean) = report("toolgate (no audit log)", &mut Stats(std::mem::take(p)));
    let (a50, amean) = report("toolgate (audit log, WAL)", &mut Stats(std::mem::take(a)));
    println!(
        "ratio toolgate/direct: p50 {:.3}x  mean {:.3}x  (no audit)   p50 {:.3}x  mean {:.3}x  (audited)",
        p50 / d50,
        pmean / dmean,
        a50 / d50,
        amean / dmean
    );
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
    // smoke pass so the bench keeps working.
    let (rounds, calls) = if std::env::args().any(|a| a == "--bench") {
        (env_usize("ROUNDS", 5), env_usize("CALLS", 2000))
    } else {
        (1, 10)
    };
    rt.block_on(bench(rounds, calls));
}
