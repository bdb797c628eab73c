//! The agent-facing MCP server: one loop per connection over any byte
//! stream (the Unix socket, stdio), plus [`McpServer::request`], the
//! transport-independent handler the HTTP endpoint shares.
//!
//! Why not rmcp's service loop: it measured 115–133 µs p50 per `tools/call`
//! here (STACK.md §1) against a 50 µs target, and it decides for us how
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use rmcp::model::{CallToolRequestParams, InitializeRequestParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::frame::{Frame, FrameReader, MAX_FRAME};
use super::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND};
use super::{convert, gate};
use crate::Engine;
use crate::context::{Caller, Session};
use crate::tool::Source;

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
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_frame: MAX_FRAME,
            max_in_flight: 256,
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// One connection's state, shared by its request tasks.
#[derive(Debug)]
pub struct Conn {
    session: Mutex<Session>,
    initialized: AtomicBool,
    pub(super) agents: Mutex<Vec<String>>,
    pub(super) gates: gate::PendingGates,
    inflight: Mutex<HashMap<String, AbortHandle>>,
}

impl Conn {
    /// A connection for `session`.
    pub fn new(session: Session) -> Self {
        Self {
            session: Mutex::new(session),
            initialized: AtomicBool::new(false),
            agents: Mutex::new(Vec::new()),
            gates: gate::PendingGates::default(),
            inflight: Mutex::new(HashMap::new()),
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
        let mut s = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let caller = Caller {
            client_name: Some(format!("{name} {version}")),
            ..(*s.caller).clone()
        };
        s.caller = Arc::new(caller);
    }

    /// Whether the client finished the handshake.
    pub fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }
}

/// Who a listener serves. Agents get MCP and gate mode only; the control
/// role (the `toolgate` CLI, on its own socket) also gets the methods that
/// inspect and steer the engine. They are never on the agent socket, so an
/// MCP client cannot reset a breaker or, later, approve its own call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An agent (MCP client).
    Agent,
    /// A person's tool (the CLI).
    Control,
}

/// The MCP server. Cloning shares it.
#[derive(Clone, Debug)]
pub struct McpServer {
    engine: Engine,
    opts: Arc<ServerOptions>,
    role: Role,
    upstreams: Option<crate::upstream::Upstreams>,
    console: Option<crate::console::ConsoleAuth>,
}

impl McpServer {
    /// A server for `engine`.
    pub fn new(engine: Engine, opts: ServerOptions) -> Self {
        Self {
            engine,
            opts: Arc::new(opts),
            role: Role::Agent,
            upstreams: None,
            console: None,
        }
    }

    /// Lets the control role show upstream servers and approve pins.
    pub fn with_upstreams(mut self, upstreams: crate::upstream::Upstreams) -> Self {
        self.upstreams = Some(upstreams);
        self
    }

    /// Lets the control role mint console login links
    /// (`toolgate/console/login`, for `toolgate console`).
    pub fn with_console(mut self, console: crate::console::ConsoleAuth) -> Self {
        self.console = Some(console);
        self
    }

    /// The same server in another role.
    pub fn with_role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The engine behind it.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Serves one connection until the client leaves, the connection breaks
    /// or `shutdown` fires; in-flight calls are finished (and audited)
    /// before it returns, and the agent's registered tools are removed.
    ///
    /// One task does everything for the connection: it reads, polls the
    /// in-flight calls and writes their replies. A reply that is ready at
    /// once (most are) therefore costs no wake-up of another thread, which
    /// measured as the largest part of a call's latency when calls ran as
    /// spawned tasks feeding a writer task.
    pub async fn serve<S>(&self, stream: S, session: Session, shutdown: CancellationToken)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (rd, wr) = tokio::io::split(stream);
        let mut out = Out::new(wr, self.opts.write_timeout);
        let conn = Arc::new(Conn::new(session));
        let mut calls = InFlight::new();
        let mut frames = FrameReader::new(BufReader::new(rd), self.opts.max_frame);
        let mut changes = self.engine.registry().subscribe_changes();
        let mut reading = true;
        while reading && out.is_open() {
            let line = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(done) = calls.next(), if !calls.is_empty() => done,
                Ok(()) = changes.changed() => conn
                    .is_initialized()
                    .then(|| jsonrpc::notification_line("notifications/tools/list_changed")),
                frame = frames.next(), if calls.len() < self.opts.max_in_flight => match frame {
                    Ok(Frame::Line(line)) => self.dispatch(&conn, &line, &mut calls).await,
                    Ok(Frame::TooLarge { skipped }) => {
                        let msg = format!("frame of {skipped} bytes exceeds the {} byte limit and was discarded", self.opts.max_frame);
                        Some(jsonrpc::error_line(&Value::Null, INVALID_REQUEST, &msg))
                    }
                    Ok(Frame::Eof) => { reading = false; None }
                    Err(e) => {
                        tracing::debug!("connection read failed: {e}");
                        reading = false;
                        None
                    }
                },
            };
            if let Some(line) = line {
                out.send(&line).await;
            }
        }
        // Calls already started run to the end and are recorded, whether or
        // not their client is still there to read the reply.
        while let Some(done) = calls.next().await {
            if let Some(line) = done {
                out.send(&line).await;
            }
        }
        self.cleanup(&conn);
    }

    /// Removes what a connection left behind: its agents' tools and any
    /// gate still waiting for a report (that call then fails as
    /// `connection`).
    pub fn cleanup(&self, conn: &Conn) {
        conn.gates.clear();
        let agents =
            std::mem::take(&mut *conn.agents.lock().unwrap_or_else(PoisonError::into_inner));
        for agent in agents {
            self.engine
                .registry()
                .unregister_source(&Source::Agent(agent.into()));
        }
    }

    /// Answers one frame: the reply line for quick requests, nothing for
    /// notifications, and long requests join `calls`.
    async fn dispatch(
        &self,
        conn: &Arc<Conn>,
        line: &[u8],
        calls: &mut InFlight,
    ) -> Option<Vec<u8>> {
        match jsonrpc::parse(line) {
            Err(r) => Some(jsonrpc::error_line(&r.id, r.code, &r.message)),
            Ok(Incoming::Response) => None,
            Ok(Incoming::Notification { method, params }) => {
                self.notification(conn, &method, params);
                None
            }
            Ok(Incoming::Request { id, method, params }) if runs_long(&method) => {
                let (me, conn2) = (self.clone(), conn.clone());
                let (abort, registration) = AbortHandle::new_pair();
                let key = id.to_string();
                conn.inflight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key.clone(), abort);
                let call = async move {
                    let line = me.request(&conn2, &id, &method, params).await;
                    conn2
                        .inflight
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&key);
                    line
                };
                calls.push(Box::pin(Abortable::new(call, registration).map(Result::ok)));
                None
            }
            Ok(Incoming::Request { id, method, params }) => {
                Some(self.request(conn, &id, &method, params).await)
            }
        }
    }

    /// Handles one notification; shared by every transport.
    pub fn notification(&self, conn: &Conn, method: &str, params: Option<Value>) {
        match method {
            "notifications/initialized" => conn.initialized.store(true, Ordering::Release),
            "notifications/cancelled" => {
                let id = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .map(Value::to_string);
                if let Some(h) = id.and_then(|id| {
                    conn.inflight
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id)
                }) {
                    h.abort();
                }
            }
            _ => tracing::debug!("ignored notification {method}"),
        }
    }

    /// Answers one request; shared by every transport.
    pub async fn request(
        &self,
        conn: &Arc<Conn>,
        id: &Value,
        method: &str,
        params: Option<Value>,
    ) -> Vec<u8> {
        let reply = match method {
            "initialize" => params_of(params).map(|p| self.initialize(conn, &p)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(convert::list_result(&self.engine.tools())),
            "tools/call" => match params_of::<CallToolRequestParams>(params) {
                Ok(p) => {
                    let args = Value::Object(p.arguments.unwrap_or_default());
                    let r = self.engine.call(&conn.session(), &p.name, args).await;
                    Ok(convert::call_result(r.call_id, &r.result))
                }
                Err(e) => Err(e),
            },
            m if self.role == Role::Control && super::control::is_control(m) => {
                let caller = conn.session().caller;
                super::control::handle(
                    &self.engine,
                    self.upstreams.as_ref(),
                    self.console.as_ref(),
                    &caller,
                    m,
                    params,
                )
                .await
            }
            "toolgate/register" => gate::register(&self.engine, conn, params),
            "toolgate/gate" => gate::gate(&self.engine, conn, params).await,
            "toolgate/report" => gate::report(conn, params).await,
            other => Err((
                METHOD_NOT_FOUND,
                format!(
                    "method `{other}` not found; toolgate serves initialize, ping, tools/list, tools/call, \
                 toolgate/register, toolgate/gate and toolgate/report"
                ),
            )),
        };
        match reply {
            Ok(v) => jsonrpc::result_line(id, &v),
            Err((code, msg)) => jsonrpc::error_line(id, code, &msg),
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
fn runs_long(method: &str) -> bool {
    matches!(method, "tools/call" | "toolgate/gate" | "toolgate/report")
}

/// An error reply: JSON-RPC code and message.
pub(super) type Refused = (i64, String);

/// Typed parameters, or `INVALID_PARAMS` naming what is wrong.
pub(super) fn params_of<T: DeserializeOwned>(params: Option<Value>) -> Result<T, Refused> {
    serde_json::from_value(params.unwrap_or(Value::Null))
        .map_err(|e| (INVALID_PARAMS, format!("invalid params: {e}")))
}

/// The calls of one connection that have not answered yet; each yields
/// its reply line, or nothing if the client cancelled it.
type InFlight = FuturesUnordered<Pin<Box<dyn Future<Output = Option<Vec<u8>>> + Send>>>;

/// The write half of a connection. A client that stops reading stalls a
/// write; past `stall` the connection is marked closed and later lines are
/// dropped, so that client's in-flight calls still finish and are recorded
/// while nobody else is held up.
struct Out<W> {
    wr: tokio::io::BufWriter<W>,
    stall: Duration,
    open: bool,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    fn new(wr: W, stall: Duration) -> Self {
        Self {
            wr: tokio::io::BufWriter::new(wr),
            stall,
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
        let write = async {
            self.wr.write_all(line).await?;
            self.wr.flush().await
        };
        if !matches!(tokio::time::timeout(self.stall, write).await, Ok(Ok(()))) {
            tracing::info!("client stopped reading or went away; closing its connection");
            self.open = false;
        }
    }
}
