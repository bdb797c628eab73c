//! `toolgate serve`: the headless daemon. Engine + audit log + agent socket
//! (and, later, the localhost HTTP endpoint), started in well under a
//! second and stopped cleanly: on shutdown it stops accepting, lets
//! in-flight calls finish (each is audited before its reply), flushes the
//! audit log and removes the socket file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalOptions, Approvals};
use crate::audit::{AuditError, AuditLog};
use crate::config::Config;
use crate::config::watch::{ConfigWatcher, Overrides, ReloadStatus};
use crate::events::EventBus;
use crate::guard::protect::OwnFiles;
use crate::mcp::http::{HttpEndpoint, new_token};
use crate::mcp::{McpServer, Role, ServerOptions};
use crate::secrets::open_keychain;
use crate::setup::{self, Env, SetupError};
use crate::socket::{AgentSocket, SocketError};
use crate::upstream::{PinStore, UpstreamOptions, Upstreams};

/// Where the daemon puts things.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Agent socket path.
    pub socket: PathBuf,
    /// Directory of the audit database.
    pub data_dir: PathBuf,
    /// How long audit rows are kept.
    pub retention: Duration,
    /// Port of the localhost streamable-HTTP endpoint: `Some(0)` picks a
    /// free one, `None` turns the endpoint off.
    pub http_port: Option<u16>,
}

impl ServeOptions {
    /// The control socket: next to the agent socket, `<socket>.ctl`. It
    /// carries the CLI's inspect-and-steer methods, which agents never see.
    pub fn control_socket(&self) -> PathBuf {
        self.beside_socket(".ctl")
    }

    /// Where the HTTP endpoint's URL and token are written (`0600`):
    /// `<socket>.http`, a JSON object `{"url", "token"}`.
    pub fn http_file(&self) -> PathBuf {
        self.beside_socket(".http")
    }

    fn beside_socket(&self, suffix: &str) -> PathBuf {
        let mut p = self.socket.clone().into_os_string();
        p.push(suffix);
        p.into()
    }

    /// The XDG defaults: `$XDG_RUNTIME_DIR/toolgate/agent.sock` and
    /// `~/.local/share/toolgate`, audit rows kept 90 days.
    pub fn defaults() -> Self {
        Self {
            socket: crate::paths::default_runtime_dir().join("agent.sock"),
            data_dir: crate::paths::default_data_dir(),
            retention: Duration::from_secs(90 * 86_400),
            http_port: Some(0),
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
    /// The approval queue could not be opened.
    #[error(transparent)]
    Approvals(#[from] crate::approval::ApprovalError),
    /// The pin store could not be opened.
    #[error(transparent)]
    Pins(#[from] crate::upstream::PinError),
    /// The config watcher could not start.
    #[error("cannot watch the config file: {0}")]
    Watch(String),
    /// The HTTP endpoint could not be bound or its token file written.
    #[error("HTTP endpoint ({}): {source}", .path.display())]
    Http {
        /// The token file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A started daemon: call [`Daemon::run`] to serve until shutdown.
#[derive(Debug)]
pub struct Daemon {
    server: McpServer,
    upstreams: Upstreams,
    watcher: Option<ConfigWatcher>,
    socket: AgentSocket,
    control: AgentSocket,
    http: Option<(HttpEndpoint, String, PathBuf)>,
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
        let events = EventBus::new();
        let approvals = Approvals::open(&audit, events.clone(), ApprovalOptions::default()).await?;
        let servers = config.servers.clone();
        let a2 = audit.clone();
        let env = Env {
            own_files: OwnFiles::for_daemon(config.path.as_deref(), &opts.data_dir, &opts.socket),
            ..Env::from_process()
        };
        let engine = setup::engine_with(config, &env, |b| {
            b.events(events).audit(a2).approvals(approvals)
        })?;
        follow_events(&engine, &audit);
        let pins = PinStore::open(audit.pool().clone()).await?;
        let upstreams = Upstreams::new(engine.clone(), pins, UpstreamOptions::default());
        upstreams.apply_configured(servers, open_keychain).await;
        let socket = AgentSocket::bind(&opts.socket)?;
        let control = AgentSocket::bind(&opts.control_socket())?;
        let http = match opts.http_port {
            Some(port) => Some(start_http(port, &opts.http_file()).await?),
            None => None,
        };
        Ok(Self {
            server: McpServer::new(engine, limits).with_upstreams(upstreams.clone()),
            upstreams,
            watcher: None,
            socket,
            control,
            http,
            audit,
        })
    }

    /// The agent socket path.
    pub fn socket_path(&self) -> &std::path::Path {
        self.socket.path()
    }

    /// Watches `path` and applies every valid edit: upstream servers are
    /// added, removed or restarted, and the policy is swapped (pending
    /// approvals are re-checked under the new version). Pipeline limits
    /// and the allowlist apply from the next start. `overrides` re-applies
    /// command-line settings to each reloaded config.
    ///
    /// # Errors
    /// The watcher could not start.
    pub fn watch_config(
        &mut self,
        path: &std::path::Path,
        initial: Config,
        overrides: Overrides,
    ) -> Result<(), DaemonError> {
        let watcher = ConfigWatcher::start(path, initial, overrides)
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        let mut configs = watcher.config();
        let mut status = watcher.status();
        let (engine, upstreams) = (self.server.engine().clone(), self.upstreams.clone());
        tokio::spawn(async move {
            while configs.changed().await.is_ok() {
                let config = configs.borrow_and_update().clone();
                engine.policy().swap(config.policy.clone());
                upstreams
                    .apply_configured(config.servers.clone(), open_keychain)
                    .await;
                tracing::info!("config reloaded");
            }
        });
        tokio::spawn(async move {
            while status.changed().await.is_ok() {
                if let ReloadStatus::Rejected { error, .. } = &*status.borrow_and_update() {
                    tracing::error!(
                        "config edit rejected, the previous config stays in force: {error}"
                    );
                }
            }
        });
        self.watcher = Some(watcher);
        Ok(())
    }

    /// The HTTP endpoint's URL and token, if it is on.
    pub fn http(&self) -> Option<(String, &str)> {
        self.http
            .as_ref()
            .map(|(e, token, _)| (format!("http://{}/mcp", e.addr()), token.as_str()))
    }

    /// The engine.
    pub fn engine(&self) -> &crate::Engine {
        self.server.engine()
    }

    /// Serves until `shutdown` fires, then drains and flushes.
    pub async fn run(self, shutdown: CancellationToken) {
        let control = self.server.clone().with_role(Role::Control);
        let http = async {
            if let Some((endpoint, token, file)) = self.http {
                endpoint
                    .serve(self.server.clone(), token, shutdown.clone())
                    .await;
                let _ = std::fs::remove_file(file);
            }
        };
        tokio::join!(
            self.socket.serve(self.server.clone(), shutdown.clone()),
            self.control.serve(control, shutdown.clone()),
            http
        );
        self.upstreams.shutdown().await;
        drop(self.watcher);
        self.audit.flush().await;
    }
}

/// Binds the HTTP endpoint and writes its URL and token to `file` (0600).
async fn start_http(
    port: u16,
    file: &std::path::Path,
) -> Result<(HttpEndpoint, String, PathBuf), DaemonError> {
    let io = |source| DaemonError::Http {
        path: file.to_owned(),
        source,
    };
    let endpoint = HttpEndpoint::bind(port).await.map_err(io)?;
    let token = new_token();
    let body =
        serde_json::json!({"url": format!("http://{}/mcp", endpoint.addr()), "token": token});
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)
        .map_err(io)?;
    f.write_all(body.to_string().as_bytes()).map_err(io)?;
    Ok((endpoint, token, file.to_owned()))
}

/// Records the engine events that matter after the fact (breaker
/// transitions, registry changes, loop-guard levels, approvals) in the
/// audit log's event table.
fn follow_events(engine: &crate::Engine, audit: &AuditLog) {
    let mut rx = engine.events().subscribe_notable();
    let audit = audit.clone();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(e) => audit.record_event(&e),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("audit fell {n} events behind; they are not in the event table");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}
