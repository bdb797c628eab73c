//! Upstream MCP servers as configured (`[[servers]]` in the TOML), and their
//! validation into [`ServerSpec`], the only form the upstream clients accept.
//!
//! The transport is a tagged table so each kind carries exactly its own
//! fields: a stdio server cannot have a URL, an HTTP server cannot have a
//! command. Header, env and auth values may be `keyring:NAME` references,
//! resolved from the OS keychain only when a connection is made
//! ([`crate::secrets::resolve_spec`]), so secrets never sit in the config,
//! the logs or the database.
//!
//! # Rules (each rejection has its own test in `servers_tests.rs`)
//! - **Closed tables.** serde cannot combine `deny_unknown_fields` with the
//!   `flatten` that merges the transport's keys into the server table, so
//!   [`RawServer`]'s `Deserialize` first reads the table into a
//!   [`toml::Table`], checks every key against the common keys plus the keys
//!   of its `transport` ([`allowed_keys`]), and only then runs the derived
//!   deserializer. Errors name the key (`urll: unknown key …`);
//!   [`super::Config::parse`] adds `servers[i].` and the line.
//! - **Names** are `^[A-Za-z0-9_-]{1,24}$` without `__` and not ending in
//!   `_`. They become the `<server>__<tool>` prefix (tool names are
//!   `^[A-Za-z0-9_-]{1,64}$`, docs/architecture/overview.md, "Tool
//!   names"): 24 + 2 leaves 38 characters for the
//!   upstream tool's own name, which covers the tool names seen in practice,
//!   and the `__` ban keeps the split between server and tool unambiguous.
//! - **Unique** names; URLs parse and use `http(s)` for `sse` and
//!   `streamable_http`, `ws(s)` for `websocket`; overrides within
//!   [`limits`]; `auth` only on network transports; `keyring:` references
//!   well-formed.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::secrets::{SecretName, secret_ref};
use crate::tool::Trust;

/// Bounds for the per-server overrides, one place each.
///
/// Chosen so a typo (an extra zero, seconds written as milliseconds) is
/// caught, not to police taste: anything a real server plausibly needs fits.
pub mod limits {
    /// Longest server name; see the module docs for why 24.
    pub const MAX_NAME_LEN: usize = 24;
    /// `timeout_ms` range: 1 ms to one hour.
    pub const TIMEOUT_MS: (u64, u64) = (1, 3_600_000);
    /// `max_retries` range. Retries run inside the call's deadline anyway;
    /// more than 10 only hides a dead server.
    pub const MAX_RETRIES: (u32, u32) = (0, 10);
    /// `breaker_failure_threshold` range.
    pub const BREAKER_FAILURE_THRESHOLD: (u32, u32) = (1, 1000);
    /// `breaker_cooldown_s` range: up to one day.
    pub const BREAKER_COOLDOWN_S: (u64, u64) = (0, 86_400);
}

/// How toolgate reaches a server.
///
/// `Debug` shows env and header *names* but redacts their values (unless a
/// value is still an unresolved `keyring:` reference), because a resolved
/// spec holds real secrets and specs end up in log lines.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

impl TransportSpec {
    /// The `transport = "…"` tag, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Sse { .. } => "sse",
            Self::StreamableHttp { .. } => "streamable_http",
            Self::Websocket { .. } => "websocket",
        }
    }
}

/// A value in `Debug` output: `keyring:` references are not secret, anything
/// else might be.
struct Redacted<'a>(&'a str);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match secret_ref(self.0) {
            Some(_) => write!(f, "{:?}", self.0),
            None => f.write_str("<redacted>"),
        }
    }
}

fn redacted_map(m: &BTreeMap<String, String>) -> BTreeMap<&str, Redacted<'_>> {
    m.iter().map(|(k, v)| (k.as_str(), Redacted(v))).collect()
}

impl fmt::Debug for TransportSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &redacted_map(env))
                .field("cwd", cwd)
                .finish(),
            Self::Sse { url, headers }
            | Self::StreamableHttp { url, headers }
            | Self::Websocket { url, headers } => f
                .debug_struct(match self {
                    Self::Sse { .. } => "Sse",
                    Self::StreamableHttp { .. } => "StreamableHttp",
                    _ => "Websocket",
                })
                .field("url", url)
                .field("headers", &redacted_map(headers))
                .finish(),
        }
    }
}

/// Authentication added to HTTP-based transports.
///
/// `Debug` redacts the token and password for the same reason as
/// [`TransportSpec`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

impl fmt::Debug for AuthSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bearer { token } => f
                .debug_struct("Bearer")
                .field("token", &Redacted(token))
                .finish(),
            Self::Basic { username, password } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &Redacted(password))
                .finish(),
        }
    }
}

/// One `[[servers]]` entry as written.
///
/// `Serialize`/`Deserialize` are hand-written around the derived ones
/// (`remote = "Self"`) so unknown keys are rejected despite the `flatten`;
/// see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self", rename_all = "snake_case")]
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
    /// Count results the server marks `isError` as failures of the tool.
    /// Default false: `isError` is normally a tool's answer to one call
    /// ("no such issue"), which any agent can provoke; set it for a server
    /// that reports its own outages that way.
    pub breaker_counts_is_error: Option<bool>,
    /// Let this stdio server open Unix sockets (a docker or database
    /// server), over `[barrier] unix_sockets`.
    pub unix_sockets: Option<bool>,
    /// Authentication for HTTP-based transports.
    pub auth: Option<AuthSpec>,
    /// How to reach it.
    #[serde(flatten)]
    pub transport: TransportSpec,
}

fn yes() -> bool {
    true
}

/// Keys every server table may have, whatever its transport.
const COMMON_KEYS: &[&str] = &[
    "name",
    "enabled",
    "trust",
    "timeout_ms",
    "max_retries",
    "breaker_failure_threshold",
    "breaker_cooldown_s",
    "breaker_counts_is_error",
    "auth",
    "transport",
];

/// The transports, as written in `transport = "…"`.
pub const TRANSPORTS: &[&str] = &["stdio", "sse", "streamable_http", "websocket"];

/// The transport-specific keys of `transport`, or `None` if it is unknown.
pub fn allowed_keys(transport: &str) -> Option<&'static [&'static str]> {
    match transport {
        "stdio" => Some(&["command", "args", "env", "cwd", "unix_sockets"]),
        "sse" | "streamable_http" | "websocket" => Some(&["url", "headers"]),
        _ => None,
    }
}

/// Every key not allowed in a server table of this transport, with a
/// message of the form `key: problem` (the caller adds `servers[i].`).
fn check_keys(table: &toml::Table) -> Result<(), String> {
    let transport = match table.get("transport") {
        Some(toml::Value::String(t)) => t.as_str(),
        Some(other) => {
            return Err(format!(
                "transport: expected a string, one of {}, got {}",
                TRANSPORTS.join(", "),
                other.type_str()
            ));
        }
        None => {
            return Err(format!(
                "transport: missing; one of {}",
                TRANSPORTS.join(", ")
            ));
        }
    };
    let Some(own) = allowed_keys(transport) else {
        return Err(format!(
            "transport: unknown transport `{transport}`; one of {}",
            TRANSPORTS.join(", ")
        ));
    };
    for (key, value) in table {
        if !COMMON_KEYS.contains(&key.as_str()) && !own.contains(&key.as_str()) {
            return Err(format!(
                "{key}: unknown key for transport `{transport}`; expected one of {}",
                COMMON_KEYS
                    .iter()
                    .chain(own)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        check_transport_type(key, value)?;
    }
    Ok(())
}

/// Type-checks the transport's own keys here because serde reports type
/// errors inside a `flatten`ed enum without the key's name.
fn check_transport_type(key: &str, value: &toml::Value) -> Result<(), String> {
    use toml::Value as V;
    let (ok, expected) = match key {
        "command" | "cwd" | "url" => (value.is_str(), "a string"),
        "args" => (
            value.as_array().is_some_and(|a| a.iter().all(V::is_str)),
            "an array of strings",
        ),
        "env" | "headers" => (
            value.as_table().is_some_and(|t| t.values().all(V::is_str)),
            "a table of strings",
        ),
        _ => return Ok(()),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{key}: expected {expected}, got {}",
            describe(value)
        ))
    }
}

fn describe(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("string {s:?}"),
        toml::Value::Integer(i) => format!("integer `{i}`"),
        other => other.type_str().to_owned(),
    }
}

impl<'de> Deserialize<'de> for RawServer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Checking inside `visit_map` (not after `d` returns) lets toml put
        // the span of *this* server table on the error.
        d.deserialize_map(ServerVisitor)
    }
}

struct ServerVisitor;

impl<'de> serde::de::Visitor<'de> for ServerVisitor {
    type Value = RawServer;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a server table")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawServer, A::Error> {
        use serde::de::Error;
        let mut table = toml::Table::new();
        while let Some((k, v)) = map.next_entry::<String, toml::Value>()? {
            table.insert(k, v);
        }
        check_keys(&table).map_err(A::Error::custom)?;
        RawServer::deserialize(toml::Value::Table(table))
            .map_err(|e| A::Error::custom(keyed_message(&e)))
    }
}

impl Serialize for RawServer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RawServer::serialize(self, s)
    }
}

/// toml's error for a value-level deserialize reads `message\nin `a.b``;
/// turn it into `a.b: message` so every server error starts with its key.
fn keyed_message(e: &toml::de::Error) -> String {
    let text = e.to_string();
    let text = text.trim_end();
    match text.rsplit_once("\nin `") {
        Some((msg, key)) => format!("{}: {}", key.trim_end_matches('`'), msg.trim()),
        None => text.to_owned(),
    }
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
    /// Whether `isError` results count for the breaker (default false).
    pub breaker_counts_is_error: bool,
    /// Unix sockets for a stdio server, over `[barrier] unix_sockets`.
    pub unix_sockets: Option<bool>,
    /// Authentication.
    pub auth: Option<AuthSpec>,
    /// Transport.
    pub transport: TransportSpec,
    /// The values [`crate::secrets::resolve_spec`] put in place of
    /// `keyring:` references (empty as configured), so whatever the server
    /// prints can be scrubbed of them (see [`crate::scrub`]).
    pub resolved_secrets: Vec<crate::secrets::Secret>,
}

impl ServerSpec {
    /// An enabled, `external` server with no overrides and no auth: what a
    /// `[[servers]]` entry with only a name and a transport validates to.
    pub fn new(name: impl Into<String>, transport: TransportSpec) -> Self {
        Self {
            name: name.into(),
            enabled: true,
            trust: Trust::External,
            timeout: None,
            max_retries: None,
            breaker_failure_threshold: None,
            breaker_cooldown: None,
            breaker_counts_is_error: false,
            unix_sockets: None,
            auth: None,
            transport,
            resolved_secrets: Vec::new(),
        }
    }
}

/// Why a server name is not usable as a tool-name prefix.
///
/// # Errors
/// Empty, longer than [`limits::MAX_NAME_LEN`], a character outside
/// `[A-Za-z0-9_-]`, containing `__`, or ending in `_`.
pub fn check_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "`{name}` contains {c:?}; use A-Z, a-z, 0-9, _ and -"
        ));
    }
    if name.len() > limits::MAX_NAME_LEN {
        return Err(format!(
            "`{name}` is {} characters; at most {} so `<server>__<tool>` fits in 64",
            name.len(),
            limits::MAX_NAME_LEN
        ));
    }
    if name.contains("__") || name.ends_with('_') {
        return Err(format!(
            "`{name}` contains `__` or ends in `_`; `__` separates server and tool names"
        ));
    }
    if let Ok(agent) = name.parse::<crate::hooks::HookAgent>() {
        return Err(format!(
            "`{name}` is reserved: toolgate names {}'s own tools `{name}__<tool>` when it gates \
             them through the agent's hooks; give this server another name",
            agent.display_name()
        ));
    }
    Ok(())
}

/// Validates every server, pushing each problem as `servers[i].key: …`.
/// Returns the specs of the servers that passed (the caller discards them
/// if any problem was found).
pub fn validate(raw: &[RawServer], problems: &mut Vec<String>) -> Vec<ServerSpec> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut specs = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        let at = format!("servers[{i}]");
        let before = problems.len();
        if let Err(e) = check_server_name(&s.name) {
            problems.push(format!("{at}.name: {e}"));
        }
        if let Some(first) = seen.insert(&s.name, i) {
            problems.push(format!(
                "{at}.name: `{}` is already the name of servers[{first}]",
                s.name
            ));
        }
        check_overrides(s, &at, problems);
        check_transport(&s.transport, &at, problems);
        check_auth(s, &at, problems);
        if problems.len() == before {
            specs.push(spec_of(s));
        }
    }
    specs
}

fn spec_of(s: &RawServer) -> ServerSpec {
    ServerSpec {
        name: s.name.clone(),
        enabled: s.enabled,
        trust: s.trust.unwrap_or(Trust::External),
        timeout: s.timeout_ms.map(Duration::from_millis),
        max_retries: s.max_retries,
        breaker_failure_threshold: s.breaker_failure_threshold,
        breaker_cooldown: s.breaker_cooldown_s.map(Duration::from_secs),
        breaker_counts_is_error: s.breaker_counts_is_error.unwrap_or(false),
        unix_sockets: s.unix_sockets,
        auth: s.auth.clone(),
        transport: s.transport.clone(),
        resolved_secrets: Vec::new(),
    }
}

fn in_range<T: PartialOrd + fmt::Display + Copy>(
    v: Option<T>,
    (lo, hi): (T, T),
    key: &str,
    at: &str,
    problems: &mut Vec<String>,
) {
    if let Some(v) = v
        && !(lo <= v && v <= hi)
    {
        problems.push(format!(
            "{at}.{key}: must be between {lo} and {hi}, got {v}"
        ));
    }
}

fn check_overrides(s: &RawServer, at: &str, problems: &mut Vec<String>) {
    in_range(s.timeout_ms, limits::TIMEOUT_MS, "timeout_ms", at, problems);
    in_range(
        s.max_retries,
        limits::MAX_RETRIES,
        "max_retries",
        at,
        problems,
    );
    in_range(
        s.breaker_failure_threshold,
        limits::BREAKER_FAILURE_THRESHOLD,
        "breaker_failure_threshold",
        at,
        problems,
    );
    in_range(
        s.breaker_cooldown_s,
        limits::BREAKER_COOLDOWN_S,
        "breaker_cooldown_s",
        at,
        problems,
    );
}

fn check_transport(t: &TransportSpec, at: &str, problems: &mut Vec<String>) {
    match t {
        TransportSpec::Stdio { command, env, .. } => {
            if command.trim().is_empty() {
                problems.push(format!("{at}.command: must not be empty"));
            }
            for (k, v) in env {
                if k.is_empty() || k.contains(['=', '\0']) {
                    problems.push(format!(
                        "{at}.env.{k}: not a valid variable name (empty, `=` or NUL)"
                    ));
                }
                check_value(v, &format!("{at}.env.{k}"), problems);
            }
        }
        TransportSpec::Sse { url, headers } | TransportSpec::StreamableHttp { url, headers } => {
            check_url(url, &["http", "https"], at, problems);
            check_headers(headers, at, problems);
        }
        TransportSpec::Websocket { url, headers } => {
            check_url(url, &["ws", "wss"], at, problems);
            check_headers(headers, at, problems);
        }
    }
}

fn check_url(url: &str, schemes: &[&str], at: &str, problems: &mut Vec<String>) {
    match url::Url::parse(url) {
        Ok(u) if !schemes.contains(&u.scheme()) => problems.push(format!(
            "{at}.url: scheme `{}` not allowed here; use {}",
            u.scheme(),
            schemes.join(" or ")
        )),
        Ok(u) if u.host_str().is_none_or(str::is_empty) => {
            problems.push(format!("{at}.url: `{url}` has no host"));
        }
        Ok(_) => {}
        Err(e) => problems.push(format!("{at}.url: `{url}` is not a URL: {e}")),
    }
}

fn check_headers(headers: &BTreeMap<String, String>, at: &str, problems: &mut Vec<String>) {
    for (k, v) in headers {
        // RFC 9110 token characters.
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if k.is_empty() || !k.chars().all(token) {
            problems.push(format!("{at}.headers.{k}: not a valid header name"));
        }
        check_value(v, &format!("{at}.headers.{k}"), problems);
    }
}

/// A value that starts with `keyring:` must name a valid secret; a value
/// that does not is used literally.
fn check_value(v: &str, at: &str, problems: &mut Vec<String>) {
    if let Some(name) = secret_ref(v)
        && let Err(e) = SecretName::new(name)
    {
        problems.push(format!("{at}: {e}"));
    }
}

fn check_auth(s: &RawServer, at: &str, problems: &mut Vec<String>) {
    let Some(auth) = &s.auth else { return };
    if matches!(s.transport, TransportSpec::Stdio { .. }) {
        problems.push(format!(
            "{at}.auth: only for network transports; give a stdio server its credentials in `env`"
        ));
    }
    match auth {
        AuthSpec::Bearer { token } => {
            if token.is_empty() {
                problems.push(format!("{at}.auth.token: must not be empty"));
            }
            check_value(token, &format!("{at}.auth.token"), problems);
        }
        AuthSpec::Basic { username, password } => {
            if username.is_empty() || username.contains(':') {
                problems.push(format!(
                    "{at}.auth.username: must be non-empty and without `:`"
                ));
            }
            check_value(password, &format!("{at}.auth.password"), problems);
        }
    }
}

#[cfg(test)]
#[path = "servers_tests.rs"]
mod tests;
