//! An in-process daemon on a real Unix socket, and a raw line client.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use toolgate::Engine;
use toolgate::config::Config;
use toolgate::console::ConsoleAuth;
use toolgate::daemon::{Daemon, ServeOptions};
use toolgate::mcp::ServerOptions;
use toolgate::policy::editor::PolicyEditor;
use toolgate::socket::BridgeExes;

/// A running daemon in a temp dir; `root/` is its file root.
pub(crate) struct TestDaemon {
    pub(crate) dir: TempDir,
    pub(crate) socket: PathBuf,
    pub(crate) engine: Engine,
    pub(crate) shutdown: CancellationToken,
    /// The HTTP endpoint's URL and token.
    pub(crate) http: (String, String),
    pub(crate) handle: JoinHandle<()>,
    /// The policy editor (saves to `config.toml` when watched).
    pub(crate) editor: PolicyEditor,
    /// The config watcher's looks at the file, when watched.
    pub(crate) checks: Option<tokio::sync::watch::Receiver<u64>>,
    /// The console's secrets (login links, bearer token).
    pub(crate) console: ConsoleAuth,
    /// The team link, with `[storage] url`.
    pub(crate) team: Option<toolgate::team::Team>,
    /// The control service (what the CLI and the console call).
    pub(crate) service: toolgate::control::Control,
}

impl TestDaemon {
    pub(crate) async fn start(toml: &str) -> Self {
        Self::start_with(toml, ServerOptions::default()).await
    }

    pub(crate) async fn start_with(toml: &str, limits: ServerOptions) -> Self {
        Self::start_in(
            tempfile::tempdir().unwrap(),
            toml,
            limits,
            Daemonize::confined(),
            |_, _| {},
        )
        .await
    }

    /// Like [`Self::start_with`], with a chance to change the config (its
    /// roots, its path) once the temp dir exists.
    pub(crate) async fn start_adjusted(
        toml: &str,
        limits: ServerOptions,
        adjust: impl FnOnce(&mut Config, &std::path::Path),
    ) -> Self {
        Self::start_in(
            tempfile::tempdir().unwrap(),
            toml,
            limits,
            Daemonize::confined(),
            adjust,
        )
        .await
    }

    /// Like [`Self::start_adjusted`], with no warden: governed processes
    /// run unconfined when `toml` says `[barrier] when_unavailable = "run"`
    /// (and are refused otherwise). The control variant of an attack test:
    /// the same attack with the barrier off, to show what it would do.
    pub(crate) async fn start_unconfined(
        toml: &str,
        adjust: impl FnOnce(&mut Config, &std::path::Path),
    ) -> Self {
        let how = Daemonize {
            watched: false,
            warden: None,
        };
        Self::start_in(
            tempfile::tempdir().unwrap(),
            toml,
            ServerOptions::default(),
            how,
            adjust,
        )
        .await
    }

    /// A daemon whose config is the file `config.toml` in its directory,
    /// watched as `toolgate serve` watches it.
    pub(crate) async fn start_watched(toml: &str) -> Self {
        Self::start_in(
            tempfile::tempdir().unwrap(),
            toml,
            ServerOptions::default(),
            Daemonize {
                watched: true,
                ..Daemonize::confined()
            },
            |_, _| {},
        )
        .await
    }

    /// A daemon in `dir`, the directory of a stopped one (see
    /// [`Self::stop`]): the same data dir, started afresh.
    pub(crate) async fn start_again(dir: TempDir, toml: &str) -> Self {
        Self::start_in(
            dir,
            toml,
            ServerOptions::default(),
            Daemonize::confined(),
            |_, _| {},
        )
        .await
    }

    /// The watched config file (see [`Self::start_watched`]).
    pub(crate) fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    async fn start_in(
        dir: TempDir,
        toml: &str,
        limits: ServerOptions,
        how: Daemonize,
        adjust: impl FnOnce(&mut Config, &std::path::Path),
    ) -> Self {
        let Daemonize { watched, warden } = how;
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let file = dir.path().join("config.toml");
        let mut config = if watched {
            std::fs::write(&file, toml).unwrap();
            Config::load(Some(&file)).unwrap()
        } else {
            Config::parse(toml, std::path::Path::new("test.toml")).unwrap()
        };
        config.builtin.roots = vec![root.clone()];
        adjust(&mut config, dir.path());
        let opts = ServeOptions {
            socket: dir.path().join("run/agent.sock"),
            data_dir: dir.path().join("data"),
            retention: Duration::from_secs(86_400),
            http_port: Some(0),
            mode: toolgate::control::EngineMode::Serve,
            warden,
            // The test binary hosts the engine and is a client too, so only
            // the real CLI is a bridge.
            bridges: BridgeExes::none().with(env!("CARGO_BIN_EXE_toolgate")),
        };
        let mut daemon = Daemon::start_with(config.clone(), &opts, limits)
            .await
            .unwrap();
        if watched {
            let overrides = Box::new(move |c: &mut Config| c.builtin.roots = vec![root.clone()]);
            daemon.watch_config(&file, config, overrides).unwrap();
        }
        let engine = daemon.engine().clone();
        let editor = daemon.policy_editor().clone();
        let checks = daemon.config_checks();
        let console = daemon.console_auth().expect("http on").clone();
        let team = daemon.team().cloned();
        let service = daemon.control().clone();
        let http = daemon
            .http()
            .map(|(u, t)| (u, t.to_owned()))
            .expect("http on");
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(daemon.run(shutdown.clone()));
        Self {
            dir,
            socket: opts.socket,
            engine,
            shutdown,
            http,
            handle,
            editor,
            checks,
            console,
            team,
            service,
        }
    }

    /// The HTTP listener's origin, `http://127.0.0.1:PORT`.
    pub(crate) fn origin(&self) -> String {
        self.http.0.trim_end_matches("/mcp").to_owned()
    }

    /// The control socket (the CLI's).
    pub(crate) fn control_socket(&self) -> PathBuf {
        let mut p = self.socket.clone().into_os_string();
        p.push(".ctl");
        p.into()
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub(crate) fn db(&self) -> PathBuf {
        self.dir.path().join("data/audit.db")
    }

    /// The data dir.
    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub(crate) async fn raw(&self) -> Raw {
        Raw::connect(&self.socket).await
    }

    /// A raw client on the control socket, its credential presented.
    pub(crate) async fn control(&self) -> Raw {
        Raw::connect_control(&self.control_socket(), &self.dir.path().join("data")).await
    }

    /// Stops the daemon; returns its directory (audit db at `data/audit.db`).
    pub(crate) async fn stop(self) -> TempDir {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.handle)
            .await
            .expect("daemon stops")
            .unwrap();
        self.dir
    }
}

/// How [`TestDaemon::start_in`] runs the daemon.
struct Daemonize {
    /// Its config is `config.toml`, watched.
    watched: bool,
    /// The warden that confines governed processes (`None`: none).
    warden: Option<PathBuf>,
}

impl Daemonize {
    /// Not watched, confined by the real warden.
    fn confined() -> Self {
        Self {
            watched: false,
            warden: Some(crate::common::warden()),
        }
    }
}

/// A line-level JSON-RPC client.
pub(crate) struct Raw {
    pub(crate) rd: BufReader<OwnedReadHalf>,
    pub(crate) wr: OwnedWriteHalf,
}

impl Raw {
    pub(crate) async fn connect(path: &std::path::Path) -> Self {
        let (rd, wr) = UnixStream::connect(path).await.unwrap().into_split();
        Self {
            rd: BufReader::new(rd),
            wr,
        }
    }

    /// A control-socket client that has presented the control credential
    /// of the engine owning `data_dir`, as the CLI does.
    pub(crate) async fn connect_control(
        path: &std::path::Path,
        data_dir: &std::path::Path,
    ) -> Self {
        let mut c = Self::connect(path).await;
        let credential = toolgate::barrier::credential::Credential::read(data_dir)
            .expect("the control credential");
        let r = c
            .request(
                0,
                toolgate::wire::AUTH_METHOD,
                json!({"credential": credential.expose()}),
            )
            .await;
        assert_eq!(r["result"]["authenticated"], true, "{r}");
        c
    }

    pub(crate) async fn send(&mut self, line: &[u8]) {
        self.wr.write_all(line).await.unwrap();
        self.wr.write_all(b"\n").await.unwrap();
    }

    pub(crate) async fn send_json(&mut self, v: Value) {
        self.send(v.to_string().as_bytes()).await;
    }

    /// The next line as JSON; `None` on EOF.
    pub(crate) async fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(20), self.rd.read_line(&mut line))
            .await
            .expect("a reply within 20 s")
            .ok()?;
        (n > 0).then(|| serde_json::from_str(&line).expect("reply is JSON"))
    }

    /// Sends a request and returns its reply, skipping notifications
    /// (such as `list_changed`) that arrive in between.
    pub(crate) async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send_json(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let v = self.recv().await.expect("reply");
            if v.get("id").is_some() {
                return v;
            }
        }
    }

    pub(crate) async fn initialize(&mut self) {
        let r = self
            .request(0, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}))
            .await;
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        self.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    pub(crate) async fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
            .await
    }
}
