//! `toolgate serve`: the headless daemon. Engine + audit log + agent socket
//! (and, later, the localhost HTTP endpoint), started in well under a
//! second and stopped cleanly: on shutdown it stops accepting, lets
//! in-flight calls finish (each is audited before its reply), flushes the
//! audit log and removes the socket file.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::audit::{AuditError, AuditLog};
use crate::config::Config;
use crate::events::Event;
use crate::mcp::{McpServer, Role, ServerOptions};
use crate::setup::{self, Env, SetupError};
use crate::socket::{AgentSocket, SocketError};

/// Where the daemon puts things.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Agent socket path.
    pub socket: PathBuf,
    /// Directory of the audit database.
    pub data_dir: PathBuf,
    /// How long audit rows are kept.
    pub retention: Duration,
}

impl ServeOptions {
    /// The control socket: next to the agent socket, `<socket>.ctl`. It
    /// carries the CLI's inspect-and-steer methods, which agents never see.
    pub fn control_socket(&self) -> PathBuf {
        let mut p = self.socket.clone().into_os_string();
        p.push(".ctl");
        p.into()
    }

    /// The XDG defaults: `$XDG_RUNTIME_DIR/toolgate/agent.sock` and
    /// `~/.local/share/toolgate`, audit rows kept 90 days.
    pub fn defaults() -> Self {
        Self {
            socket: crate::paths::default_runtime_dir().join("agent.sock"),
            data_dir: crate::paths::default_data_dir(),
            retention: Duration::from_secs(90 * 86_400),
        }
    }
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// Engine assembly failed.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The audit log could not be opened.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// The socket could not be bound.
    #[error(transparent)]
    Socket(#[from] SocketError),
}

/// A started daemon: call [`Daemon::run`] to serve until shutdown.
#[derive(Debug)]
pub struct Daemon {
    server: McpServer,
    socket: AgentSocket,
    control: AgentSocket,
    audit: AuditLog,
}

impl Daemon {
    /// Opens the audit log, builds the engine and binds the socket.
    ///
    /// # Errors
    /// See [`DaemonError`].
    pub async fn start(config: Config, opts: &ServeOptions) -> Result<Self, DaemonError> {
        Self::start_with(config, opts, ServerOptions::default()).await
    }

    /// Like [`Daemon::start`] with explicit per-connection limits.
    ///
    /// # Errors
    /// See [`DaemonError`].
    pub async fn start_with(
        config: Config,
        opts: &ServeOptions,
        limits: ServerOptions,
    ) -> Result<Self, DaemonError> {
        let audit = AuditLog::open(&opts.data_dir.join("audit.db")).await?;
        match audit.prune(opts.retention).await {
            Ok(n) if n > 0 => {
                tracing::info!("pruned {n} audit rows older than the retention period")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("{e}"),
        }
        let a2 = audit.clone();
        let engine = setup::engine_with(config, &Env::from_process(), |b| b.audit(a2))?;
        follow_events(&engine, &audit);
        let socket = AgentSocket::bind(&opts.socket)?;
        let control = AgentSocket::bind(&opts.control_socket())?;
        Ok(Self {
            server: McpServer::new(engine, limits),
            socket,
            control,
            audit,
        })
    }

    /// The agent socket path.
    pub fn socket_path(&self) -> &std::path::Path {
        self.socket.path()
    }

    /// The engine.
    pub fn engine(&self) -> &crate::Engine {
        self.server.engine()
    }

    /// Serves until `shutdown` fires, then drains and flushes.
    pub async fn run(self, shutdown: CancellationToken) {
        let control = self.server.clone().with_role(Role::Control);
        tokio::join!(
            self.socket.serve(self.server, shutdown.clone()),
            self.control.serve(control, shutdown)
        );
        self.audit.flush().await;
    }
}

/// Records the engine events that matter after the fact (breaker
/// transitions, registry changes, loop-guard levels, approvals) in the
/// audit log's event table.
fn follow_events(engine: &crate::Engine, audit: &AuditLog) {
    let mut rx = engine.subscribe();
    let audit = audit.clone();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(e) if worth_keeping(&e) => audit.record_event(&e),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("audit fell {n} events behind; they are not in the event table");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

fn worth_keeping(e: &Event) -> bool {
    !matches!(
        e,
        Event::CallReceived { .. }
            | Event::CallStage { .. }
            | Event::CallFinished { .. }
            | Event::CallRetry { .. }
    )
}
