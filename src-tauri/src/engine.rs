//! The engine behind the window (docs/architecture/overview.md, "One
//! client, two modes"): the live engine that owns the data dir, found through its
//! discovery file (attach), or else the very daemon `toolgate serve` runs,
//! started in this process ([`toolgate::daemon::Launch`]).
//!
//! Either way the shell then reaches it the same way, as a console client:
//! a one-time login URL minted on its control socket
//! (`toolgate/console/login`) for the window, and the console bearer token
//! from the file the discovery file names (`console.token_file`) for the
//! tray and notifications.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolgate::barrier::credential::Credential;
use toolgate::client::ControlClient;
use toolgate::config::Config;
use toolgate::daemon::{DaemonError, Launch, ServeOptions};
use toolgate::discovery::{self, EngineInfo};
use url::Url;

/// How long Quit waits for the in-app engine. Its own shutdown is bounded
/// (≤ 5 s: pending approvals cancelled, in-flight calls cut, audit
/// flushed); this is the shell's backstop above that bound.
pub const STOP_GRACE: Duration = Duration::from_secs(6);

/// Where the engine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Started by this app, stopped by its Quit.
    InApp,
    /// Another process's (e.g. `toolgate serve` as a user service); Quit
    /// leaves it running.
    Attached {
        /// Its pid.
        pid: u32,
    },
}

impl Mode {
    /// The window title, which says which mode the app is in.
    pub fn title(&self) -> String {
        match self {
            Self::InApp => "toolgate — engine in this app".to_owned(),
            Self::Attached { pid } => format!("toolgate — attached to pid {pid}"),
        }
    }

    /// The same in the words of the console's Settings view.
    pub fn describe(&self) -> String {
        match self {
            Self::InApp => "Engine: in this app".to_owned(),
            Self::Attached { pid } => format!("Engine: attached to pid {pid}"),
        }
    }
}

/// Why the engine could not be started or reached.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The config file does not load.
    #[error(transparent)]
    Config(#[from] toolgate::config::ConfigError),
    /// The in-app engine did not start.
    #[error(transparent)]
    Daemon(#[from] DaemonError),
}

/// Why the console could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The engine's control socket does not answer.
    #[error("the engine's control socket {} does not answer: {source}", .path.display())]
    Control {
        /// The socket.
        path: PathBuf,
        /// The error.
        source: toolgate::client::ClientError,
    },
    /// The engine answers but serves no console (started with `--no-http`,
    /// or a build without one).
    #[error("the engine serves no console ({0})")]
    NoConsole(String),
    /// The engine's discovery file names no console, or cannot be read.
    #[error("the engine's discovery file names no console ({0})")]
    NoLocation(String),
    /// The control credential cannot be read.
    #[error("control credential {}: {source}", .path.display())]
    Credential {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The bearer token file cannot be read.
    #[error("console bearer token {}: {source}", .path.display())]
    Token {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Where the shell finds the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleLink {
    /// `http://127.0.0.1:PORT`.
    pub base: Url,
    /// The one-time login URL for the window (`/login?t=...`).
    pub login: Url,
    /// The console bearer token, for the shell's own requests.
    pub bearer: String,
}

/// Where the engine's files are, from the environment the CLI reads
/// (`TOOLGATE_CONFIG`, `TOOLGATE_DATA_DIR`, `TOOLGATE_SOCKET`) over the
/// XDG defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The config file, if one was named.
    pub config: Option<PathBuf>,
    /// The data dir, if one was named (else the config's, else the
    /// default).
    pub data_dir: Option<PathBuf>,
    /// The agent socket of an engine started here, if one was named (else
    /// the runtime dir's).
    pub socket: Option<PathBuf>,
}

impl Place {
    /// From `TOOLGATE_CONFIG` and `TOOLGATE_DATA_DIR`, as `toolgate`
    /// reads them.
    pub fn from_env() -> Self {
        let var = |k| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            config: var("TOOLGATE_CONFIG"),
            data_dir: var("TOOLGATE_DATA_DIR"),
            socket: var("TOOLGATE_SOCKET"),
        }
    }

    fn resolve(&self, config: Option<&Config>) -> PathBuf {
        self.data_dir
            .clone()
            .or_else(|| config.and_then(|c| c.data_dir.clone()))
            .unwrap_or_else(toolgate::paths::default_data_dir)
    }
}

/// The engine this app works with.
#[derive(Debug)]
pub struct Engine {
    mode: Mode,
    data_dir: PathBuf,
    control_socket: PathBuf,
    agent_socket: PathBuf,
    /// The in-app daemon's stop token and task.
    running: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Engine {
    /// Attaches to the live engine of the data dir, or starts one here.
    ///
    /// # Errors
    /// The config does not load, or the in-app engine did not start.
    pub async fn start_or_attach(place: &Place) -> Result<Self, EngineError> {
        // The config decides the data dir, so it is read first; attaching
        // to a running engine does not need it to be valid.
        let config = Config::load(place.config.as_deref());
        let data_dir = place.resolve(config.as_ref().ok());
        if let Some(info) = discovery::find_live(&data_dir).await {
            return Ok(Self::attached(info));
        }
        let mut config = config?;
        config.strict |= std::env::var("CI").is_ok_and(|v| v == "true");
        let launch = Launch {
            config: config.clone(),
            config_file: place
                .config
                .clone()
                .or_else(toolgate::paths::default_config_file),
            opts: serve_options(place, &data_dir),
            overrides: Box::new(move |c| c.strict |= config.strict),
        };
        let daemon = match launch.start().await {
            Ok(d) => d,
            // Another engine took the data dir since we looked: use it.
            Err(DaemonError::Owned { .. }) => match discovery::find_live(&data_dir).await {
                Some(info) => return Ok(Self::attached(info)),
                None => return Err(owned(&data_dir)),
            },
            Err(e) => return Err(e.into()),
        };
        let agent_socket = daemon.socket_path().to_owned();
        let control_socket = toolgate::paths::control_socket_for(&agent_socket);
        let stop = CancellationToken::new();
        let task = tokio::spawn(daemon.run(stop.clone()));
        Ok(Self {
            mode: Mode::InApp,
            data_dir,
            control_socket,
            agent_socket,
            running: Some((stop, task)),
        })
    }

    fn attached(info: EngineInfo) -> Self {
        Self {
            mode: Mode::Attached { pid: info.pid },
            data_dir: info.data_dir,
            control_socket: info.control_socket,
            agent_socket: info.agent_socket,
            running: None,
        }
    }

    /// In this app or attached.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Where agents connect.
    pub fn agent_socket(&self) -> &Path {
        &self.agent_socket
    }

    /// A fresh console link: a one-time login URL minted on the control
    /// socket and the bearer token.
    ///
    /// # Errors
    /// See [`LinkError`].
    pub async fn console_link(&self) -> Result<ConsoleLink, LinkError> {
        let control = |source| LinkError::Control {
            path: self.control_socket.clone(),
            source,
        };
        let credential =
            Credential::read(&self.data_dir).map_err(|source| LinkError::Credential {
                path: toolgate::barrier::credential::file_in(&self.data_dir),
                source,
            })?;
        let mut client = ControlClient::connect(&self.control_socket, &credential)
            .await
            .map_err(control)?;
        let reply = match client
            .request(
                "toolgate/console/login",
                serde_json::json!({"for": "desktop"}),
            )
            .await
        {
            Ok(r) => r,
            Err(toolgate::client::ClientError::Rpc { message, .. }) => {
                return Err(LinkError::NoConsole(message));
            }
            Err(e) => return Err(control(e)),
        };
        let login = reply["url"]
            .as_str()
            .and_then(|u| Url::parse(u).ok())
            .filter(is_loopback_http)
            .ok_or_else(|| LinkError::NoConsole(format!("unusable login URL in {reply}")))?;
        let mut base = login.clone();
        base.set_path("/");
        base.set_query(None);
        let path = self.console_location()?.token_file;
        let bearer = std::fs::read_to_string(&path)
            .map_err(|source| LinkError::Token { path, source })?
            .trim()
            .to_owned();
        Ok(ConsoleLink {
            base,
            login,
            bearer,
        })
    }

    /// The console's entry in the engine's discovery file.
    fn console_location(&self) -> Result<discovery::ConsoleLocation, LinkError> {
        match discovery::read(&self.data_dir) {
            Ok(Some(EngineInfo {
                console: Some(c), ..
            })) => Ok(c),
            Ok(_) => Err(LinkError::NoLocation(format!(
                "no console in {}",
                discovery::file(&self.data_dir).display()
            ))),
            Err(e) => Err(LinkError::NoLocation(e.to_string())),
        }
    }

    /// Stops the in-app engine (its bounded shutdown, the same as
    /// `toolgate serve` on SIGTERM) and waits for it, at most
    /// [`STOP_GRACE`]; an attached engine is left running.
    pub async fn stop(mut self) {
        let Some((stop, task)) = self.running.take() else {
            return;
        };
        stop.cancel();
        if tokio::time::timeout(STOP_GRACE, task).await.is_err() {
            tracing::error!(
                "the engine did not stop within {} s; quitting anyway",
                STOP_GRACE.as_secs()
            );
        }
    }
}

fn serve_options(place: &Place, data_dir: &Path) -> ServeOptions {
    let mut opts = ServeOptions::for_data_dir(data_dir.to_owned());
    opts.mode = toolgate::control::EngineMode::Desktop;
    if let Some(socket) = &place.socket {
        opts.socket = socket.clone();
    }
    opts
}

fn owned(data_dir: &Path) -> EngineError {
    EngineError::Daemon(DaemonError::Owned {
        data_dir: data_dir.to_owned(),
        pid: discovery::owner_pid(data_dir),
    })
}

/// The console is ours only on loopback over plain HTTP; anything else in
/// a reply is not followed (the window would show it with the settings
/// commands' capability).
fn is_loopback_http(u: &Url) -> bool {
    u.scheme() == "http" && matches!(u.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_says_which_engine() {
        assert_eq!(Mode::InApp.title(), "toolgate — engine in this app");
        assert_eq!(
            Mode::Attached { pid: 4242 }.title(),
            "toolgate — attached to pid 4242"
        );
    }

    #[test]
    fn only_a_loopback_http_console_is_followed() {
        for (u, ok) in [
            ("http://127.0.0.1:4000/login?t=x", true),
            ("https://127.0.0.1:4000/login?t=x", false),
            ("http://example.org/login?t=x", false),
            ("http://10.0.0.1:4000/login", false),
            ("file:///etc/passwd", false),
        ] {
            assert_eq!(is_loopback_http(&Url::parse(u).unwrap()), ok, "{u}");
        }
    }
}
