//! [`Upstreams`]: the set of configured servers, kept in line with the
//! config.
//!
//! The daemon creates one at startup, calls [`Upstreams::apply_configured`]
//! with the enabled and disabled `ServerSpec`s as configured (it resolves
//! their `keyring:` secrets, keeping a running server on its last good spec
//! when a secret cannot be read, then calls [`Upstreams::apply`]), calls it
//! again on every config reload, and calls [`Upstreams::shutdown`] before
//! exiting. `apply` is a diff: new servers start, removed or disabled ones
//! stop, changed ones restart, unchanged ones are not touched (their
//! sessions and processes survive the reload).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinHandle;

use super::pins::{PinError, PinRecord, PinStore};
use super::status::ServerState;
use super::status::ServerStatus;
use super::stderr::{StderrLog, StderrTail};
use super::supervisor::{Control, StatusBoard, Supervisor};
use super::transport::kill_group;
use crate::config::servers::ServerSpec;
use crate::engine::Engine;
use crate::secrets::{SecretProblem, SecretStore, referenced_names, resolve_servers, scrubber_for};

/// Supervision tunables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamOptions {
    /// Limit for starting/connecting and the MCP handshake. Default 60 s:
    /// `npx` may install a package on first start.
    pub connect_timeout: Duration,
    /// First reconnect delay. Default 250 ms.
    pub backoff_initial: Duration,
    /// Largest reconnect delay. Default 30 s: a broken server costs little,
    /// a healed one is back within half a minute.
    pub backoff_max: Duration,
    /// A connection that stayed up this long resets the backoff. Default 30 s.
    pub stable_after: Duration,
    /// How long a stopping server gets to exit after its stdin is closed,
    /// before its process group is killed. Default 2 s.
    pub stop_grace: Duration,
    /// Stderr lines kept per server. Default 200.
    pub stderr_lines: usize,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(60),
            backoff_initial: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
            stable_after: Duration::from_secs(30),
            stop_grace: Duration::from_secs(2),
            stderr_lines: 200,
        }
    }
}

struct Running {
    spec: ServerSpec,
    ctl: mpsc::UnboundedSender<Control>,
    task: JoinHandle<()>,
}

struct Inner {
    engine: Engine,
    pins: PinStore,
    opts: UpstreamOptions,
    board: StatusBoard,
    running: Mutex<HashMap<Arc<str>, Running>>,
    logs: RwLock<HashMap<Arc<str>, StderrLog>>,
    /// Every version a person approves, for a team link to share.
    approved: tokio::sync::broadcast::Sender<PinRecord>,
}

/// The upstream MCP servers. Cloning shares them.
#[derive(Clone)]
pub struct Upstreams {
    inner: Arc<Inner>,
}

impl Upstreams {
    /// A manager that registers tools into `engine` and checks them against
    /// `pins`. Nothing starts until [`Self::apply`].
    pub fn new(engine: Engine, pins: PinStore, opts: UpstreamOptions) -> Self {
        let board = StatusBoard::new(engine.events().clone());
        Self {
            inner: Arc::new(Inner {
                engine,
                pins,
                opts,
                board,
                running: Mutex::new(HashMap::new()),
                logs: RwLock::new(HashMap::new()),
                approved: tokio::sync::broadcast::Sender::new(64),
            }),
        }
    }

    /// Makes the running set match `specs` (the hot-reload entry point).
    /// Returns once removed and changed servers have stopped and new ones
    /// have been started (not necessarily connected: watch
    /// [`Self::statuses`] or `Event::ServerStatus`). Disabled specs count
    /// as absent; of two specs with one name the first wins.
    pub async fn apply(&self, specs: Vec<ServerSpec>) {
        let mut wanted: HashMap<Arc<str>, ServerSpec> = HashMap::new();
        for spec in specs.into_iter().filter(|s| s.enabled) {
            let name: Arc<str> = Arc::from(spec.name.as_str());
            if wanted.contains_key(&name) {
                tracing::warn!("server `{name}` is configured twice; the first entry is used");
                continue;
            }
            wanted.insert(name, spec);
        }
        let mut running = self.inner.running.lock().await;
        let stale: Vec<Arc<str>> = running
            .iter()
            .filter(|(n, r)| wanted.get(*n) != Some(&r.spec))
            .map(|(n, _)| n.clone())
            .collect();
        for name in stale {
            if let Some(r) = running.remove(&name) {
                self.stop(&name, r, self.inner.opts.stop_grace * 3).await;
            }
        }
        for (name, spec) in wanted {
            if let std::collections::hash_map::Entry::Vacant(slot) = running.entry(name.clone()) {
                slot.insert(self.start(name, spec));
            }
        }
        // A status left by a server that could not start (see
        // `apply_configured`) goes once the server is not running.
        for status in self.inner.board.all() {
            if !running.contains_key(&status.server) {
                self.inner.board.remove(&status.server);
            }
        }
    }

    /// Resolves the `keyring:` secrets of the configured `servers` from the
    /// store `open` returns (called on a blocking thread, and only when a
    /// server refers to a secret), then applies them. A running server
    /// whose secrets cannot be read keeps running on the spec it was
    /// started with; a new one is not started (see
    /// [`crate::secrets::resolve_servers`]). Each problem is logged as one
    /// line naming the server and the secret (never a value) and shown in
    /// the server's status (`config_problem` while it runs on its last good
    /// config, `failed` with the reason when it could not start); the
    /// problems are returned too.
    pub async fn apply_configured<F>(&self, servers: Vec<ServerSpec>, open: F) -> Vec<SecretProblem>
    where
        F: FnOnce() -> Box<dyn SecretStore> + Send + 'static,
    {
        if servers.iter().all(|s| referenced_names(s).is_empty()) {
            self.apply(servers).await;
            self.report(&[]);
            return Vec::new();
        }
        let running = self.running_specs().await;
        let resolved =
            tokio::task::spawn_blocking(move || resolve_servers(servers, &*open(), &running)).await;
        let resolved = match resolved {
            Ok(r) => r,
            Err(e) => {
                // Nothing was decided: leave every server as it is.
                tracing::error!(
                    "resolving the servers' secrets failed ({e}); servers keep their current config"
                );
                return Vec::new();
            }
        };
        for p in &resolved.problems {
            tracing::error!("{p}");
        }
        self.apply(resolved.specs).await;
        self.report(&resolved.problems);
        resolved.problems
    }

    /// Shows `problems` in the servers' statuses and clears old ones.
    fn report(&self, problems: &[SecretProblem]) {
        for status in self.inner.board.all() {
            if status.config_problem.is_some()
                && !problems.iter().any(|p| *p.server == *status.server)
            {
                self.inner
                    .board
                    .update(&status.server, |s| s.config_problem = None);
            }
        }
        for p in problems {
            let name: Arc<str> = Arc::from(p.server.as_str());
            let line = p.to_string();
            self.inner.board.update(&name, |s| {
                if p.kept {
                    s.config_problem = Some(line);
                } else {
                    s.state = ServerState::Failed;
                    s.last_error = Some(line);
                }
            });
        }
    }

    /// The resolved spec each running server was started with, by name:
    /// the last good config of each.
    pub async fn running_specs(&self) -> HashMap<String, ServerSpec> {
        let running = self.inner.running.lock().await;
        running
            .iter()
            .map(|(name, r)| (name.to_string(), r.spec.clone()))
            .collect()
    }

    /// Stops every server and waits until their processes are gone.
    pub async fn shutdown(&self) {
        self.apply(Vec::new()).await;
    }

    /// Stops every server at once, each given `limit` to stop politely
    /// (stdin closed, as the MCP spec asks) before its process group is
    /// killed: the daemon's shutdown is bounded whatever the servers do.
    pub async fn shutdown_within(&self, limit: Duration) {
        let running: Vec<(Arc<str>, Running)> = self.inner.running.lock().await.drain().collect();
        let stops = running
            .into_iter()
            .map(|(name, r)| async move { self.stop(&name, r, limit).await });
        futures::future::join_all(stops).await;
    }

    /// Every running server's status, by name.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.inner.board.all()
    }

    /// One server's status.
    pub fn status(&self, server: &str) -> Option<ServerStatus> {
        self.inner.board.get(server)
    }

    /// The last stderr lines of a stdio server, oldest first.
    pub fn stderr(&self, server: &str) -> Option<Vec<String>> {
        let logs = self
            .inner
            .logs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        logs.get(server).map(StderrLog::lines)
    }

    /// A stdio server's stderr lines numbered above `after` (lines are
    /// numbered from 1 as they arrive, across restarts of the server).
    pub fn stderr_since(&self, server: &str, after: u64) -> Option<StderrTail> {
        let logs = self
            .inner
            .logs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        logs.get(server).map(|l| l.since(after))
    }

    /// Stops `server` and starts it again with the same spec (a person's
    /// "restart"); its stderr lines are kept. `None` if no server of that
    /// name runs. Returns once the old process is gone and the new one is
    /// starting (watch its status to see it ready).
    pub async fn restart(&self, server: &str) -> Option<ServerStatus> {
        let mut running = self.inner.running.lock().await;
        let (name, r) = running.remove_entry(server)?;
        let log = {
            let logs = self
                .inner
                .logs
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            logs.get(&name).cloned()
        };
        let spec = r.spec.clone();
        let restarts = self.inner.board.get(&name).map_or(0, |s| s.restarts);
        self.stop(&name, r, self.inner.opts.stop_grace * 3).await;
        let log = log
            .unwrap_or_else(|| StderrLog::new(self.inner.opts.stderr_lines, scrubber_for(&spec)));
        running.insert(name.clone(), self.start_with(name.clone(), spec, log));
        self.inner
            .board
            .update(&name, |s| s.restarts = restarts.saturating_add(1));
        self.inner.board.get(&name)
    }

    /// Each pin a person approves from now on (a team link shares them).
    pub fn approved_pins(&self) -> tokio::sync::broadcast::Receiver<PinRecord> {
        self.inner.approved.subscribe()
    }

    /// The pin store (for `toolgate pins` and the UI).
    pub fn pins(&self) -> &PinStore {
        &self.inner.pins
    }

    /// A person approves the pending version of `name`; the server's tools
    /// are then re-read so the tool is registered without a restart.
    ///
    /// # Errors
    /// See [`PinStore::approve`].
    pub async fn approve(&self, name: &str) -> Result<PinRecord, PinError> {
        let rec = self.inner.pins.approve(name).await?;
        // Nobody listening (no team link) is not an error.
        let _ = self.inner.approved.send(rec.clone());
        // It is no longer held back, whether or not the server re-lists it.
        self.inner
            .engine
            .events()
            .changed(crate::slices::Slice::Tools);
        let running = self.inner.running.lock().await;
        if let Some(r) = running.get(rec.server.as_str()) {
            let _ = r.ctl.send(Control::Refresh);
        }
        Ok(rec)
    }

    fn start(&self, name: Arc<str>, spec: ServerSpec) -> Running {
        let stderr = StderrLog::new(self.inner.opts.stderr_lines, scrubber_for(&spec));
        self.start_with(name, spec, stderr)
    }

    fn start_with(&self, name: Arc<str>, spec: ServerSpec, stderr: StderrLog) -> Running {
        {
            let mut logs = self
                .inner
                .logs
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            logs.insert(name.clone(), stderr.clone());
        }
        self.inner.board.update(&name, |s| {
            *s = ServerStatus::new(name.clone());
        });
        let (ctl, rx) = mpsc::unbounded_channel();
        let sup = Supervisor {
            spec: spec.clone(),
            server: name,
            engine: self.inner.engine.clone(),
            pins: self.inner.pins.clone(),
            board: self.inner.board.clone(),
            stderr,
            opts: self.inner.opts.clone(),
            peer: Arc::default(),
        };
        let task = tokio::spawn(sup.run(rx));
        Running { spec, ctl, task }
    }

    /// Stops one server; past `limit` (normally a little more than the
    /// task's own stop path, two grace periods) the task is ended and its
    /// processes killed from here.
    async fn stop(&self, name: &Arc<str>, r: Running, limit: Duration) {
        let _ = r.ctl.send(Control::Stop);
        let pid = self.inner.board.get(name).and_then(|s| s.pid);
        let mut task = r.task;
        if tokio::time::timeout(limit, &mut task).await.is_err() {
            task.abort();
            pid.into_iter().for_each(kill_group);
        }
        self.inner.board.remove(name);
        let mut logs = self
            .inner
            .logs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        logs.remove(name);
    }
}

impl Drop for Inner {
    /// Safety net for a daemon that forgets [`Upstreams::shutdown`]: no
    /// server process may outlive toolgate.
    fn drop(&mut self) {
        for s in self.board.all() {
            s.pid.into_iter().for_each(kill_group);
        }
        if let Ok(running) = self.running.try_lock() {
            running.values().for_each(|r| r.task.abort());
        }
    }
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstreams")
            .field("servers", &self.inner.board.all())
            .finish_non_exhaustive()
    }
}
