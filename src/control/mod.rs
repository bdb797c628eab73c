//! The control service: everything a person can see and do, as one Rust
//! API with no transport (docs/architecture/decisions.md, "One control
//! service for the console and the CLI").
//!
//! The CLI's control socket and the console's HTTP API are two thin
//! transports over one [`Control`]; each method maps onto one request,
//! and each failure is a [`ControlError`] whose `code` the transport turns
//! into a status.
//!
//! | concern | module |
//! |---|---|
//! | live stream: numbered events, resume, reload | [`stream`] |
//! | snapshot consistent with a stream position | [`snapshot`] |
//! | one slice read again when the stream says it changed | [`slices`] |
//! | recent outputs, raw and as the model saw them | [`outputs`] |
//! | call detail | [`calls`] |
//! | audit queries and export | [`audit_query`] |
//! | approve / deny / always, scope preview, rules | [`decisions`] |
//! | breakers | [`breakers`] |
//! | servers, stderr, pins | [`servers`] |
//! | tools | [`tools`] |
//! | the team's queue: other engines' requests, deciding them | [`team`] |
//! | "what would happen to this call?" | [`policy_test`] |
//! | what the UI sees (TypeScript bindings) | [`types`] |
//! | the CLI's transport: the control socket's methods | [`socket`] |
//!
//! Wiring (the daemon, after building the engine and its upstreams, before
//! serving, so every call of the run is in the stream and has its output
//! kept):
//!
//! ```no_run
//! # async fn demo(engine: toolgate::Engine, up: toolgate::upstream::Upstreams)
//! #     -> Result<(), toolgate::control::ControlError> {
//! use toolgate::control::{Control, EngineInfo, EngineMode};
//! let info = EngineInfo::now(EngineMode::Serve, "/data", "/run/agent.sock", None);
//! let control = Control::builder(engine, info).upstreams(up).start().await?;
//! let snapshot = control.snapshot().await?;
//! let mut events = control.subscribe(Some(snapshot.seq));
//! # Ok(()) }
//! ```

pub mod audit_query;
pub mod breakers;
pub mod calls;
pub mod decisions;
mod error;
pub mod outputs;
pub mod policy_test;
pub mod search;
pub mod servers;
pub mod slices;
pub mod snapshot;
pub mod socket;
pub mod stream;
pub mod team;
pub mod tools;
pub mod types;

use std::sync::Arc;

pub use decisions::Decider;
pub use error::ControlError;
pub use outputs::{OutputLimits, RecentOutputs};
pub use stream::{RING, Sequencer, StreamItem, Subscription};
pub use types::{EngineInfo, EngineMode};

use crate::Engine;
use crate::upstream::Upstreams;

impl EngineInfo {
    /// This process's engine, started now.
    pub fn now(
        mode: EngineMode,
        data_dir: impl AsRef<std::path::Path>,
        agent_socket: impl AsRef<std::path::Path>,
        http_url: Option<String>,
    ) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            started_ms: crate::audit::now_ms(),
            data_dir: data_dir.as_ref().display().to_string(),
            agent_socket: agent_socket.as_ref().display().to_string(),
            http_url,
            mode,
        }
    }
}

struct Inner {
    engine: Engine,
    upstreams: Option<Upstreams>,
    team: Option<crate::team::Team>,
    info: EngineInfo,
    seq: Sequencer,
    outputs: RecentOutputs,
    /// The newest audit row when the service started: rows above it are
    /// this run's, whose call ids are unique.
    first_row: i64,
    /// Fired when the engine stops: live streams end then, so a console
    /// connection never holds shutdown up (it reconnects and finds the
    /// engine gone or restarted).
    closing: tokio_util::sync::CancellationToken,
}

/// The control service. Cloning shares it.
#[derive(Clone)]
pub struct Control {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("engine", &self.inner.info)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Control`]; see [`Control::builder`].
#[derive(Debug)]
pub struct ControlBuilder {
    engine: Engine,
    upstreams: Option<Upstreams>,
    team: Option<crate::team::Team>,
    info: EngineInfo,
    limits: OutputLimits,
    ring: usize,
}

impl ControlBuilder {
    /// Also shows and steers these upstream servers and their pins.
    pub fn upstreams(mut self, upstreams: Upstreams) -> Self {
        self.upstreams = Some(upstreams);
        self
    }

    /// Also shows the team's queue and decides its requests through this
    /// link (`[storage] url`); its changes reach the console's stream.
    pub fn team(mut self, team: crate::team::Team) -> Self {
        self.team = Some(team);
        self
    }

    /// Keeps recent outputs within these bounds instead of the defaults.
    pub fn outputs(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Keeps `cap` envelopes for resuming instead of [`RING`].
    pub fn ring(mut self, cap: usize) -> Self {
        self.ring = cap;
        self
    }

    /// Starts numbering events and keeping outputs. Needs a tokio runtime.
    ///
    /// # Errors
    /// The engine has a control service already (one per engine: it owns
    /// the engine's output recorder), or the audit log cannot be read.
    pub async fn start(self) -> Result<Control, ControlError> {
        let outputs = RecentOutputs::new(self.limits);
        if !self.engine.record_outputs(Arc::new(outputs.clone())) {
            return Err(ControlError::Unavailable(
                "this engine has a control service already; share a clone of it".into(),
            ));
        }
        let first_row = match self.engine.audit() {
            Some(audit) => {
                audit.flush().await;
                let (max,): (i64,) = sqlx::query_as("SELECT coalesce(max(id), 0) FROM calls")
                    .fetch_one(audit.pool())
                    .await?;
                max
            }
            None => 0,
        };
        let seq = Sequencer::with_capacity(self.engine.events(), self.ring);
        let closing = tokio_util::sync::CancellationToken::new();
        if let Some(team) = &self.team {
            team::announce(team, self.engine.events().clone(), closing.clone());
        }
        Ok(Control {
            inner: Arc::new(Inner {
                engine: self.engine,
                upstreams: self.upstreams,
                team: self.team,
                info: self.info,
                seq,
                outputs,
                first_row,
                closing,
            }),
        })
    }
}

impl Control {
    /// A builder for the control service of `engine`.
    pub fn builder(engine: Engine, info: EngineInfo) -> ControlBuilder {
        ControlBuilder {
            engine,
            upstreams: None,
            team: None,
            info,
            limits: OutputLimits::default(),
            ring: RING,
        }
    }

    /// The engine it steers.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// About the engine.
    pub fn info(&self) -> &EngineInfo {
        &self.inner.info
    }

    /// The live stream after `after` (`None`: from now on); see
    /// [`stream`].
    pub fn subscribe(&self, after: Option<u64>) -> Subscription {
        self.inner.seq.subscribe(after)
    }

    /// [`Self::subscribe`] as a stream that also ends when the engine
    /// stops ([`Self::close`]).
    pub fn live(
        &self,
        after: Option<u64>,
    ) -> impl futures::Stream<Item = StreamItem> + Send + 'static {
        use futures::StreamExt;
        let closed = self.inner.closing.clone().cancelled_owned();
        self.subscribe(after).into_stream().take_until(closed)
    }

    /// Ends every live stream, now and from now on: the engine is
    /// stopping.
    pub fn close(&self) {
        self.inner.closing.cancel();
    }

    /// The engine's process and its open connections, now.
    pub fn health(&self) -> types::EngineHealth {
        let (agents, control) = self.engine().open_connections();
        types::EngineHealth {
            process: crate::process_stats::read(),
            agent_connections: agents,
            control_connections: control,
        }
    }

    /// How MCP clients connect to this engine.
    pub fn connect(&self) -> types::ConnectInfo {
        let info = &self.inner.info;
        let resolved = crate::connect::command::resolved();
        let snippet =
            crate::connect::command::snippet(&resolved, std::path::Path::new(&info.data_dir));
        types::ConnectInfo {
            bridge_command: snippet.command_line(),
            mcp_servers: serde_json::to_value(&snippet).unwrap_or_default(),
            command_note: resolved.explain(),
            agent_socket: info.agent_socket.clone(),
            http_url: info.http_url.clone(),
        }
    }

    /// The store of recent outputs.
    pub fn outputs(&self) -> &RecentOutputs {
        &self.inner.outputs
    }
}

#[cfg(test)]
mod testing;
