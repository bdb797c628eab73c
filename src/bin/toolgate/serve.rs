//! `toolgate serve` and `toolgate mcp-bridge`.

use std::io::Write;
use std::os::fd::AsFd;
use std::process::ExitCode;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use toolgate::config::watch::Overrides;
use toolgate::daemon::Daemon;

use crate::{Cli, config, serve_options};

pub(crate) async fn serve(cli: &Cli, http_port: Option<u16>) -> anyhow::Result<ExitCode> {
    let config = config(cli)?;
    let mut opts = serve_options(cli);
    opts.http_port = http_port;
    if let (None, Some(d)) = (&cli.data_dir, &config.data_dir) {
        opts.data_dir = d.clone();
    }
    // Handlers are installed before the ready line, so a supervisor that
    // signals right after reading it gets a clean shutdown.
    let signals = Signals::install().context("cannot install signal handlers")?;
    let mut daemon = Daemon::start(config.clone(), &opts).await?;
    if let Some(path) = cli
        .config
        .clone()
        .or_else(toolgate::paths::default_config_file)
    {
        let (roots, strict) = (cli.roots.clone(), config.strict);
        let overrides: Overrides = Box::new(move |c| {
            c.builtin.roots.extend(roots.iter().cloned());
            c.strict |= strict;
        });
        daemon.watch_config(&path, config, overrides)?;
    }
    // Whoever started us may close our stdout after the ready line; that
    // must never take the daemon down (println! would panic).
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "toolgate {} serving MCP on unix:{}\naudit log: {}",
        env!("CARGO_PKG_VERSION"),
        daemon.socket_path().display(),
        opts.data_dir.join("audit.db").display()
    );
    if let Some((url, _)) = daemon.http() {
        let _ = writeln!(
            out,
            "MCP over HTTP: {url} (bearer token in {})",
            opts.http_file().display()
        );
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

pub(crate) async fn bridge(cli: &Cli, spawn: bool) -> anyhow::Result<ExitCode> {
    let socket = serve_options(cli).socket;
    let stream = toolgate::bridge::connect(&socket, spawn).await?;
    // Relaying ends when the MCP client stops reading (it exited): the
    // daemon then cancels the calls it left.
    let gone = toolgate::bridge::reader_gone(std::io::stdout().as_fd())
        .context("cannot watch stdout for the client leaving")?;
    toolgate::bridge::relay_until(stream, tokio::io::stdin(), tokio::io::stdout(), gone).await?;
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
