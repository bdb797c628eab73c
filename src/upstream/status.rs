//! What a person (and `toolgate servers`) sees about each upstream server.

use std::sync::Arc;

use serde::Serialize;

/// The lifecycle of one server connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// First connection attempt in progress.
    Starting,
    /// Connected; its tools are registered.
    Ready,
    /// The connection ended or failed; waiting out the backoff before the
    /// next attempt. Its tools stay listed (calls fail with `connection`)
    /// so agents do not see the list flap on every restart.
    Restarting,
    /// The last attempt failed (see `last_error`); retried after backoff.
    Failed,
    /// Stopped by configuration (removed, disabled) or shutdown.
    Stopped,
}

impl ServerState {
    /// Every state.
    pub const ALL: [Self; 5] = [
        Self::Starting,
        Self::Ready,
        Self::Restarting,
        Self::Failed,
        Self::Stopped,
    ];

    /// Whether the server counts as down (the header's "servers down"):
    /// it was meant to run and its tools cannot be called now. A server
    /// still starting is not down yet, and one stopped by configuration is
    /// not meant to run.
    pub fn is_down(self) -> bool {
        matches!(self, Self::Restarting | Self::Failed)
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Restarting => "restarting",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }
}

/// One server's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ServerStatus {
    /// Its configured name.
    pub server: Arc<str>,
    /// Its state.
    pub state: ServerState,
    /// Why it last failed or exited, if it did.
    pub last_error: Option<String>,
    /// Why the config file's version of this server is not the one in
    /// force (a `keyring:` secret that could not be read on reload): it
    /// runs on its last good config until the problem is fixed.
    pub config_problem: Option<String>,
    /// Tools it contributes to the registry (quarantined ones excluded).
    pub tools: usize,
    /// Tools held back by pinning.
    pub quarantined: usize,
    /// Connections made after the first (restarts and reconnects).
    pub restarts: u32,
    /// The child's process id (stdio servers while running).
    pub pid: Option<u32>,
}

impl ServerStatus {
    pub(crate) fn new(server: Arc<str>) -> Self {
        Self {
            server,
            state: ServerState::Starting,
            last_error: None,
            config_problem: None,
            tools: 0,
            quarantined: 0,
            restarts: 0,
            pid: None,
        }
    }
}
