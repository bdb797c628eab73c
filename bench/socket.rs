//! `tools/call` over the agent socket: latency with one client, throughput
//! with 1/8/64 clients, and audit rows per second; side by side with an
//! rmcp server (rmcp's own service loop) answering the same call on a Unix
//! socket, so the figures read as ratios, not absolutes.
//!
//! Run: `cargo bench --bench socket`. Prints a table; no assertions.

// A benchmark binary: printing is its output.
#![allow(missing_docs, clippy::print_stdout)]

/// The allocator the `toolgate` binary ships with (see Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
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
        l.rpc(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#).await;
        l.wr.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
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
        let req = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi","n":{i}}}}}}}"#
        );
        self.rpc(&req).await;
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

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p) as usize]
}

/// p50 and p99 of both servers, measured one call each in turn so that
/// drift in machine load (large on a shared 2-core machine) hits both alike.
async fn latency(a: &Path, b: &Path) -> [(Duration, Duration); 2] {
    let (warmup, calls, _) = sizes();
    let mut conns = [Line::connect(a).await, Line::connect(b).await];
    let mut times = [Vec::with_capacity(calls), Vec::with_capacity(calls)];
    for i in 0..warmup + calls {
        for (c, t) in conns.iter_mut().zip(&mut times) {
            let s = Instant::now();
            c.call(i).await;
            if i >= warmup {
                t.push(s.elapsed());
            }
        }
    }
    times.map(|mut t| {
        t.sort_unstable();
        (pct(&t, 0.5), pct(&t, 0.99))
    })
}

async fn throughput(socket: &Path, clients: usize) -> f64 {
    let per = sizes().2 / clients;
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
}

async fn toolgate_daemon(dir: &Path, audit_dir: &str) -> (PathBuf, CancellationToken) {
    let mut config = Config::default();
    config.builtin.disabled = vec![];
    let opts = ServeOptions {
        socket: dir.join(format!("{audit_dir}.sock")),
        data_dir: dir.join(audit_dir),
        retention: Duration::from_secs(86_400),
        http_port: None,
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let (tg, stop) = toolgate_daemon(dir.path(), "data").await;
        let rm = dir.path().join("rmcp.sock");
        tokio::spawn(rmcp_server(rm.clone()));
        while UnixStream::connect(&rm).await.is_err() {
            tokio::task::yield_now().await;
        }

        let (warmup, latency_calls, throughput_calls) = sizes();
        println!(
            "tools/call over a Unix socket, {latency_calls} sequential calls each after {warmup} warm-up, taking turns"
        );
        println!("{:<44} {:>10} {:>10}", "", "p50", "p99");
        let [(p50, p99), (r50, r99)] = latency(&tg, &rm).await;
        println!(
            "{:<44} {:>8.1}µs {:>8.1}µs",
            "toolgate (full pipeline + audit commit)",
            us(p50),
            us(p99)
        );
        println!(
            "{:<44} {:>8.1}µs {:>8.1}µs",
            "rmcp ServerHandler echo (no governance)",
            us(r50),
            us(r99)
        );
        println!("ratio toolgate / rmcp p50: {:.2}", us(p50) / us(r50));
        println!();
        println!("throughput, {throughput_calls} calls split over N clients (calls/s)");
        println!("{:<44} {:>10} {:>10} {:>10}", "", "1", "8", "64");
        let row = |name: &str, v: [f64; 3]| {
            println!("{name:<44} {:>10.0} {:>10.0} {:>10.0}", v[0], v[1], v[2])
        };
        let t = [
            throughput(&tg, 1).await,
            throughput(&tg, 8).await,
            throughput(&tg, 64).await,
        ];
        row("toolgate", t);
        let r = [
            throughput(&rm, 1).await,
            throughput(&rm, 8).await,
            throughput(&rm, 64).await,
        ];
        row("rmcp echo", r);
        stop.cancel();
        let log = toolgate::audit::AuditLog::open(&dir.path().join("data/audit.db"))
            .await
            .expect("audit");
        let rows = log.recent_calls(i64::MAX).await.expect("rows").len();
        println!();
        println!("audit rows committed during the run: {rows}");
    });
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
