//! The `toolgate` command: thin glue over the engine library. All behaviour
//! lives in the library; this file parses flags, builds an engine and
//! prints. Errors are one line on stderr and a non-zero exit (1: the call
//! failed or was refused; 2: bad usage or configuration).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use tokio_util::sync::CancellationToken;
use toolgate::config::Config;
use toolgate::context::{Caller, Session};
use toolgate::daemon::{Daemon, ServeOptions};
use toolgate::{CallReply, Engine};

/// Governs the tool calls of AI agents.
#[derive(Parser)]
#[command(name = "toolgate", version, about)]
struct Cli {
    /// Config file (default: ~/.config/toolgate/config.toml).
    #[arg(long, global = true, env = "TOOLGATE_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory (default: ~/.local/share/toolgate).
    #[arg(long, global = true, env = "TOOLGATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Extra root directory for the file tools and shell_exec (repeatable).
    #[arg(long = "root", global = true)]
    roots: Vec<PathBuf>,
    /// Agent socket (default: $XDG_RUNTIME_DIR/toolgate/agent.sock).
    #[arg(long, global = true, env = "TOOLGATE_SOCKET")]
    socket: Option<PathBuf>,
    /// Treat warnings as errors (also when CI=true).
    #[arg(long, global = true)]
    strict: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the headless daemon: engine, audit log and agent socket.
    Serve,
    /// Relay stdio to the daemon's socket, for stdio-only MCP clients.
    McpBridge {
        /// Start a daemon if none is running.
        #[arg(long)]
        spawn: bool,
    },
    /// List the tools agents can see.
    Tools {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the governed pipeline.
    Call {
        /// Tool name.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fail(2, &format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => fail(2, &format!("{e:#}")),
    }
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("toolgate: error: {message}");
    ExitCode::from(code)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Serve => return serve(&cli).await,
        Command::McpBridge { spawn } => {
            let socket = serve_options(&cli).socket;
            let stream = toolgate::bridge::connect(&socket, *spawn).await?;
            toolgate::bridge::relay(stream, tokio::io::stdin(), tokio::io::stdout()).await?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let engine = engine(&cli)?;
    match cli.command {
        Command::Serve | Command::McpBridge { .. } => unreachable!("handled above"),
        Command::Tools { json } => {
            print_tools(&engine, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Call { tool, args, json } => {
            let args: Value = serde_json::from_str(&args).context("--args is not valid JSON")?;
            anyhow::ensure!(
                args.is_object(),
                "--args must be a JSON object, got {}",
                kind_of(&args)
            );
            let session = Session::new(format!("cli-{}", std::process::id()), cli_caller());
            let reply = engine.call(&session, &tool, args).await;
            print_reply(&reply, json)
        }
    }
}

fn serve_options(cli: &Cli) -> ServeOptions {
    let mut opts = ServeOptions::defaults();
    if let Some(s) = &cli.socket {
        opts.socket = s.clone();
    }
    if let Some(d) = &cli.data_dir {
        opts.data_dir = d.clone();
    }
    opts
}

async fn serve(cli: &Cli) -> anyhow::Result<ExitCode> {
    let config = config(cli)?;
    let mut opts = serve_options(cli);
    if let (None, Some(d)) = (&cli.data_dir, &config.data_dir) {
        opts.data_dir = d.clone();
    }
    // Handlers are installed before the ready line, so a supervisor that
    // signals right after reading it gets a clean shutdown.
    let signals = Signals::install().context("cannot install signal handlers")?;
    let daemon = Daemon::start(config, &opts).await?;
    println!(
        "toolgate {} serving MCP on unix:{}",
        env!("CARGO_PKG_VERSION"),
        daemon.socket_path().display()
    );
    println!("audit log: {}", opts.data_dir.join("audit.db").display());
    let shutdown = CancellationToken::new();
    let s2 = shutdown.clone();
    tokio::spawn(async move {
        signals.wait().await;
        tracing::info!("shutting down: finishing in-flight calls");
        s2.cancel();
    });
    daemon.run(shutdown).await;
    Ok(ExitCode::SUCCESS)
}

/// SIGINT and SIGTERM, registered up front.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

fn config(cli: &Cli) -> anyhow::Result<Config> {
    let mut config = Config::load(cli.config.as_deref())?;
    config.strict |= cli.strict || std::env::var("CI").is_ok_and(|v| v == "true");
    config.builtin.roots.extend(cli.roots.iter().cloned());
    Ok(config)
}

fn engine(cli: &Cli) -> anyhow::Result<Engine> {
    Ok(toolgate::setup::engine(config(cli)?)?)
}

fn cli_caller() -> Caller {
    Caller {
        pid: i32::try_from(std::process::id()).ok(),
        ..Caller::via("cli")
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn print_tools(engine: &Engine, json: bool) -> anyhow::Result<()> {
    let tools = engine.tools();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &tools)?;
        writeln!(out)?;
        return Ok(());
    }
    let width = tools
        .iter()
        .map(|t| t.name.as_str().len())
        .max()
        .unwrap_or(4);
    for t in &tools {
        let summary = t.description.lines().next().unwrap_or("");
        let risk = format!("{:?}", t.risk).to_lowercase();
        writeln!(
            out,
            "{:width$}  {:8}  {:8}  {summary}",
            t.name.as_str(),
            t.source.to_string(),
            risk
        )?;
    }
    Ok(())
}

fn print_reply(reply: &CallReply, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let failed = match &reply.result {
        Ok(r) => r.is_error,
        Err(_) => true,
    };
    if json {
        let body = match &reply.result {
            Ok(r) => json!({"call_id": reply.call_id, "ok": !r.is_error, "result": r}),
            Err(e) => json!({"call_id": reply.call_id, "ok": false,
                             "error": {"kind": e.kind(), "message": e.to_string()}}),
        };
        serde_json::to_writer_pretty(&mut out, &body)?;
        writeln!(out)?;
    } else {
        match &reply.result {
            Ok(r) => writeln!(out, "{}", r.joined_text())?,
            Err(e) => {
                drop(out);
                return Ok(fail(1, &format!("{} ({})", e, e.kind())));
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
