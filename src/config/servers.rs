//! Upstream MCP servers as configured (`[[servers]]` in the TOML).
//!
//! The transport is a tagged table so each kind carries exactly its own
//! fields: a stdio server cannot have a URL, an HTTP server cannot have a
//! command. Header and env values may be `keyring:NAME` references, resolved
//! from the OS keychain only when a connection is made, so secrets never sit
//! in the config, the logs or the database.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tool::Trust;

/// How toolgate reaches a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "transport", rename_all = "snake_case", deny_unknown_fields)]
pub enum TransportSpec {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment (values may be `keyring:NAME`).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<String>,
    },
    /// Legacy HTTP+SSE (protocol 2024-11-05).
    Sse {
        /// The SSE endpoint, e.g. `http://127.0.0.1:3001/sse`.
        url: String,
        /// Extra headers (values may be `keyring:NAME`).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// Streamable HTTP (protocol 2025-03-26 and later).
    StreamableHttp {
        /// The MCP endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra headers (values may be `keyring:NAME`).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// JSON-RPC messages as WebSocket text frames.
    Websocket {
        /// `ws://` or `wss://` URL.
        url: String,
        /// Extra headers (values may be `keyring:NAME`).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

/// Authentication added to HTTP-based transports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthSpec {
    /// `Authorization: Bearer <token>`.
    Bearer {
        /// The token (normally `keyring:NAME`).
        token: String,
    },
    /// `Authorization: Basic base64(user:password)`.
    Basic {
        /// User name.
        username: String,
        /// Password (normally `keyring:NAME`).
        password: String,
    },
}

/// One `[[servers]]` entry as written.
// Not `deny_unknown_fields`: serde cannot combine it with `flatten`;
// unknown keys must be caught when validating into `ServerSpec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub struct RawServer {
    /// Unique name; becomes the `<name>__` tool prefix and the `mcp:<name>` source.
    pub name: String,
    /// Off = configured but not started.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Trust of the server's output. Default `external`.
    pub trust: Option<Trust>,
    /// Per-call timeout for this server's tools.
    pub timeout_ms: Option<u64>,
    /// Extra attempts on transient failures.
    pub max_retries: Option<u32>,
    /// Breaker threshold for this server's tools.
    pub breaker_failure_threshold: Option<u32>,
    /// Breaker cooldown for this server's tools.
    pub breaker_cooldown_s: Option<u64>,
    /// Authentication for HTTP-based transports.
    pub auth: Option<AuthSpec>,
    /// How to reach it.
    #[serde(flatten)]
    pub transport: TransportSpec,
}

fn yes() -> bool {
    true
}

/// A validated server entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Unique name (valid as a tool-name prefix).
    pub name: String,
    /// Start it?
    pub enabled: bool,
    /// Output trust.
    pub trust: Trust,
    /// Per-call timeout override.
    pub timeout: Option<Duration>,
    /// Retry override.
    pub max_retries: Option<u32>,
    /// Breaker threshold override.
    pub breaker_failure_threshold: Option<u32>,
    /// Breaker cooldown override.
    pub breaker_cooldown: Option<Duration>,
    /// Authentication.
    pub auth: Option<AuthSpec>,
    /// Transport.
    pub transport: TransportSpec,
}
