//! One task per server: connect, import its tools, watch, reconnect.
//!
//! A stdio server is spawned once and kept, so a stateful session survives
//! between calls. When the connection ends (the child exited, the socket
//! closed) the task clears the connection slot (calls in flight fail with
//! `connection`, new ones fail fast), kills the child's process group so no
//! helper it spawned lingers, and reconnects after an exponential backoff
//! (doubling from `backoff_initial`, capped at `backoff_max`; reset once a
//! connection stayed up for `stable_after`). The tool list is re-read after
//! every (re)connect — a server may emit `list_changed` before toolgate can
//! hear it (over streamable HTTP, before the client's event stream is up;
//! docs/architecture/decisions.md, "Measured facts behind the stack") — and
//! on every `notifications/tools/list_changed`.
//!
//! Stopping (removal, config change, shutdown) closes the connection
//! politely (stdin closed, as the MCP spec asks), waits `stop_grace`, then
//! SIGKILLs the whole group and waits for the child to be reaped: no
//! zombies, no orphans.

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, Peer, QuitReason, RoleClient};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::errors::UpstreamError;
use super::import::{ImportCtx, Imported, import};
use super::manager::UpstreamOptions;
use super::pins::PinStore;
use super::remote_tool::PeerSlot;
use super::status::{ServerState, ServerStatus};
use super::stderr::StderrLog;
use super::transport::{self, Connection, kill_group};
use crate::config::servers::ServerSpec;
use crate::engine::Engine;
use crate::events::{Event, EventBus};
use crate::slices::Slice;
use crate::tool::Source;

/// Messages from the manager to a server's task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// Re-read the tool list (a pin was approved).
    Refresh,
    /// Stop for good.
    Stop,
}

/// Every server's status, published as events on change.
#[derive(Debug, Clone)]
pub(crate) struct StatusBoard {
    map: Arc<RwLock<BTreeMap<Arc<str>, ServerStatus>>>,
    events: EventBus,
}

impl StatusBoard {
    pub(crate) fn new(events: EventBus) -> Self {
        Self {
            map: Arc::default(),
            events,
        }
    }

    pub(crate) fn all(&self) -> Vec<ServerStatus> {
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        map.values().cloned().collect()
    }

    pub(crate) fn get(&self, server: &str) -> Option<ServerStatus> {
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        map.get(server).cloned()
    }

    pub(crate) fn remove(&self, server: &str) {
        let removed = {
            let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
            map.remove(server).is_some()
        };
        if removed {
            self.events.changed(Slice::Servers);
        }
    }

    /// Changes one status; emits [`Event::ServerStatus`] when what a person
    /// sees at a glance (state, tool count, error) changed, and
    /// [`Slice::Servers`] as changed when anything in it did (a restart
    /// count, a pid, a config problem, quarantined tools).
    pub(crate) fn update(&self, server: &Arc<str>, f: impl FnOnce(&mut ServerStatus)) {
        let (event, any) = {
            let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
            let mut fresh = false;
            let st = map.entry(server.clone()).or_insert_with(|| {
                fresh = true;
                ServerStatus::new(server.clone())
            });
            let whole = st.clone();
            let before = (st.state, st.tools, st.last_error.clone());
            f(st);
            let changed = before != (st.state, st.tools, st.last_error.clone());
            let event = changed.then(|| Event::ServerStatus {
                server: server.clone(),
                state: st.state,
                tools: st.tools,
                error: st.last_error.clone(),
            });
            (event, fresh || whole != *st)
        };
        if let Some(e) = event {
            self.events.emit(e);
        }
        if any {
            self.events.changed(Slice::Servers);
        }
    }
}

/// What one server's task works with.
pub(crate) struct Supervisor {
    pub(crate) spec: ServerSpec,
    pub(crate) server: Arc<str>,
    pub(crate) engine: Engine,
    pub(crate) pins: PinStore,
    pub(crate) board: StatusBoard,
    pub(crate) stderr: StderrLog,
    pub(crate) opts: UpstreamOptions,
    pub(crate) peer: PeerSlot,
}

/// How a connection ended.
enum Exit {
    /// Told to stop.
    Stopped,
    /// The connection ended by itself.
    Closed(String),
}

/// rmcp client handler: forwards `list_changed` to the task.
#[derive(Clone)]
struct Watcher {
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
    }
}

impl Supervisor {
    /// Changes this server's status; its error text is scrubbed of the
    /// server's secret values first (see [`crate::scrub`]), so the
    /// console, `toolgate servers` and the event table never show them.
    fn update(&self, f: impl FnOnce(&mut ServerStatus)) {
        let scrub = self.stderr.scrubber();
        self.board.update(&self.server, |s| {
            f(s);
            if let Some(e) = s.last_error.take() {
                s.last_error = Some(scrub.scrub_owned(e));
            }
        });
    }

    /// `text` scrubbed of the server's secret values, for log lines.
    fn shown<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.stderr.scrubber().scrub(text)
    }

    /// Runs until told to stop; then the server's tools are gone from the
    /// registry and its processes are ended.
    pub(crate) async fn run(self, mut ctl: mpsc::UnboundedReceiver<Control>) {
        let mut imported = Imported::new();
        let mut attempt: u32 = 0;
        loop {
            let (tx, mut changed) = mpsc::unbounded_channel();
            let handler = Watcher { changed: tx };
            let timeout = self.opts.connect_timeout;
            let conn = transport::connect(
                &self.spec,
                handler,
                &self.stderr,
                timeout,
                self.engine.barrier(),
                self.opts.stop_grace,
            )
            .await;
            let started = Instant::now();
            let exit = match conn {
                Ok(conn) => {
                    self.session(conn, &mut changed, &mut ctl, &mut imported)
                        .await
                }
                Err(e) => {
                    self.failed(&e);
                    Exit::Closed(e.to_string())
                }
            };
            let Exit::Closed(why) = exit else { break };
            if started.elapsed() >= self.opts.stable_after {
                attempt = 0;
            }
            self.update(|s| {
                if s.state != ServerState::Failed {
                    s.state = ServerState::Restarting;
                }
                s.last_error = Some(why);
                s.pid = None;
            });
            let delay = backoff(&self.opts, attempt);
            attempt = attempt.saturating_add(1);
            if stop_requested(&mut ctl, delay).await {
                break;
            }
            self.update(|s| s.restarts += 1);
        }
        self.retire(&imported);
    }

    /// One live connection, until it ends or the task is told to stop.
    async fn session(
        &self,
        conn: Connection<Watcher>,
        changed: &mut mpsc::UnboundedReceiver<()>,
        ctl: &mut mpsc::UnboundedReceiver<Control>,
        imported: &mut Imported,
    ) -> Exit {
        let Connection { service, pid } = conn;
        let peer = service.peer().clone();
        let token = service.cancellation_token();
        let mut waiting = pin!(service.waiting());
        self.peer.store(Some(Arc::new(peer.clone())));
        if let Err(e) = self.refresh(&peer, imported).await {
            self.peer.store(None);
            token.cancel();
            self.end(pid, waiting.as_mut()).await;
            return Exit::Closed(e.to_string());
        }
        self.update(|s| {
            s.state = ServerState::Ready;
            s.pid = pid;
        });
        loop {
            tokio::select! {
                q = waiting.as_mut() => {
                    self.peer.store(None);
                    pid.into_iter().for_each(kill_group);
                    return Exit::Closed(self.closed_reason(q));
                }
                Some(()) = changed.recv() => {
                    while changed.try_recv().is_ok() {}
                    self.refresh_logged(&peer, imported).await;
                }
                c = ctl.recv() => match c {
                    Some(Control::Refresh) => self.refresh_logged(&peer, imported).await,
                    Some(Control::Stop) | None => {
                        self.peer.store(None);
                        token.cancel();
                        self.end(pid, waiting.as_mut()).await;
                        return Exit::Stopped;
                    }
                },
            }
        }
    }

    /// Waits for a cancelled service to wind down (its stdin is closed),
    /// then kills the process group and waits for the child to be reaped.
    async fn end(
        &self,
        pid: Option<u32>,
        mut waiting: std::pin::Pin<
            &mut impl Future<Output = Result<QuitReason, tokio::task::JoinError>>,
        >,
    ) {
        let grace = self.opts.stop_grace;
        if tokio::time::timeout(grace, waiting.as_mut()).await.is_ok() {
            pid.into_iter().for_each(kill_group);
            return;
        }
        pid.into_iter().for_each(kill_group);
        // rmcp's close path waits for the killed child, which reaps it.
        let _ = tokio::time::timeout(grace, waiting).await;
    }

    async fn refresh_logged(&self, peer: &Peer<RoleClient>, imported: &mut Imported) {
        if let Err(e) = self.refresh(peer, imported).await {
            let e = e.to_string();
            tracing::warn!(server = %self.server, "refreshing tools failed: {}", self.shown(&e));
            self.update(|s| s.last_error = Some(e));
        }
    }

    /// Re-reads the tool list and brings the registry in line.
    async fn refresh(
        &self,
        peer: &Peer<RoleClient>,
        imported: &mut Imported,
    ) -> Result<(), UpstreamError> {
        let tools = peer
            .list_all_tools()
            .await
            .map_err(|e| UpstreamError::ListTools(e.to_string()))?;
        let cx = ImportCtx {
            engine: &self.engine,
            pins: &self.pins,
            spec: &self.spec,
            server: &self.server,
            peer: &self.peer,
            scrub: self.stderr.scrubber(),
        };
        let out = import(&cx, imported, tools).await;
        for e in &out.errors {
            tracing::warn!(server = %self.server, "{}", self.shown(e));
        }
        let count = imported.len();
        self.update(|s| {
            s.tools = count;
            s.quarantined = out.quarantined;
            if let Some(e) = out.errors.last() {
                s.last_error = Some(e.clone());
            }
        });
        Ok(())
    }

    fn failed(&self, e: &UpstreamError) {
        let e = e.to_string();
        tracing::warn!(server = %self.server, "cannot connect: {}", self.shown(&e));
        self.update(|s| {
            s.state = ServerState::Failed;
            s.last_error = Some(e);
        });
    }

    fn closed_reason(&self, q: Result<QuitReason, tokio::task::JoinError>) -> String {
        let what = match q {
            Ok(QuitReason::Closed) => "the connection closed".to_owned(),
            Ok(QuitReason::Cancelled) => "the connection was cancelled".to_owned(),
            Ok(other) => format!("the connection ended: {other:?}"),
            Err(e) => format!("the client task failed: {e}"),
        };
        match self.stderr.last() {
            Some(line) => format!("{what}; last stderr line: {line}"),
            None => what,
        }
    }

    /// Removes the server's tools and limits; marks it stopped.
    fn retire(&self, imported: &Imported) {
        self.peer.store(None);
        self.engine
            .registry()
            .unregister_source(&Source::Mcp(self.server.clone()));
        for name in imported.keys() {
            self.engine.settings().clear_tool(name.as_str());
        }
        self.update(|s| {
            s.state = ServerState::Stopped;
            s.tools = 0;
            s.pid = None;
        });
    }
}

/// Delay before reconnect attempt `attempt` (0-based).
pub(crate) fn backoff(opts: &UpstreamOptions, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.min(20));
    opts.backoff_initial
        .saturating_mul(factor)
        .min(opts.backoff_max)
}

/// Waits out `delay`; true if told to stop meanwhile. Refresh requests are
/// moot while disconnected (the reconnect re-reads the list anyway).
async fn stop_requested(ctl: &mut mpsc::UnboundedReceiver<Control>, delay: Duration) -> bool {
    let deadline = Instant::now() + delay;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return false,
            c = ctl.recv() => match c {
                Some(Control::Refresh) => {}
                Some(Control::Stop) | None => return true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let o = UpstreamOptions {
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(1),
            ..UpstreamOptions::default()
        };
        let d: Vec<u128> = (0..6).map(|a| backoff(&o, a).as_millis()).collect();
        assert_eq!(d, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(backoff(&o, u32::MAX), Duration::from_secs(1));
    }

    /// Drains `rx`: the `(server_status, servers changed)` counts.
    fn counts(rx: &mut tokio::sync::broadcast::Receiver<Event>) -> (usize, usize) {
        let (mut status, mut changed) = (0, 0);
        while let Ok(e) = rx.try_recv() {
            match e {
                Event::ServerStatus { .. } => status += 1,
                Event::StateChanged {
                    slice: Slice::Servers,
                    ..
                } => changed += 1,
                _ => {}
            }
        }
        (status, changed)
    }

    #[test]
    fn any_change_of_a_status_announces_the_servers_slice() {
        let bus = EventBus::new();
        let mut rx = bus.subscribe();
        let board = StatusBoard::new(bus.clone());
        let name: Arc<str> = Arc::from("gh");
        board.update(&name, |s| s.state = ServerState::Ready);
        assert_eq!(counts(&mut rx), (1, 1), "a new server");
        // A restart that lands in the same state: no status event, but the
        // restart count and pid a view shows changed.
        board.update(&name, |s| {
            s.restarts += 1;
            s.pid = Some(42);
        });
        assert_eq!(counts(&mut rx), (0, 1));
        board.update(&name, |_| {});
        assert_eq!(counts(&mut rx), (0, 0), "nothing changed, nothing said");
        board.remove("gh");
        assert_eq!(counts(&mut rx), (0, 1), "a removed server");
        assert_eq!(bus.revision(Slice::Servers), 3);
    }
}
