//! `toolgate serve` and `toolgate mcp-bridge`.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use anyhow::Context;
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;
use toolgate::config::watch::Overrides;

use toolgate::daemon::{DaemonError, Launch};
use toolgate::discovery;
use toolgate::spawn::SpawnPlan;

use crate::{Cli, client_data_dir, config, default_socket, serve_options};

pub(crate) async fn serve(
    cli: &Cli,
    http_port: Option<u16>,
    detach: bool,
    ui_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if detach {
        toolgate::spawn::detach().context("cannot start a session of our own")?;
    }
    let config = config(cli)?;
    let mut opts = serve_options(cli, &config);
    opts.http_port = http_port;
    // Handlers are installed before the ready line, so a supervisor that
    // signals right after reading it gets a clean shutdown.
    let signals = Signals::install().context("cannot install signal handlers")?;
    let (roots, strict) = (cli.roots.clone(), config.strict);
    let overrides: Overrides = Box::new(move |c| {
        c.builtin.roots.extend(roots.iter().cloned());
        c.strict |= strict;
    });
    let launch = Launch {
        config,
        config_file: cli
            .config
            .clone()
            .or_else(toolgate::paths::default_config_file),
        opts: opts.clone(),
        overrides,
    };
    let mut daemon = match launch.start().await {
        // Spawned by a bridge that raced another starter: the data dir has
        // its engine, which is all the bridge wanted.
        Err(DaemonError::Owned { data_dir, pid }) if detach => {
            let owner = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
            eprintln!(
                "toolgate: {} already has its engine{owner}; this spawned one is not needed",
                data_dir.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        started => started?,
    };
    if let Some(dir) = ui_dir {
        anyhow::ensure!(
            dir.join("index.html").is_file(),
            "--ui-dir {}: no index.html there; build the UI first (npm --prefix ui run build)",
            dir.display()
        );
        daemon.set_ui_dir(dir);
    }
    // Whoever started us may close our stdout after the ready line; that
    // must never take the daemon down (println! would panic).
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "toolgate {} serving MCP on unix:{}\naudit log: {}\ndiscovery file: {}",
        env!("CARGO_PKG_VERSION"),
        daemon.socket_path().display(),
        opts.data_dir.join("audit.db").display(),
        daemon.discovery_file().display()
    );
    if let Some((url, _)) = daemon.http() {
        let _ = writeln!(
            out,
            "MCP over HTTP: {url} (bearer token in {})",
            opts.http_file().display()
        );
    }
    // A login link is a credential: it goes to a terminal only, never to a
    // pipe or file that may end up in a log a governed process can read
    // (`mcp-bridge --spawn` sends this output to engine.log; a service
    // manager to its journal). `toolgate console` mints one on demand.
    if let Some(location) = daemon.console_location() {
        match daemon.console_login_url() {
            Some(url) if out.is_terminal() => {
                let _ = writeln!(out, "console: {url}");
            }
            _ => {
                let _ = writeln!(
                    out,
                    "console: {} (sign in with `toolgate console`)",
                    location.url
                );
            }
        }
    }
    let _ = out.flush();
    drop(out);
    let shutdown = CancellationToken::new();
    let s2 = shutdown.clone();
    tokio::spawn(async move {
        signals.wait().await;
        tracing::info!(
            "shutting down within {}s: pending approvals are cancelled, calls in flight get {}s",
            toolgate::daemon::SHUTDOWN_BOUND.as_secs(),
            toolgate::daemon::SHUTDOWN_GRACE.as_secs()
        );
        s2.cancel();
    });
    daemon.run(shutdown).await;
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn bridge(
    cli: &Cli,
    spawn: bool,
    label: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let data_dir = client_data_dir(cli);
    let default = default_socket(&data_dir);
    let target = discovery::locate(cli.socket.as_deref(), &data_dir, &default).await;
    let plan = if spawn {
        Some(spawn_plan(
            cli,
            data_dir,
            cli.socket.clone().unwrap_or(default),
        )?)
    } else {
        None
    };
    let mut stream = toolgate::bridge::connect(&target, plan.as_ref()).await?;
    if let Some(label) = label {
        toolgate::bridge::announce_label(&mut stream, label).await?;
    }
    // Relaying ends when the MCP client stops reading (it exited): the
    // daemon then cancels the calls it left.
    let gone = toolgate::bridge::reader_gone(std::io::stdout().as_fd())
        .context("cannot watch stdout for the client leaving")?;
    toolgate::bridge::relay_until(stream, tokio::io::stdin(), tokio::io::stdout(), gone).await?;
    Ok(ExitCode::SUCCESS)
}

/// `toolgate serve` for `data_dir` on `socket`, with this command's config
/// and file roots.
fn spawn_plan(cli: &Cli, data_dir: PathBuf, socket: PathBuf) -> anyhow::Result<SpawnPlan> {
    let exe = std::env::current_exe().context("cannot find the toolgate executable")?;
    let mut plan = SpawnPlan::new(exe, data_dir, socket);
    if let Some(c) = &cli.config {
        plan.extra_args.extend(["--config".into(), c.into()]);
    }
    for root in &cli.roots {
        plan.extra_args.extend(["--root".into(), root.into()]);
    }
    if cli.strict {
        plan.extra_args.push("--strict".into());
    }
    Ok(plan)
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
