//! `tools/call` over the agent socket: latency with one client, throughput
//! with 1/8/64 clients, and audit rows per second; side by side with an
//! rmcp server (rmcp's own service loop) answering the same call on a Unix
//! socket, so the figures read as ratios, not absolutes.
//!
//! The servers run in this process; the clients run in a child process
//! (this binary again), as agents do: a blocking client for latency, one
//! single-threaded tokio loop driving N connections for throughput.
//!
//! Run: `cargo bench --bench socket`. Prints a table; no assertions.

// A benchmark binary: printing is its output.
#![allow(missing_docs, clippy::print_stdout)]

/// The allocator the `toolgate` binary ships with (see Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ListToolsResult, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use toolgate::config::Config;
use toolgate::daemon::{Daemon, ServeOptions};
use toolgate::mcp::ServerOptions;
use toolgate::tool::{JsonObject, ToolDef, ToolName, ToolResult};

/// Set in the child process that plays the clients.
const CLIENT: &str = "TOOLGATE_BENCH_CLIENT";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call_line(i: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi","n":{i}}}}}}}"#
    )
}

/// Full sizes under `cargo bench`; a quick smoke run under `cargo test`
/// (which runs bench targets without `--bench`).
fn sizes() -> (usize, usize, usize) {
    if std::env::args().any(|a| a == "--bench") {
        (2_000, 20_000, 40_000)
    } else {
        (20, 200, 640)
    }
}

struct Line {
    rd: BufReader<tokio::net::unix::OwnedReadHalf>,
    wr: tokio::net::unix::OwnedWriteHalf,
    buf: String,
}

impl Line {
    async fn connect(p: &Path) -> Self {
        let (rd, wr) = UnixStream::connect(p).await.expect("connect").into_split();
        let mut l = Self {
            rd: BufReader::new(rd),
            wr,
            buf: String::new(),
        };
        l.rpc(INITIALIZE).await;
        l.wr.write_all(format!("{INITIALIZED}\n").as_bytes())
            .await
            .expect("write");
        l
    }

    async fn rpc(&mut self, line: &str) {
        self.wr.write_all(line.as_bytes()).await.expect("write");
        self.wr.write_all(b"\n").await.expect("write");
        loop {
            self.buf.clear();
            self.rd.read_line(&mut self.buf).await.expect("read");
            if self.buf.contains("\"id\"") {
                return;
            }
        }
    }

    async fn call(&mut self, i: usize) {
        self.rpc(&call_line(i)).await;
    }
}

/// The same client over a blocking socket, for latency: no runtime between
/// the client and the kernel.
struct BlockingLine {
    rd: std::io::BufReader<std::os::unix::net::UnixStream>,
    wr: std::os::unix::net::UnixStream,
    buf: String,
}

impl BlockingLine {
    fn connect(p: &Path) -> Self {
        let s = std::os::unix::net::UnixStream::connect(p).expect("connect");
        let mut l = Self {
            rd: std::io::BufReader::new(s.try_clone().expect("clone")),
            wr: s,
            buf: String::new(),
        };
        l.rpc(INITIALIZE);
        l.wr.write_all(format!("{INITIALIZED}\n").as_bytes())
            .expect("write");
        l
    }

    fn rpc(&mut self, line: &str) {
        self.wr
            .write_all(format!("{line}\n").as_bytes())
            .expect("write");
        loop {
            self.buf.clear();
            self.rd.read_line(&mut self.buf).expect("read");
            if self.buf.contains("\"id\"") {
                return;
            }
        }
    }
}

fn echo_def() -> (ToolDef, Arc<dyn toolgate::tool::Tool>) {
    let schema: JsonObject = serde_json::from_value(json!({"type": "object",
        "properties": {"text": {"type": "string"}, "n": {"type": "integer"}}, "required": ["text"]}))
    .expect("schema");
    let def = ToolDef::new(ToolName::new("echo").expect("name"), "Echoes.", schema);
    let tool: Arc<dyn toolgate::tool::Tool> =
        Arc::new(|a: serde_json::Value, _: &toolgate::context::CallContext| {
            Box::pin(async move {
                Ok(ToolResult::text(
                    a["text"].as_str().unwrap_or_default().to_owned(),
                ))
            }) as futures::future::BoxFuture<'static, _>
        });
    (def, tool)
}

#[derive(Clone)]
struct RmcpEcho;

impl ServerHandler for RmcpEcho {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<rmcp::model::PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).expect("schema");
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Echoes.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let text = req
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or("")
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

async fn rmcp_server(path: PathBuf) {
    let listener = UnixListener::bind(&path).expect("bind");
    loop {
        let (s, _) = listener.accept().await.expect("accept");
        tokio::spawn(async move {
            if let Ok(svc) = RmcpEcho.serve(s).await {
                let _ = svc.waiting().await;
            }
        });
    }
}

/// The floor: a line echo with no MCP at all. It answers each request
/// line with a fixed result carrying the request's id, so what it costs is
/// the socket round trip and tokio's scheduling, nothing else.
async fn floor_server(path: PathBuf) {
    let listener = UnixListener::bind(&path).expect("bind");
    loop {
        let (s, _) = listener.accept().await.expect("accept");
        tokio::spawn(async move {
            let (rd, mut wr) = s.into_split();
            let mut lines = BufReader::new(rd).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(at) = line.find(r#""id":"#) else {
                    continue;
                };
                let id: String = line[at + 5..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                let reply = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"hi"}}]}}}}"#
                );
                if wr.write_all(format!("{reply}\n").as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p) as usize]
}

/// Child side of the latency run: one call to each server in turn, so
/// that drift in machine load (large on a shared 2-core machine) hits all
/// alike. Prints p50 and p99 in ns for each server.
fn latency_client(sockets: &[String]) {
    let (warmup, calls, _) = sizes();
    let mut conns: Vec<_> = sockets
        .iter()
        .map(|s| BlockingLine::connect(Path::new(s)))
        .collect();
    let mut times = vec![Vec::with_capacity(calls); conns.len()];
    for i in 0..warmup + calls {
        for (c, t) in conns.iter_mut().zip(&mut times) {
            let s = Instant::now();
            c.rpc(&call_line(i));
            if i >= warmup {
                t.push(s.elapsed());
            }
        }
    }
    for mut t in times {
        t.sort_unstable();
        print!("{} {} ", pct(&t, 0.5).as_nanos(), pct(&t, 0.99).as_nanos());
    }
}

/// Child side of a throughput run: `clients` connections driven by one
/// thread. Prints calls per second.
fn throughput_client(socket: &Path, clients: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let per = sizes().2 / clients;
    let rate = rt.block_on(async {
        let mut conns = Vec::new();
        for _ in 0..clients {
            conns.push(Line::connect(socket).await);
        }
        let start = Instant::now();
        let tasks: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(k, mut c)| {
                tokio::spawn(async move {
                    for i in 0..per {
                        c.call(k * per + i).await;
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("client");
        }
        (per * clients) as f64 / start.elapsed().as_secs_f64()
    });
    print!("{rate}");
}

/// Runs this binary as the client process; returns what it printed.
async fn client(args: &[&str]) -> Vec<f64> {
    let exe = std::env::current_exe().expect("exe");
    let mut cmd = Command::new(exe);
    cmd.env(CLIENT, "1").args(args);
    if std::env::args().any(|a| a == "--bench") {
        cmd.arg("--bench");
    }
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("client process");
    assert!(out.status.success(), "client failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|v| v.parse().expect("number"))
        .collect()
}

fn child_main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    match args.get(1).map(String::as_str) {
        Some("latency") => latency_client(&args[2..]),
        Some("throughput") => {
            throughput_client(Path::new(&args[2]), args[3].parse().expect("clients"))
        }
        other => panic!("unknown client mode {other:?}"),
    }
    std::io::stdout().flush().expect("flush");
}

async fn toolgate_daemon(dir: &Path, audit_dir: &str) -> (PathBuf, CancellationToken) {
    let mut config = Config::default();
    config.builtin.disabled = vec![];
    let opts = ServeOptions {
        socket: dir.join(format!("{audit_dir}.sock")),
        data_dir: dir.join(audit_dir),
        retention: Duration::from_secs(86_400),
        http_port: None,
        mode: toolgate::control::EngineMode::Serve,
        warden: None,
        // The benchmark's clients are this binary too: none is a bridge.
        bridges: toolgate::socket::BridgeExes::none(),
    };
    // The loop guard would rightly stop a benchmark that repeats calls; the
    // arguments differ on every call, as in real use.
    let daemon = Daemon::start_with(config, &opts, ServerOptions::default())
        .await
        .expect("daemon");
    let (def, tool) = echo_def();
    daemon
        .engine()
        .registry()
        .register(def, tool)
        .expect("register");
    let stop = CancellationToken::new();
    let path = daemon.socket_path().to_owned();
    tokio::spawn(daemon.run(stop.clone()));
    (path, stop)
}

fn main() {
    if std::env::var_os(CLIENT).is_some() {
        child_main();
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let (tg, stop) = toolgate_daemon(dir.path(), "data").await;
        let rm = dir.path().join("rmcp.sock");
        tokio::spawn(rmcp_server(rm.clone()));
        let floor = dir.path().join("floor.sock");
        tokio::spawn(floor_server(floor.clone()));
        for s in [&rm, &floor] {
            while UnixStream::connect(s).await.is_err() {
                tokio::task::yield_now().await;
            }
        }

        let (warmup, latency_calls, throughput_calls) = sizes();
        println!(
            "tools/call over a Unix socket, {latency_calls} sequential calls each after {warmup} warm-up, taking turns"
        );
        println!("{:<44} {:>10} {:>10}", "", "p50", "p99");
        let (tgs, rms, fls) = (
            tg.to_string_lossy(),
            rm.to_string_lossy(),
            floor.to_string_lossy(),
        );
        let l = client(&["latency", &tgs, &rms, &fls]).await;
        let names = [
            "toolgate (full pipeline + audit commit)",
            "rmcp ServerHandler echo (no governance)",
            "line echo, no MCP (the floor)",
        ];
        for (name, v) in names.iter().zip(l.chunks(2)) {
            println!("{name:<44} {:>8.1}µs {:>8.1}µs", v[0] / 1e3, v[1] / 1e3);
        }
        println!(
            "p50 ratios: toolgate / rmcp {:.2}, toolgate / floor {:.2}, rmcp / floor {:.2}",
            l[0] / l[2],
            l[0] / l[4],
            l[2] / l[4]
        );
        println!();
        println!("throughput, {throughput_calls} calls split over N clients (calls/s)");
        println!("{:<44} {:>10} {:>10} {:>10}", "", "1", "8", "64");
        let row = |name: &str, v: [f64; 3]| {
            println!("{name:<44} {:>10.0} {:>10.0} {:>10.0}", v[0], v[1], v[2])
        };
        for (name, socket) in [("toolgate", &tgs), ("rmcp echo", &rms), ("floor", &fls)] {
            let mut v = [0.0; 3];
            for (slot, n) in v.iter_mut().zip(["1", "8", "64"]) {
                *slot = client(&["throughput", socket, n]).await[0];
            }
            row(name, v);
        }
        stop.cancel();
        let log = toolgate::audit::AuditLog::open(&dir.path().join("data/audit.db"))
            .await
            .expect("audit");
        let rows = log.recent_calls(i64::MAX).await.expect("rows").len();
        println!();
        println!("audit rows committed during the run: {rows}");
    });
}
