//! `toolgate serve`: the headless daemon. Engine + audit log + agent and
//! control sockets + the localhost HTTP endpoint, started in well under a
//! second and stopped within [`SHUTDOWN_BOUND`] whatever its clients do.
//!
//! Shutdown, step by step (see [`Daemon::run`]):
//! 1. Stop accepting connections and reading requests. Close the approval
//!    queue: every pending request is closed as `cancelled`, and its agent
//!    is told toolgate is shutting down (no person is left to answer).
//! 2. Calls in flight get [`SHUTDOWN_GRACE`] to finish and be answered.
//! 3. Then the rest are cancelled (each still ends in its audit row, as
//!    `cancelled` with reason `shutdown`), and replies get
//!    [`SHUTDOWN_DRAIN`] to reach clients that still read; writes to
//!    clients that never read are abandoned then.
//! 4. Upstream servers get [`UPSTREAM_STOP`] to exit, then are killed.
//! 5. The approval closings are written, the event follower drains the
//!    events still queued, the audit log is flushed, and the socket files
//!    are gone.
//!
//! One engine per data dir: it starts only as the writer of the data dir's
//! audit log, before binding anything, and once it listens it publishes
//! the data dir's discovery file (`crate::discovery`), removed again when
//! it stops.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cancel::CancelReason;

use crate::approval::{ApprovalOptions, Approvals};
use crate::audit::{AuditError, AuditLog};
use crate::barrier::credential::Credential;
use crate::config::Config;
use crate::config::watch::{ConfigWatcher, Overrides, ReloadStatus};
use crate::console::connect::{ConnectDesk, EnginePlaces};
use crate::console::{self, Console, ConsoleAuth, UiSource};
use crate::control::socket::{ControlSocket, LoginLinks};
use crate::control::{Control, ControlError, EngineInfo as ControlInfo, EngineMode};
use crate::discovery::{EngineInfo, HttpInfo, Published};
use crate::events::EventBus;
use crate::guard::protect::OwnFiles;
use crate::local_http::new_token;
use crate::mcp::http::HttpEndpoint;
use crate::mcp::{McpServer, ServerOptions};
use crate::policy::editor::{PolicyEditor, SharedOverrides};
use crate::secrets::open_keychain;
use crate::setup::{self, Env, SetupError};
use crate::socket::{AgentSocket, BridgeExes, SocketError};
use crate::upstream::{PinStore, UpstreamOptions, Upstreams};

/// How long calls in flight when shutdown begins may run on. Long enough
/// for a call that is about to answer (a built-in tool, a quick upstream
/// call) to be answered rather than cut, short enough that with the steps
/// after it shutdown stays within [`SHUTDOWN_BOUND`]: a supervisor (systemd
/// sends SIGKILL after 90 s, a desktop session logging out much sooner)
/// and a person pressing Ctrl-C both expect seconds, and a call that needs
/// longer than this is no longer answered to anyone who waits.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// After the grace: how long the replies of cancelled calls get to reach
/// clients that still read. A client that never reads holds nothing up
/// past it.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_millis(500);

/// How long upstream servers get to exit on their own (in parallel)
/// before their process groups are killed.
pub const UPSTREAM_STOP: Duration = Duration::from_secs(1);

/// The documented bound on shutdown, from the signal to the process
/// exiting: the three steps above plus writing the last rows, which takes
/// milliseconds.
pub const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

const _: () = assert!(
    SHUTDOWN_GRACE.as_millis() + SHUTDOWN_DRAIN.as_millis() + UPSTREAM_STOP.as_millis()
        <= SHUTDOWN_BOUND.as_millis() - 500,
    "the shutdown steps must leave room for the final flush within the bound"
);

/// Where the daemon puts things.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Agent socket path.
    pub socket: PathBuf,
    /// Directory of the audit database.
    pub data_dir: PathBuf,
    /// How long audit rows are kept.
    pub retention: Duration,
    /// Port of the localhost streamable-HTTP endpoint (and the console):
    /// `Some(0)` takes the port this data dir's engine used last
    /// ([`crate::last_port`]) when it is free, else a free one; `None`
    /// turns the endpoint off.
    pub http_port: Option<u16>,
    /// Who hosts the engine (`toolgate serve` or the desktop app), shown
    /// in the console's header.
    pub mode: EngineMode,
    /// The toolgate binary that confines governed processes as their
    /// warden (see [`crate::barrier`]): by default the `toolgate` CLI beside
    /// the running executable, else the running one when it can be
    /// ([`crate::barrier::Barrier::preferred_warden`]).
    pub warden: Option<PathBuf>,
    /// Which agent-socket peers are toolgate's stdio bridge, whose calls
    /// are then the MCP client's that started it (see
    /// [`crate::socket::BridgeExes`]).
    pub bridges: BridgeExes,
}

impl ServeOptions {
    /// The control socket: next to the agent socket, `<socket>.ctl`. It
    /// carries the CLI's inspect-and-steer methods, which agents never see.
    pub fn control_socket(&self) -> PathBuf {
        crate::paths::control_socket_for(&self.socket)
    }

    /// Where the HTTP endpoint's URL and token are written (`0600`):
    /// `<socket>.http`, a JSON object `{"url", "token"}`.
    pub fn http_file(&self) -> PathBuf {
        crate::paths::beside(&self.socket, ".http")
    }

    /// The engine of `data_dir`, everything else at its default: the
    /// agent socket in the runtime dir (see [`crate::paths::RuntimeEnv`]),
    /// or in `data_dir` without one.
    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        Self {
            socket: crate::paths::RuntimeEnv::from_process()
                .toolgate_dir(&data_dir)
                .join("agent.sock"),
            data_dir,
            ..Self::defaults()
        }
    }

    /// The environment an engine of `config` started with these options
    /// has: its own files (protected from governed tools) and its warden.
    pub fn env(&self, config: &Config) -> Env {
        Env {
            own_files: OwnFiles::for_daemon(config.path.as_deref(), &self.data_dir, &self.socket)
                .token_file(self.console_token_file()),
            warden: self.warden.clone(),
            ..Env::from_process()
        }
    }

    /// The console bearer token for non-browser clients (`0600`):
    /// `console.token` in the data directory.
    pub fn console_token_file(&self) -> PathBuf {
        self.data_dir.join("console.token")
    }

    /// The XDG defaults: `toolgate/agent.sock` in the runtime dir (see
    /// [`crate::paths::RuntimeEnv`]) and `~/.local/share/toolgate`, audit
    /// rows kept 90 days.
    pub fn defaults() -> Self {
        Self {
            socket: crate::paths::default_runtime_dir().join("agent.sock"),
            data_dir: crate::paths::default_data_dir(),
            retention: Duration::from_secs(90 * 86_400),
            http_port: Some(0),
            mode: EngineMode::Serve,
            warden: crate::barrier::Barrier::preferred_warden(),
            bridges: BridgeExes::of_this_process(),
        }
    }
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// The control service (what the console and the CLI steer the
    /// engine through) could not start: the audit log could not be read.
    #[error("the control service could not start: {0}")]
    Control(#[from] ControlError),
    /// Another live process writes this data dir's audit log: one engine
    /// per data dir, and a process that cannot record calls serves none.
    #[error("another toolgate engine{} already owns {}; stop it first or use --data-dir", .pid.map(|p| format!(" (pid {p})")).unwrap_or_default(), .data_dir.display())]
    Owned {
        /// The data dir.
        data_dir: PathBuf,
        /// The owner's pid, when its discovery file names a live process.
        pid: Option<u32>,
    },
    /// The discovery file could not be written.
    #[error(transparent)]
    Discovery(#[from] crate::discovery::DiscoveryError),
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
    /// `[storage]` cannot be used (its password is not in the keychain).
    #[error(transparent)]
    Storage(#[from] crate::team::StorageError),
    /// The engine's identity file could not be read or written.
    #[error("cannot keep the engine id in {}: {source}", .path.display())]
    Identity {
        /// The data dir.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The pin store could not be opened.
    #[error(transparent)]
    Pins(#[from] crate::upstream::PinError),
    /// The config watcher could not start.
    #[error("cannot watch the config file: {0}")]
    Watch(String),
    /// The control credential could not be written.
    #[error("cannot write the control credential {}: {source}", .path.display())]
    Credential {
        /// Its file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The HTTP endpoint could not be bound or its token file written.
    #[error("HTTP endpoint ({}): {source}", .path.display())]
    Http {
        /// The token file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Everything a host of the engine (`toolgate serve`, the desktop app)
/// starts it from, so both start the very same daemon: the config as
/// loaded, the file to watch for edits, and what the host's own settings
/// add to every reloaded config.
pub struct Launch {
    /// The config as loaded (with the host's overrides applied).
    pub config: Config,
    /// The config file to watch; `None` watches nothing.
    pub config_file: Option<PathBuf>,
    /// Where the daemon puts things.
    pub opts: ServeOptions,
    /// Re-applies the host's settings to each reloaded config.
    pub overrides: Overrides,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("config_file", &self.config_file)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Launch {
    /// Starts the daemon ([`Daemon::start`]) and watches the config file
    /// ([`Daemon::watch_config`]). Serve it with [`Daemon::run`]; cancelling
    /// the token given there stops it.
    ///
    /// # Errors
    /// See [`DaemonError`].
    pub async fn start(self) -> Result<Daemon, DaemonError> {
        let mut daemon = Daemon::start(self.config.clone(), &self.opts).await?;
        if let Some(path) = &self.config_file {
            daemon.watch_config(path, self.config, self.overrides)?;
        }
        Ok(daemon)
    }
}

pub use crate::discovery::ConsoleLocation;

/// A started daemon: call [`Daemon::run`] to serve until shutdown.
#[derive(Debug)]
pub struct Daemon {
    server: McpServer,
    control_service: Control,
    upstreams: Upstreams,
    watcher: Option<ConfigWatcher>,
    /// The plugin directory beside the watched config file, and its watch.
    plugins: Option<(crate::plugins::PluginSet, crate::plugins::PluginWatcher)>,
    socket: AgentSocket,
    control: AgentSocket,
    /// What the control socket's peers present; its file goes when the
    /// daemon stops.
    credential: (Credential, PathBuf),
    http: Option<(HttpEndpoint, String, PathBuf)>,
    console: Option<ConsoleAuth>,
    console_token: PathBuf,
    ui: UiSource,
    /// Declared before `audit`: the file goes before the data dir is let go.
    published: Published,
    audit: AuditLog,
    env: Env,
    editor: PolicyEditor,
    /// The Connect view's routes; follows the watched config file like
    /// the editor.
    connect: ConnectDesk,
    connect_places: EnginePlaces,
    events: EventFollower,
    /// The team link, with `[storage] url`.
    team: Option<crate::team::Team>,
}

impl Daemon {
    /// Takes the data dir (its audit log, as writer), builds the engine,
    /// binds the sockets and publishes the discovery file.
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
        // Two descriptors per agent: the soft limit must not be what turns
        // agents away (see `open_files`).
        crate::open_files::raise();
        let audit = own_audit_log(&opts.data_dir).await?;
        match audit.prune(opts.retention).await {
            Ok(n) if n > 0 => {
                tracing::info!("pruned {n} audit rows older than the retention period")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("{e}"),
        }
        let events = EventBus::new();
        let approvals = Approvals::open(&audit, events.clone(), ApprovalOptions::default()).await?;
        let team_parts = team_parts(&config, &opts.data_dir, &approvals, &audit)?;
        let servers = config.servers.clone();
        let config_path = config.path.clone();
        let roots = config.builtin.roots.clone();
        let a2 = audit.clone();
        let env = opts.env(&config);
        let engine = setup::engine_with(config, &env, |b| {
            b.events(events).audit(a2).approvals(approvals)
        })?;
        engine.disclosure().keep_in(&opts.data_dir);
        let events = follow_events(&engine, &audit);
        let pins = PinStore::open(audit.pool().clone()).await?;
        let upstreams = Upstreams::new(engine.clone(), pins, UpstreamOptions::default());
        // Before the servers start: the link hears of every pin approval.
        let team = team_parts.map(|parts| {
            crate::team::Team::start(crate::team::TeamParts {
                upstreams: Some(upstreams.clone()),
                ..parts
            })
        });
        upstreams.apply_configured(servers, open_keychain).await;
        let socket = AgentSocket::bind(&opts.socket)?.with_bridges(opts.bridges.clone());
        let control = AgentSocket::bind(&opts.control_socket())?.refusing_governed();
        let credential = Credential::generate();
        let credential_file =
            credential
                .write(&opts.data_dir)
                .map_err(|source| DaemonError::Credential {
                    path: crate::barrier::credential::file_in(&opts.data_dir),
                    source,
                })?;
        let http = match opts.http_port {
            Some(port) => Some(start_http(port, &opts.data_dir, &opts.http_file()).await?),
            None => None,
        };
        let console_token = opts.console_token_file();
        let console = match &http {
            Some((endpoint, _, _)) => {
                let auth = ConsoleAuth::persistent_or_fresh(
                    format!("http://{}", endpoint.addr()),
                    console::sessions::file(&opts.data_dir),
                );
                write_secret(&console_token, auth.bearer()).map_err(|source| {
                    DaemonError::Http {
                        path: console_token.clone(),
                        source,
                    }
                })?;
                Some(auth)
            }
            None => None,
        };
        let mut control_builder = Control::builder(
            engine.clone(),
            ControlInfo::now(
                opts.mode,
                &opts.data_dir,
                socket.path(),
                http.as_ref()
                    .map(|(e, _, _)| format!("http://{}/mcp", e.addr())),
            ),
        )
        .upstreams(upstreams.clone());
        if let Some(team) = &team {
            control_builder = control_builder.team(team.clone());
        }
        let control_service = control_builder.start().await?;
        let connect_places = EnginePlaces {
            engine: engine.clone(),
            config_file: config_path.clone(),
            data_dir: opts.data_dir.clone(),
            roots: roots.clone(),
        };
        let editor = PolicyEditor::new(
            engine.clone(),
            config_path,
            env.allowed_tools.clone(),
            Arc::new(|_: &mut Config| {}),
            None,
        );
        let server = McpServer::new(engine, limits);
        // Last: the file says the engine answers, so it is written once
        // every socket listens.
        let published = Published::new(&EngineInfo {
            pid: std::process::id(),
            exe: std::env::current_exe().ok(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            started_ms: crate::audit::now_ms(),
            data_dir: opts.data_dir.clone(),
            agent_socket: socket.path().to_owned(),
            control_socket: control.path().to_owned(),
            http: http.as_ref().map(|(e, _, file)| HttpInfo {
                url: format!("http://{}/mcp", e.addr()),
                token_file: file.clone(),
            }),
            console: console.as_ref().map(|auth| ConsoleLocation {
                url: auth.origin().to_owned(),
                token_file: console_token.clone(),
            }),
        })?;
        Ok(Self {
            server,
            control_service,
            upstreams,
            watcher: None,
            plugins: None,
            socket,
            control,
            http,
            console,
            console_token,
            credential: (credential, credential_file),
            ui: UiSource::Embedded,
            published,
            audit,
            env,
            editor,
            connect: ConnectDesk::for_engine(connect_places.clone()),
            connect_places,
            events,
            team,
        })
    }

    /// The team link, when `[storage] url` names a team database.
    pub fn team(&self) -> Option<&crate::team::Team> {
        self.team.as_ref()
    }

    /// The agent socket path.
    pub fn socket_path(&self) -> &std::path::Path {
        self.socket.path()
    }

    /// The discovery file this engine published.
    pub fn discovery_file(&self) -> PathBuf {
        self.published.path()
    }

    /// Watches `path` and applies every valid edit: upstream servers are
    /// added, removed or restarted, the policy is swapped (pending
    /// approvals are re-checked under the new version), and the allow/deny
    /// lists are swapped (agents are sent `tools/list_changed` when they
    /// changed). Pipeline limits apply from the next start. `overrides`
    /// re-applies command-line settings to each reloaded config.
    ///
    /// # Errors
    /// The watcher could not start.
    pub fn watch_config(
        &mut self,
        path: &std::path::Path,
        initial: Config,
        overrides: Overrides,
    ) -> Result<(), DaemonError> {
        let overrides: SharedOverrides = Arc::from(overrides);
        let o2 = overrides.clone();
        let plugins = crate::plugins::PluginSet::new(
            crate::plugins::dir_for(path),
            self.server.engine().clone(),
            initial.trusted_plugins.clone(),
        );
        let plugin_watch = crate::plugins::PluginWatcher::start(plugins.clone())
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        let watcher = ConfigWatcher::start(path, initial, Box::new(move |c| o2(c)))
            .map_err(|e| DaemonError::Watch(e.to_string()))?;
        self.editor = PolicyEditor::new(
            self.server.engine().clone(),
            Some(path.to_owned()),
            self.env.allowed_tools.clone(),
            overrides,
            Some(watcher.writer()),
        );
        self.connect_places.config_file = Some(path.to_owned());
        self.connect = ConnectDesk::for_engine(self.connect_places.clone());
        let mut configs = watcher.config();
        let mut status = watcher.status();
        let (engine, upstreams) = (self.server.engine().clone(), self.upstreams.clone());
        let env = self.env.clone();
        let file = path.to_owned();
        let at_start = std::fs::read_to_string(&file).unwrap_or_default();
        let trusting = plugins.clone();
        let plugin_servers = plugins.servers();
        tokio::spawn(async move {
            while configs.changed().await.is_ok() {
                let config = configs.borrow_and_update().clone();
                trusting.set_trusted(config.trusted_plugins.clone());
                let now = std::fs::read_to_string(&file).unwrap_or_default();
                let waiting = crate::config::restart::start_only_changes(&at_start, &now);
                engine.set_restart_note(crate::config::restart::restart_note(&waiting));
                engine.policy().swap(config.policy.clone());
                // `Config` validated the lists already; only the
                // environment's allowlist could still be empty here, and it
                // was checked at start.
                match setup::tool_filter(&config, &env) {
                    Ok(filter) => {
                        engine.set_filter(filter);
                    }
                    Err(e) => tracing::error!("allow/deny lists not reloaded: {e}"),
                }
                upstreams
                    .apply_configured(with_plugins(&config, &plugin_servers), open_keychain)
                    .await;
                tracing::info!("config reloaded");
            }
        });
        // Plugins' servers run beside the config's; either changing
        // applies both.
        let (upstreams, mut config_now) = (self.upstreams.clone(), watcher.config());
        let mut plugin_servers = plugins.servers();
        // The plugins loaded at start have their servers started too.
        plugin_servers.mark_changed();
        tokio::spawn(async move {
            while plugin_servers.changed().await.is_ok() {
                let config = config_now.borrow_and_update().clone();
                upstreams
                    .apply_configured(with_plugins(&config, &plugin_servers), open_keychain)
                    .await;
            }
        });
        let engine = self.server.engine().clone();
        tokio::spawn(async move {
            while status.changed().await.is_ok() {
                let problem = match &*status.borrow_and_update() {
                    ReloadStatus::Rejected { error, .. } => {
                        tracing::error!(
                            "config edit rejected, the previous config stays in force: {error}"
                        );
                        Some(error.to_string())
                    }
                    ReloadStatus::Applied { .. } | ReloadStatus::Initial => None,
                };
                engine.set_config_problem(problem);
            }
        });
        self.watcher = Some(watcher);
        self.plugins = Some((plugins, plugin_watch));
        Ok(())
    }

    /// The plugins of the watched config's directory; `None` when not
    /// watching a config file.
    pub fn plugins(&self) -> Option<&crate::plugins::PluginSet> {
        self.plugins.as_ref().map(|(set, _)| set)
    }

    /// Counts the plugin directory's reloads (see
    /// [`crate::plugins::PluginWatcher::checks`]).
    pub fn plugin_checks(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.plugins.as_ref().map(|(_, w)| w.checks())
    }

    /// The policy editor (the console's Policy view): saves to the watched
    /// config file, or to the config's own path before
    /// [`Daemon::watch_config`].
    pub fn policy_editor(&self) -> &PolicyEditor {
        &self.editor
    }

    /// Counts the config watcher's looks at the file (see
    /// [`ConfigWatcher::checks`]); `None` when not watching.
    pub fn config_checks(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.watcher.as_ref().map(ConfigWatcher::checks)
    }

    /// A fresh one-time console login URL, if the HTTP endpoint is on.
    pub fn console_login_url(&self) -> Option<String> {
        self.console.as_ref().map(ConsoleAuth::login_url)
    }

    /// The console's secrets, if the HTTP endpoint is on (the bearer token
    /// is also in [`ServeOptions::console_token_file`]).
    pub fn console_auth(&self) -> Option<&ConsoleAuth> {
        self.console.as_ref()
    }

    /// Where the console is, for the discovery file's `console` field:
    /// its origin and the file holding its bearer token (never the token).
    pub fn console_location(&self) -> Option<ConsoleLocation> {
        self.console.as_ref().map(|auth| ConsoleLocation {
            url: auth.origin().to_owned(),
            token_file: self.console_token.clone(),
        })
    }

    /// Serves the console UI from `dir` instead of the embedded bundle
    /// (`toolgate serve --ui-dir`, for UI development).
    pub fn set_ui_dir(&mut self, dir: PathBuf) {
        self.ui = UiSource::Dir(dir);
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

    /// The control service: what the console and the CLI's control socket
    /// steer the engine through.
    pub fn control(&self) -> &Control {
        &self.control_service
    }

    /// Serves until `shutdown` fires, then stops within
    /// [`SHUTDOWN_BOUND`] (the steps are in the module doc): nothing is
    /// left pending, every call that started has its audit row, and no
    /// event row is dropped.
    pub async fn run(self, shutdown: CancellationToken) {
        let server = self.server.clone();
        let (credential, credential_file) = self.credential;
        let links = self
            .console
            .clone()
            .map(|auth| Arc::new(auth) as Arc<dyn LoginLinks>);
        let control = server.clone().with_role(Arc::new(ControlSocket::new(
            self.control_service.clone(),
            credential,
            links,
        )));
        let http = async {
            if let Some((endpoint, token, file)) = self.http {
                let console = match self.console {
                    Some(auth) => console::router(Console {
                        api: self.control_service.clone(),
                        auth,
                        editor: self.editor.clone(),
                        connect: Some(self.connect.clone()),
                        ui: self.ui.clone(),
                        port: endpoint.addr().port(),
                        agent_token: token.as_str().into(),
                    }),
                    None => axum::Router::new(),
                };
                endpoint
                    .serve_with(server.clone(), token, console, shutdown.clone())
                    .await;
                let _ = std::fs::remove_file(file);
                let _ = std::fs::remove_file(&self.console_token);
            }
        };
        let serving = async {
            tokio::join!(
                self.socket.serve(server.clone(), shutdown.clone()),
                self.control.serve(control, shutdown.clone()),
                http
            );
        };
        let mut serving = std::pin::pin!(serving);
        tokio::select! {
            () = serving.as_mut() => {}
            () = shutdown.cancelled() => {
                self.control_service.close();
                wind_down(&server, serving).await;
            }
        }
        let _ = std::fs::remove_file(&credential_file);
        self.upstreams.shutdown_within(UPSTREAM_STOP).await;
        drop(self.watcher);
        if let Some(approvals) = server.engine().approvals() {
            approvals.settle().await;
        }
        self.events.finish().await;
        self.audit.flush().await;
        // Once the closings and the last calls are in SQLite: its last
        // pass publishes them.
        if let Some(team) = &self.team {
            team.shutdown().await;
        }
    }
}

/// What the team link is made of, when `[storage] url` is set.
fn team_parts(
    config: &Config,
    data_dir: &std::path::Path,
    approvals: &Approvals,
    audit: &AuditLog,
) -> Result<Option<crate::team::TeamParts>, DaemonError> {
    let Some(storage) = &config.storage else {
        return Ok(None);
    };
    let options = storage.connect_options(&*open_keychain())?;
    let me = crate::team::EngineIdentity::of(data_dir).map_err(|source| DaemonError::Identity {
        path: data_dir.to_owned(),
        source,
    })?;
    Ok(Some(crate::team::TeamParts {
        me,
        url: storage.url().to_owned(),
        options,
        approvals: approvals.clone(),
        audit: audit.clone(),
        upstreams: None,
        deciders: config.team_deciders.clone(),
        rules: config.team_rules,
        pins: config.team_pins,
    }))
}

/// Opens the data dir's audit log as its writer, before any socket is
/// bound: if another live process writes it, this engine must not start
/// (its calls would run and then have their replies withheld, unrecorded).
/// The config's servers, then the plugins' (of two with one name, the
/// config's runs).
fn with_plugins(
    config: &Config,
    plugins: &tokio::sync::watch::Receiver<Vec<crate::config::servers::ServerSpec>>,
) -> Vec<crate::config::servers::ServerSpec> {
    let mut all = config.servers.clone();
    all.extend(plugins.borrow().iter().cloned());
    all
}

async fn own_audit_log(data_dir: &std::path::Path) -> Result<AuditLog, DaemonError> {
    match AuditLog::open_owned(&data_dir.join("audit.db")).await {
        Err(AuditError::Busy { .. }) => Err(DaemonError::Owned {
            data_dir: data_dir.to_owned(),
            pid: crate::discovery::owner_pid(data_dir),
        }),
        other => Ok(other?),
    }
}

/// Shutdown steps 1–3 (module doc), while `serving` (the listeners and
/// their connections, already told to stop accepting) winds down.
async fn wind_down(server: &McpServer, mut serving: Pin<&mut impl Future<Output = ()>>) {
    // Agents' calls allowed through their hooks wait for an after-hook
    // that can no longer reach this engine: they end now, each audited.
    server
        .engine()
        .hook_gates()
        .close(CancelReason::Shutdown)
        .await;
    if let Some(approvals) = server.engine().approvals() {
        let n = approvals.close(CancelReason::Shutdown);
        if n > 0 {
            tracing::info!("closed {n} pending approval request(s) as cancelled");
        }
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, serving.as_mut())
        .await
        .is_ok()
    {
        return;
    }
    tracing::info!(
        "calls still running {}s after the shutdown began are cancelled",
        SHUTDOWN_GRACE.as_secs()
    );
    server.cancel_calls(CancelReason::Shutdown);
    if tokio::time::timeout(SHUTDOWN_DRAIN, serving.as_mut())
        .await
        .is_ok()
    {
        return;
    }
    server.cut_writes();
    serving.await;
}

/// Writes `secret` to `path`, readable by the owner only; a file or a
/// link already there is replaced, never written through.
fn write_secret(path: &std::path::Path, secret: &str) -> std::io::Result<()> {
    crate::private_file::write(path, secret.as_bytes())
}

/// Binds the HTTP endpoint and writes its URL and token to `file` (0600).
async fn start_http(
    port: u16,
    data_dir: &std::path::Path,
    file: &std::path::Path,
) -> Result<(HttpEndpoint, String, PathBuf), DaemonError> {
    let io = |source| DaemonError::Http {
        path: file.to_owned(),
        source,
    };
    let endpoint = bind_http(port, data_dir).await.map_err(io)?;
    crate::last_port::write(data_dir, endpoint.addr().port());
    let token = new_token();
    let body =
        serde_json::json!({"url": format!("http://{}/mcp", endpoint.addr()), "token": token});
    write_secret(file, &body.to_string()).map_err(io)?;
    Ok((endpoint, token, file.to_owned()))
}

/// Binds `port`; for `0`, the port this data dir's engine used last when
/// it is free, else any free one, saying so: open console tabs are on the
/// old origin and will not find this engine.
async fn bind_http(port: u16, data_dir: &std::path::Path) -> std::io::Result<HttpEndpoint> {
    let last = match port {
        0 => crate::last_port::read(data_dir),
        _ => return HttpEndpoint::bind(port).await,
    };
    let Some(last) = last else {
        return HttpEndpoint::bind(0).await;
    };
    let refused = match HttpEndpoint::bind(last).await {
        Ok(endpoint) => return Ok(endpoint),
        Err(e) => e,
    };
    let endpoint = HttpEndpoint::bind(0).await?;
    tracing::warn!(
        "port {last}, where this engine served last, is not available ({refused}); serving on port {} instead. Console tabs still open on the old port will not find it: run `toolgate console`",
        endpoint.addr().port()
    );
    Ok(endpoint)
}

/// The task that records the engine events that matter after the fact
/// (breaker transitions, registry changes, loop-guard levels, approvals)
/// in the audit log's event table.
#[derive(Debug)]
struct EventFollower {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl EventFollower {
    /// Records the events already emitted, then ends: shutdown calls it
    /// after the last event (approval closings, servers stopping) and
    /// before the final flush, so none is lost.
    async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

fn follow_events(engine: &crate::Engine, audit: &AuditLog) -> EventFollower {
    let mut rx = engine.events().subscribe_notable();
    let audit = audit.clone();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let lagged =
        |n| tracing::warn!("audit fell {n} events behind; they are not in the event table");
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                e = rx.recv() => match e {
                    Ok(e) => audit.record_event(&e),
                    Err(RecvError::Lagged(n)) => lagged(n),
                    Err(RecvError::Closed) => return,
                },
                () = stopped.cancelled() => break,
            }
        }
        loop {
            match rx.try_recv() {
                Ok(e) => audit.record_event(&e),
                Err(TryRecvError::Lagged(n)) => lagged(n),
                Err(_) => return,
            }
        }
    });
    EventFollower { stop, task }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn port_zero_takes_the_last_port_back_and_another_only_when_it_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let first = bind_http(0, dir.path()).await.unwrap();
        let port = first.addr().port();
        crate::last_port::write(dir.path(), port);
        drop(first);
        let again = bind_http(0, dir.path()).await.unwrap();
        assert_eq!(again.addr().port(), port, "the remembered port, free again");

        // Held by someone else: a free port instead, not an error.
        let elsewhere = bind_http(0, dir.path()).await.unwrap();
        assert_ne!(elsewhere.addr().port(), port);

        // An explicit port is that port or the bind error.
        let explicit = bind_http(port, dir.path()).await.unwrap_err();
        assert_eq!(explicit.kind(), std::io::ErrorKind::AddrInUse);
    }
}
