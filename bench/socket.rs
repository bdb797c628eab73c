//! `tools/call` over the agent socket: latency with one client, throughput
//! with 1/8/64 clients, and audit rows per second; side by side with an
//! rmcp server (rmcp's own service loop) answering the same call on a Unix
//! socket, so the figures read as ratios, not absolutes.
//!
//! Two calls are measured: an `echo` tool (toolgate against rmcp's loop and
//! a bare line echo), and the built-in `fs_read` of a 4 KiB text file
//! against `bench/fs_read_server.py`, a minimal ungoverned Python server
//! answering the same `tools/call` by reading the same file (started by
//! this bench; needs `python3`, standard library only).
//!
//! The servers run in this process; the clients run in a child process
//! (this binary again), as agents do: a blocking client for latency, one
//! single-threaded tokio loop driving N connections for throughput.
//!
//! Run: `cargo bench --bench socket`. Prints a table; no assertions.
//! `LATENCY_ONLY=1` stops after the latency and CPU tables; `PAGE_BYTES=N` reads a
//! page of about N bytes instead of 4000.

// A benchmark binary: printing is its output.
#![allow(missing_docs, clippy::print_stdout)]

/// The allocator the `toolgate` binary ships with (see Cargo.toml).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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

/// The file both `fs_read` sides read, relative to their root.
const PAGE: &str = "page.txt";

/// Which call a client makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The `echo` tool.
    Echo,
    /// `fs_read` of [`PAGE`].
    FsRead,
}

impl Kind {
    /// `echo:PATH` / `fs:PATH` on the client's command line.
    fn parse(arg: &str) -> (Self, &str) {
        match arg.split_once(':') {
            Some(("echo", p)) => (Self::Echo, p),
            Some(("fs", p)) => (Self::FsRead, p),
            _ => panic!("bad client target {arg}"),
        }
    }

    fn arg(self, socket: &Path) -> String {
        let k = match self {
            Self::Echo => "echo",
            Self::FsRead => "fs",
        };
        format!("{k}:{}", socket.display())
    }
}

/// Arguments differ on every call, as in real use (the loop guard would
/// rightly stop a benchmark repeating one call); `max_bytes` stays above
/// the file's size, so every `fs_read` returns the whole file.
fn call_line(kind: Kind, i: usize) -> String {
    match kind {
        Kind::Echo => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi","n":{i}}}}}}}"#
        ),
        Kind::FsRead => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"fs_read","arguments":{{"path":"{PAGE}","max_bytes":{}}}}}}}"#,
            65_536 + i
        ),
    }
}

/// A 4 KiB text page (a source file's worth), ending in a marker the
/// bench checks replies for.
fn page_text() -> String {
    let mut s = String::new();
    let mut n = 0;
    let size: usize = std::env::var("PAGE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    while s.len() < size {
        s.push_str(&format!(
            "line {n:04}: the quick brown fox jumps over the lazy dog\n"
        ));
        n += 1;
    }
    s.push_str("END-OF-PAGE\n");
    s
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

    async fn call(&mut self, kind: Kind, i: usize) {
        self.rpc(&call_line(kind, i)).await;
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

/// Child side of a CPU run: the latency run's calls to one server only,
/// one after the other. Prints nothing.
fn block_client(target: &str) {
    let (_, calls, _) = sizes();
    let (kind, socket) = Kind::parse(target);
    let mut c = BlockingLine::connect(Path::new(socket));
    for i in 0..calls {
        c.rpc(&call_line(kind, i + 1));
    }
}

/// CPU time (ns) of process `pid`, exited threads included
/// (`/proc/PID/stat`, in clock ticks of 10 ms: a block of calls takes a
/// second or more), and the times its live threads were scheduled onto a
/// CPU (`/proc/PID/task/*/schedstat`: a thread that exits between two
/// readings drops out, as the Python server's thread per connection does,
/// so its wake-ups are not shown).
fn cpu_of(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's closing parenthesis: state is field 3, utime 14.
    let fields: Vec<u64> = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .map(|v| v.parse().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default();
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    let mut slices = 0;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let s = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            slices += s
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        }
    }
    (ticks * 10_000_000, slices)
}

/// Child side of the latency run: one call to each server in turn, so
/// that drift in machine load (large on a shared 2-core machine) hits all
/// alike. Prints p50 and p99 in ns for each server.
fn latency_client(targets: &[String]) {
    let (warmup, calls, _) = sizes();
    let mut conns: Vec<_> = targets
        .iter()
        .map(|t| {
            let (kind, socket) = Kind::parse(t);
            let mut c = BlockingLine::connect(Path::new(socket));
            // Every side answers its call with the real thing, not an error.
            c.rpc(&call_line(kind, 0));
            let ok = match kind {
                Kind::Echo => c.buf.contains("hi"),
                Kind::FsRead => c.buf.contains("END-OF-PAGE"),
            };
            assert!(
                ok && !c.buf.contains(r#""isError":true"#),
                "{t} answered {}",
                c.buf
            );
            (kind, c)
        })
        .collect();
    let mut times = vec![Vec::with_capacity(calls); conns.len()];
    for i in 0..warmup + calls {
        for ((kind, c), t) in conns.iter_mut().zip(&mut times) {
            let line = call_line(*kind, i + 1);
            let s = Instant::now();
            c.rpc(&line);
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
fn throughput_client(target: &str, clients: usize) {
    let (kind, socket) = Kind::parse(target);
    let socket = Path::new(socket);
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
                        c.call(kind, k * per + i).await;
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
        Some("block") => block_client(&args[2]),
        Some("throughput") => throughput_client(&args[2], args[3].parse().expect("clients")),
        other => panic!("unknown client mode {other:?}"),
    }
    std::io::stdout().flush().expect("flush");
}

/// The daemon, its built-in file tools confined to `files`.
async fn toolgate_daemon(
    dir: &Path,
    audit_dir: &str,
    files: &Path,
) -> (PathBuf, CancellationToken) {
    let toml = format!("[builtin]\nroots = [{:?}]\n", files.display().to_string());
    let mut config = Config::parse(&toml, &dir.join("toolgate.toml")).expect("config");
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
        let files = dir.path().join("files");
        std::fs::create_dir(&files).expect("files dir");
        std::fs::write(files.join(PAGE), page_text()).expect("page");
        let (tg, stop) = toolgate_daemon(dir.path(), "data", &files).await;
        let rm = dir.path().join("rmcp.sock");
        tokio::spawn(rmcp_server(rm.clone()));
        let floor = dir.path().join("floor.sock");
        tokio::spawn(floor_server(floor.clone()));
        let py = dir.path().join("py.sock");
        let python = PythonServer::start(&py, &files);
        for s in [&rm, &floor, &py] {
            while UnixStream::connect(s).await.is_err() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }

        let (warmup, latency_calls, throughput_calls) = sizes();
        println!(
            "tools/call over a Unix socket, {latency_calls} sequential calls each after {warmup} warm-up, taking turns"
        );
        println!("{:<48} {:>10} {:>10}", "", "p50", "p99");
        let sides = [
            ("toolgate fs_read (full pipeline + audit)", Kind::FsRead.arg(&tg)),
            ("python fs_read (minimal, ungoverned)", Kind::FsRead.arg(&py)),
            ("toolgate echo (full pipeline + audit)", Kind::Echo.arg(&tg)),
            ("rmcp ServerHandler echo (no governance)", Kind::Echo.arg(&rm)),
            ("line echo, no MCP (the floor)", Kind::Echo.arg(&floor)),
        ];
        let mut args = vec!["latency"];
        args.extend(sides.iter().map(|(_, a)| a.as_str()));
        let l = client(&args).await;
        for ((name, _), v) in sides.iter().zip(l.chunks(2)) {
            println!("{name:<48} {:>8.1}µs {:>8.1}µs", v[0] / 1e3, v[1] / 1e3);
        }
        let p50 = |i: usize| l[2 * i];
        println!(
            "p50 ratios: toolgate fs_read / python fs_read {:.2} (target 1.15), \
             toolgate fs_read / rmcp echo {:.2}, toolgate echo / rmcp echo {:.2} (target 1.1)",
            p50(0) / p50(1),
            p50(0) / p50(3),
            p50(2) / p50(3),
        );
        println!(
            "            python fs_read / floor {:.2}, toolgate echo / floor {:.2}, rmcp / floor {:.2}",
            p50(1) / p50(4),
            p50(2) / p50(4),
            p50(3) / p50(4),
        );
        println!(
            "p50 differences: toolgate fs_read - python fs_read {:+.1}µs, toolgate echo - rmcp echo {:+.1}µs",
            (p50(0) - p50(1)) / 1e3,
            (p50(2) - p50(3)) / 1e3,
        );
        println!();
        println!(
            "server CPU per call, {latency_calls} calls to one server at a time (every thread of its process)"
        );
        println!("{:<48} {:>10} {:>10}", "", "CPU", "wake-ups");
        let me = std::process::id();
        let mut cpu = Vec::new();
        for ((name, target), pid) in sides.iter().zip([me, python.0.id(), me, me, me]) {
            let before = cpu_of(pid);
            client(&["block", target]).await;
            let after = cpu_of(pid);
            let n = latency_calls as f64;
            let (ns, wakes) = ((after.0 - before.0) as f64 / n, (after.1 - before.1) as f64 / n);
            if pid == me {
                println!("{name:<48} {:>8.1}µs {wakes:>10.2}", ns / 1e3);
            } else {
                println!("{name:<48} {:>8.1}µs {:>10}", ns / 1e3, "-");
            }
            cpu.push(ns);
        }
        println!(
            "CPU ratios: toolgate fs_read / python fs_read {:.2}, toolgate echo / rmcp echo {:.2}",
            cpu[0] / cpu[1],
            cpu[2] / cpu[3]
        );
        if std::env::var_os("LATENCY_ONLY").is_some() {
            stop.cancel();
            return;
        }
        println!();
        println!("throughput, {throughput_calls} calls split over N clients (calls/s)");
        println!("{:<48} {:>10} {:>10} {:>10}", "", "1", "8", "64");
        let row = |name: &str, v: [f64; 3]| {
            println!("{name:<48} {:>10.0} {:>10.0} {:>10.0}", v[0], v[1], v[2])
        };
        for (name, target) in [
            ("toolgate fs_read", Kind::FsRead.arg(&tg)),
            ("python fs_read", Kind::FsRead.arg(&py)),
            ("toolgate echo", Kind::Echo.arg(&tg)),
            ("rmcp echo", Kind::Echo.arg(&rm)),
            ("floor", Kind::Echo.arg(&floor)),
        ] {
            let mut v = [0.0; 3];
            for (slot, n) in v.iter_mut().zip(["1", "8", "64"]) {
                *slot = client(&["throughput", &target, n]).await[0];
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

/// `bench/fs_read_server.py`, killed when dropped.
struct PythonServer(std::process::Child);

impl PythonServer {
    fn start(socket: &Path, root: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/fs_read_server.py");
        // The interpreter itself, not a launcher that may stay its parent
        // (pyenv's shims), so its CPU time is read from the right process.
        let exe = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 (bench/fs_read_server.py needs it)");
        let exe = String::from_utf8_lossy(&exe.stdout).trim().to_owned();
        let child = Command::new(exe)
            .arg(script)
            .arg(socket)
            .arg(root)
            .spawn()
            .expect("python3 (bench/fs_read_server.py needs it)");
        Self(child)
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
