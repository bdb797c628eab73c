//! The agent-facing MCP server: one loop per connection over any byte
//! stream (the Unix socket, stdio), plus [`McpServer::request`], the
//! transport-independent handler the HTTP endpoint shares.
//!
//! Why not rmcp's service loop: it measured 115–133 µs p50 per `tools/call`
//! here against a 50 µs target (docs/architecture/decisions.md, "The agent
//! socket uses its own JSON-RPC loop with rmcp's types"), and it decides
//! for us how
//! malformed frames, oversized lines and unknown `toolgate/…` methods are
//! answered. This loop keeps rmcp's model types for parameters and answers
//! every bad input with the specific JSON-RPC error.
//!
//! Concurrency: cheap requests are answered inline, in order; `tools/call`
//! and the gate methods run concurrently (a call may wait minutes for
//! approval) inside the connection's task, at most `max_in_flight` per
//! connection, after which the loop stops reading (back-pressure on that
//! client only). A client that stops reading is disconnected when one write
//! stalls past `write_timeout`, and affects nobody else.
//!
//! Every call has a live owner (see [`crate::cancel`]): each request runs
//! under a token that is a child of its connection's, which is a child of
//! the server's. `notifications/cancelled` fires the request's token (and,
//! as the MCP spec asks, the request then gets no response); a client that
//! is gone (its socket hung up, a read broke, a write failed or stalled)
//! fires the connection's; shutdown fires the server's once its grace runs
//! out. A cancelled call still ends in its audit row.
//!
//! The end of the input alone (a read-side EOF) is not the client leaving:
//! `toolgate mcp-bridge` shuts the socket's write side when its stdin
//! ends and still relays the replies, so after an EOF the calls in flight
//! run on and are answered. A transport that can tell a full hang-up apart
//! passes it to [`McpServer::serve_with_hangup`] (the Unix socket does).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmcp::model::{CallToolRequestParams, InitializeRequestParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::budget::{DEFAULT_BUDGET, FrameBudget, Held};
use super::frame::{Frame, FrameReader, MAX_FRAME};
use super::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND, Refused};
use super::role::ControlRole;
use super::{convert, gate, hook};
use crate::Engine;
use crate::agent_ids::AgentClaim;
use crate::cancel::{Cancel, CancelReason};
use crate::context::{Caller, Session};
use crate::search::bridge;
use crate::search::calls::Bridged;

/// Protocol versions toolgate speaks, newest first. A client asking for
/// one of them gets it; any other request gets the newest.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Per-connection limits.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest frame. Default [`MAX_FRAME`] (16 MiB).
    pub max_frame: usize,
    /// Concurrent `tools/call`s per connection. Default 256.
    pub max_in_flight: usize,
    /// A single write that takes longer disconnects the client. Default 30 s.
    pub write_timeout: Duration,
    /// Bytes of request frames in flight across every connection of the
    /// server (see [`super::budget`]). Default [`DEFAULT_BUDGET`] (64 MiB).
    pub frame_budget: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_frame: MAX_FRAME,
            max_in_flight: 256,
            write_timeout: Duration::from_secs(30),
            frame_budget: DEFAULT_BUDGET,
        }
    }
}

/// One connection's state, shared by its request tasks.
#[derive(Debug)]
pub struct Conn {
    session: Mutex<Session>,
    initialized: AtomicBool,
    /// The control credential was presented (control role only).
    authenticated: AtomicBool,
    /// The agent id this connection registered in gate mode (one per
    /// connection, so it can name the caller); dropping it removes the
    /// agent's tools and frees the id.
    pub(super) agent: Mutex<Option<AgentClaim>>,
    pub(super) gates: gate::PendingGates,
    /// Fired when the client is gone (or, through the server's token, at
    /// the end of the shutdown grace); every request's token is a child.
    cancel: Cancel,
    /// The tokens of requests in flight, by JSON-RPC id, for
    /// `notifications/cancelled`.
    inflight: Mutex<HashMap<String, Cancel>>,
    /// Counts the connection in the engine's figures while it lives.
    open: Option<crate::engine::OpenConnection>,
    /// The client's name as `initialize` gave it: what `[search.clients]`
    /// and the console's deferral switch are keyed by.
    client: Mutex<Option<String>>,
    /// Counts the client among those connected (agent connections only).
    presence: Mutex<Option<crate::search::clients::ClientPresence>>,
    /// The label `mcp-bridge --client` sent before `initialize`
    /// ([`crate::bridge::CLIENT_LABEL_METHOD`]): the caller's name in place
    /// of the one `initialize` gives.
    label: Mutex<Option<String>>,
}

impl Conn {
    /// A connection for `session`, ended by `cancel` (see
    /// [`McpServer::conn`] for one the server's shutdown reaches).
    pub fn new(session: Session, cancel: Cancel) -> Self {
        Self {
            session: Mutex::new(session),
            initialized: AtomicBool::new(false),
            authenticated: AtomicBool::new(false),
            agent: Mutex::new(None),
            gates: gate::PendingGates::default(),
            cancel,
            inflight: Mutex::new(HashMap::new()),
            open: None,
            client: Mutex::new(None),
            presence: Mutex::new(None),
            label: Mutex::new(None),
        }
    }

    /// The client's name from `initialize`, if it gave one.
    pub fn client(&self) -> Option<String> {
        self.client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The connection's token.
    pub fn cancel_token(&self) -> &Cancel {
        &self.cancel
    }

    /// Cancels every call of the connection (the client is gone).
    pub fn cancel(&self, reason: CancelReason) {
        self.cancel.cancel(reason);
    }

    fn inflight(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cancel>> {
        self.inflight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A token for request `id`, registered so the client can cancel it;
    /// hand it back with [`Self::end_request`].
    pub fn begin_request(&self, id: &Value) -> Cancel {
        let cancel = self.cancel.child();
        self.inflight().insert(id.to_string(), cancel.clone());
        cancel
    }

    /// Forgets request `id` (answered), unless its id was reused meanwhile.
    pub fn end_request(&self, id: &Value, cancel: &Cancel) {
        let mut inflight = self.inflight();
        let key = id.to_string();
        if inflight.get(&key).is_some_and(|c| c.same_as(cancel)) {
            inflight.remove(&key);
        }
    }

    /// `notifications/cancelled` for request `id`; unknown ids (already
    /// answered, never sent) are ignored, as the MCP spec asks.
    fn cancel_request(&self, id: &Value) {
        if let Some(c) = self.inflight().remove(&id.to_string()) {
            c.cancel(CancelReason::ClientCancelled);
        }
    }

    /// The session as it is now (the client name is filled in by `initialize`).
    pub fn session(&self) -> Session {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_client(&self, name: &str, version: &str) {
        // Every event of the connection's calls names the client: an
        // agent's say of what it is called cannot make them large.
        let label = self
            .label
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let named = match label {
            Some(label) => label,
            None => crate::events::event_text(&format!("{name} {version}")).into_owned(),
        };
        self.set_caller(|c| c.client_name = Some(named));
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(crate::events::event_text(name).into_owned());
    }

    /// Takes `label` as the client's name, when it comes before
    /// `initialize` (the bridge sends it first); later it is ignored, so
    /// the calls of one connection never change names midway.
    fn set_label(&self, label: &str) {
        if self.initialized.load(Ordering::Acquire) || self.client().is_some() {
            tracing::debug!("ignored a client label sent after initialize");
            return;
        }
        let label = label.trim();
        if label.is_empty() || label.chars().any(char::is_control) {
            tracing::debug!("ignored an empty or control-character client label");
            return;
        }
        *self.label.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(crate::events::event_text(label).into_owned());
    }

    /// The connection now holds agent id `id` (see [`crate::agent_ids`]):
    /// its later calls are that agent's.
    pub(super) fn set_agent(&self, id: &str) {
        self.set_caller(|c| c.agent_id = Some(id.to_owned()));
    }

    fn set_caller(&self, change: impl FnOnce(&mut Caller)) {
        let mut s = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let mut caller = (*s.caller).clone();
        change(&mut caller);
        s.caller = Arc::new(caller);
    }

    /// Whether the client finished the handshake.
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }
}

/// The MCP server. Cloning shares it, its calls' token and its write cut
/// (also across roles).
#[derive(Clone, Debug)]
pub struct McpServer {
    engine: Engine,
    opts: Arc<ServerOptions>,
    /// Who a listener serves: agents get MCP and gate mode only; the
    /// control socket's server (the `toolgate` CLI) also gets the methods
    /// that inspect and steer the engine, answered by this role. They are
    /// never on the agent socket, so an MCP client cannot reset a breaker
    /// or approve its own call.
    control: Option<Arc<dyn ControlRole>>,
    /// The root of every connection's token: fired at the end of the
    /// shutdown grace.
    calls: Cancel,
    /// Fired at the shutdown deadline: writes still stalled then are
    /// abandoned, so a client that never reads cannot hold shutdown up.
    cut: CancellationToken,
    /// The cap on request bytes in flight, shared by every connection.
    budget: FrameBudget,
}

impl McpServer {
    /// A server for `engine`.
    pub fn new(engine: Engine, opts: ServerOptions) -> Self {
        Self {
            engine,
            budget: FrameBudget::new(
                opts.frame_budget
                    .max(super::frame::frame_cost(opts.max_frame, 0)),
            ),
            opts: Arc::new(opts),
            control: None,
            calls: Cancel::new(),
            cut: CancellationToken::new(),
        }
    }

    /// A connection state for `session` whose calls [`Self::cancel_calls`]
    /// reaches.
    pub fn conn(&self, session: Session) -> Conn {
        let mut conn = Conn::new(session, self.calls.child());
        conn.open = Some(self.engine.connection_opened(self.control.is_some()));
        conn
    }

    /// Cancels every call of every connection (shutdown, once the grace
    /// for in-flight calls is over). Each still ends in its audit row, and
    /// clients still reading get the reason.
    pub fn cancel_calls(&self, reason: CancelReason) {
        self.calls.cancel(reason);
    }

    /// Abandons every write still waiting for a client to read (the
    /// shutdown deadline); the connections then close.
    pub fn cut_writes(&self) {
        self.cut.cancel();
    }

    /// Resolves once [`Self::cut_writes`] was called.
    pub async fn writes_cut(&self) {
        self.cut.cancelled().await;
    }

    /// The same server for the control socket: it also answers `role`'s
    /// methods, and nothing at all until a connection has authenticated
    /// with it. It reads with a frame budget of its own, so agents that
    /// fill theirs never hold up a person deciding on their calls.
    pub fn with_role(mut self, role: Arc<dyn ControlRole>) -> Self {
        self.control = Some(role);
        self.budget = FrameBudget::new(self.budget.cap());
        self
    }

    /// The engine behind it.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Serves one connection over a transport that cannot tell a hang-up
    /// from the end of its input (stdio): see [`Self::serve_with_hangup`].
    pub async fn serve<S>(&self, stream: S, session: Session, shutdown: CancellationToken)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        self.serve_with_hangup(stream, session, shutdown, std::future::pending())
            .await;
    }

    /// Serves one connection until the client is done and every call it
    /// started has ended; each call ends in its audit row, and the agent's
    /// registered tools are removed at the end.
    ///
    /// - End of input: no more requests; calls in flight run on and are
    ///   answered (a half-closed socket still takes replies).
    /// - `hangup` resolving (the peer is gone for good), a broken read, or
    ///   a write that fails or stalls past `write_timeout`: every call in
    ///   flight is cancelled as `client_disconnected`.
    /// - `shutdown`: no more requests; calls in flight run on until the
    ///   server's [`Self::cancel_calls`], and replies are written until
    ///   [`Self::cut_writes`] (the daemon bounds both).
    ///
    /// One task does everything for the connection: it reads, polls the
    /// in-flight calls and writes their replies. A reply that is ready at
    /// once (most are) therefore costs no wake-up of another thread, which
    /// measured as the largest part of a call's latency when calls ran as
    /// spawned tasks feeding a writer task.
    pub async fn serve_with_hangup<S, H>(
        &self,
        stream: S,
        session: Session,
        shutdown: CancellationToken,
        hangup: H,
    ) where
        S: AsyncRead + AsyncWrite + Send + 'static,
        H: Future<Output = ()> + Send,
    {
        let (rd, wr) = tokio::io::split(stream);
        let mut out = Out::new(wr, self.opts.write_timeout, self.cut.clone());
        let conn = Arc::new(self.conn(session));
        let mut calls = InFlight::new();
        let mut frames =
            FrameReader::new(BufReader::new(rd), self.opts.max_frame, self.budget.clone());
        let mut changes = self.engine.registry().subscribe_changes();
        let mut state = ConnState::default();
        let mut hangup = std::pin::pin!(hangup);
        while state.reading || !calls.is_empty() {
            let line = tokio::select! {
                biased;
                () = shutdown.cancelled(), if !state.stopping => {
                    state.stopping = true;
                    state.reading = false;
                    None
                }
                () = &mut hangup, if !state.gone => {
                    tracing::debug!("client hung up");
                    state.gone = true;
                    None
                }
                Some(done) = calls.next(), if !calls.is_empty() => done,
                Ok(()) = changes.changed(), if state.reading => conn
                    .is_initialized()
                    .then(|| jsonrpc::notification_line("notifications/tools/list_changed")),
                frame = frames.next(), if state.reading && calls.len() < self.opts.max_in_flight => match frame {
                    Ok(Frame::Line(line, held)) => self.dispatch(&conn, line, held, &mut calls).await,
                    Ok(Frame::Refused(why, id)) => {
                        Some(jsonrpc::error_line(&id, INVALID_REQUEST, &why.to_string()))
                    }
                    // Half-close: no more requests, replies still wanted.
                    Ok(Frame::Eof) => { state.reading = false; None }
                    Err(e) => {
                        tracing::debug!("connection read failed: {e}");
                        state.gone = true;
                        None
                    }
                },
                else => break,
            };
            if let Some(line) = line.filter(|_| !state.gone) {
                out.send(&line).await;
                state.gone |= !out.is_open();
            }
            if state.gone && !state.abandoned {
                state.abandoned = true;
                state.reading = false;
                conn.cancel(state.reason());
            }
        }
        self.end_session(&conn, state.reason()).await;
    }

    /// Ends what a connection or HTTP session left behind: its token fires
    /// (with `reason`, unless it fired already), gates still waiting for a
    /// report end as `cancelled` and are audited, and its agents' tools
    /// leave the registry.
    pub async fn end_session(&self, conn: &Conn, reason: CancelReason) {
        conn.cancel(reason);
        conn.gates.finish_all().await;
        // Dropping the claim removes the agent's tools and frees its id.
        let claim = conn
            .agent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(claim);
    }

    /// Answers one frame: the reply line for quick requests, nothing for
    /// notifications, and long requests join `calls`. The frame's charge
    /// on the budget (`held`) is given back once the request is answered;
    /// its text as soon as it is parsed.
    async fn dispatch(
        &self,
        conn: &Arc<Conn>,
        line: Vec<u8>,
        held: Held,
        calls: &mut InFlight,
    ) -> Option<Vec<u8>> {
        let parsed = jsonrpc::parse(&line);
        drop(line);
        match parsed {
            Err(r) => Some(jsonrpc::error_line(&r.id, r.code, &r.message)),
            Ok(Incoming::Response) => None,
            Ok(Incoming::Notification { method, params }) => {
                self.notification(conn, &method, params);
                None
            }
            Ok(Incoming::Request { id, method, params }) if runs_long(&method) => {
                let (me, conn2) = (self.clone(), conn.clone());
                let cancel = conn.begin_request(&id);
                let call = async move {
                    let _held = held;
                    let line = me.request(&conn2, &id, &method, params, &cancel).await;
                    conn2.end_request(&id, &cancel);
                    // MCP: a request the client cancelled gets no response.
                    (!cancel.cancelled_here(CancelReason::ClientCancelled)).then_some(line)
                };
                calls.push(Box::pin(call));
                None
            }
            Ok(Incoming::Request { id, method, params }) => Some(
                self.request(conn, &id, &method, params, conn.cancel_token())
                    .await,
            ),
        }
    }

    /// Handles one notification; shared by every transport.
    pub fn notification(&self, conn: &Conn, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => conn.initialized.store(true, Ordering::Release),
            "notifications/cancelled" => {
                if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                    conn.cancel_request(id);
                }
            }
            crate::bridge::CLIENT_LABEL_METHOD => {
                if let Some(label) = params.as_ref().and_then(|p| p["label"].as_str()) {
                    conn.set_label(label);
                }
            }
            _ => tracing::debug!("ignored notification {method}"),
        }
    }

    /// Answers one request, cancelled when `cancel` fires (see
    /// [`Conn::begin_request`]); shared by every transport.
    pub async fn request(
        &self,
        conn: &Arc<Conn>,
        id: &Value,
        method: &str,
        params: Option<Value>,
        cancel: &Cancel,
    ) -> Vec<u8> {
        if let Some(role) = &self.control
            && !conn.authenticated.load(Ordering::Acquire)
        {
            let reply = role
                .authenticate(method, params.as_ref())
                .inspect(|_| conn.authenticated.store(true, Ordering::Release));
            return match reply {
                Ok(v) => jsonrpc::result_line(id, &v),
                Err((code, msg)) => jsonrpc::error_line(id, code, &msg),
            };
        }
        let reply = match method {
            "initialize" => params_of(params).map(|p| self.initialize(conn, &p)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(convert::list_result(
                &self.engine.plan(conn.client().as_deref()).listed(),
            )),
            "tools/call" => match params_of::<CallToolRequestParams>(params) {
                Ok(p) => Ok(self.call(conn, p, cancel).await),
                Err(e) => Err(e),
            },
            m if let Some(role) = &self.control
                && role.answers(m) =>
            {
                let caller = conn.session().caller;
                role.handle(&caller, m, params).await
            }
            "toolgate/register" => gate::register(&self.engine, conn, params),
            "toolgate/gate" => gate::gate(&self.engine, conn, params, cancel).await,
            "toolgate/report" => gate::report(conn, params).await,
            "toolgate/hook" => hook::hook(&self.engine, conn, params, cancel, &self.calls).await,
            other => Err((
                METHOD_NOT_FOUND,
                format!(
                    "method `{other}` not found; toolgate serves initialize, ping, tools/list, tools/call, \
                 toolgate/register, toolgate/gate, toolgate/report and toolgate/hook"
                ),
            )),
        };
        match reply {
            Ok(v) => jsonrpc::result_line(id, &v),
            Err((code, msg)) => jsonrpc::error_line(id, code, &msg),
        }
    }

    /// `tools/call`: a bridge tool's answer, or the governed call.
    async fn call(&self, conn: &Conn, p: CallToolRequestParams, cancel: &Cancel) -> Value {
        let args = Value::Object(p.arguments.unwrap_or_default());
        let session = conn.session();
        if !bridge::is_bridge(&p.name) {
            let r = self
                .engine
                .call_cancellable(&session, &p.name, args, cancel)
                .await;
            return convert::call_result(r.call_id, &r.result);
        }
        match self
            .engine
            .bridge_call(&session, &p.name, args, cancel)
            .await
        {
            Bridged::Answer(result) => convert::bridge_result(&result),
            Bridged::Call(r) => convert::call_result(r.call_id, &r.result),
        }
    }

    fn initialize(&self, conn: &Conn, p: &InitializeRequestParams) -> Value {
        let asked = p.protocol_version.as_str();
        let version = PROTOCOL_VERSIONS
            .iter()
            .find(|v| **v == asked)
            .copied()
            .unwrap_or(PROTOCOL_VERSIONS[0]);
        conn.set_client(&p.client_info.name, &p.client_info.version);
        if self.control.is_none()
            && let Some(name) = conn.client()
        {
            let presence = self.engine.client_connected(&name);
            *conn.presence.lock().unwrap_or_else(PoisonError::into_inner) = Some(presence);
        }
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}, "experimental": {"toolgate": {"gate": true}}},
            "serverInfo": {"name": "toolgate", "version": env!("CARGO_PKG_VERSION")},
            "instructions": instructions(),
        })
    }
}

/// What `initialize` tells the model about toolgate.
pub fn instructions() -> String {
    format!(
        "Tool calls go through toolgate, which validates arguments, may ask a person to approve risky \
         calls, and may refuse calls that break policy; a refusal explains why, so adjust and retry \
         rather than repeating the same call. {}",
        crate::pipeline::trust::system_prompt()
    )
}

/// Methods answered from a task, so a slow one never holds up the others.
pub(super) fn runs_long(method: &str) -> bool {
    matches!(
        method,
        "tools/call" | "toolgate/gate" | "toolgate/report" | "toolgate/hook"
    )
}

/// Typed parameters, or `INVALID_PARAMS` naming what is wrong.
pub(super) fn params_of<T: DeserializeOwned>(params: Option<Value>) -> Result<T, Refused> {
    serde_json::from_value(params.unwrap_or(Value::Null))
        .map_err(|e| (INVALID_PARAMS, format!("invalid params: {e}")))
}

/// The calls of one connection that have not answered yet; each yields
/// its reply line, or nothing if the client cancelled it.
type InFlight = FuturesUnordered<Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send>>>;

/// Where a connection's loop stands.
#[derive(Debug, Clone, Copy)]
struct ConnState {
    /// Requests are still read.
    reading: bool,
    /// Shutdown began: no more requests.
    stopping: bool,
    /// The client is gone (hung up, a read broke, a write failed).
    gone: bool,
    /// The connection's calls were cancelled because it is gone.
    abandoned: bool,
}

impl Default for ConnState {
    fn default() -> Self {
        Self {
            reading: true,
            stopping: false,
            gone: false,
            abandoned: false,
        }
    }
}

impl ConnState {
    /// Why the connection's calls end if they have to: once shutdown
    /// began, a client lost on the way (its writes cut at the deadline) is
    /// shutdown's doing.
    fn reason(self) -> CancelReason {
        if self.stopping {
            CancelReason::Shutdown
        } else {
            CancelReason::ClientDisconnected
        }
    }
}

/// The write half of a connection. A client that stops reading stalls a
/// write; past `stall`, or once the server cuts writes at the shutdown
/// deadline, the connection is marked closed and later lines are dropped
/// (and the loop cancels that client's calls), while nobody else is held
/// up.
struct Out<W> {
    wr: tokio::io::BufWriter<W>,
    stall: Duration,
    cut: CancellationToken,
    open: bool,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    fn new(wr: W, stall: Duration, cut: CancellationToken) -> Self {
        Self {
            wr: tokio::io::BufWriter::new(wr),
            stall,
            cut,
            open: true,
        }
    }

    fn is_open(&self) -> bool {
        self.open
    }

    async fn send(&mut self, line: &[u8]) {
        if !self.open {
            return;
        }
        let Self { wr, stall, cut, .. } = self;
        let write = async {
            wr.write_all(line).await?;
            wr.flush().await
        };
        let written = tokio::select! {
            biased;
            r = tokio::time::timeout(*stall, write) => matches!(r, Ok(Ok(()))),
            () = cut.cancelled() => false,
        };
        if !written {
            tracing::info!("client stopped reading or went away; closing its connection");
            self.open = false;
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
