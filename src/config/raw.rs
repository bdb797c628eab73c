//! The config file as written: pure serde, every table closed
//! (`deny_unknown_fields`) so a typo is an error with its line, not a
//! silently ignored setting.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::pipeline::policy::Verdict;
use crate::tool::Risk;

/// The whole file.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawConfig {
    /// Fail on warnings (unknown allowlist names). Also `--strict` or `CI=true`.
    pub strict: Option<bool>,
    /// Close every tool's object schemas (`additionalProperties: false`).
    pub strict_schemas: Option<bool>,
    /// Where the audit log lives (`~` expanded). Also `--data-dir`.
    pub data_dir: Option<String>,
    /// Tool-name globs that are visible; unset = all. `TOOLGATE_ALLOWED_TOOLS` wins.
    pub allowed_tools: Option<Vec<String>>,
    /// Tool-name globs that are never visible; beats the allowlist.
    #[serde(default)]
    pub denied_tools: Vec<String>,
    /// Global pipeline limits.
    #[serde(default)]
    pub pipeline: RawLimits,
    /// Policy.
    #[serde(default)]
    pub policy: RawPolicy,
    /// Built-in tools.
    #[serde(default)]
    pub builtin: RawBuiltin,
    /// Per-tool overrides, keyed by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, RawToolOverride>,
    // -- servers (issue 5) --
    /// Upstream MCP servers (`[[servers]]`); validated by `config::servers`.
    #[serde(default)]
    pub servers: Vec<super::servers::RawServer>,
}

/// Limits, globally (`[pipeline]`).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawLimits {
    /// One attempt's limit.
    pub timeout_ms: Option<u64>,
    /// The whole call's limit, retries included.
    pub deadline_ms: Option<u64>,
    /// Largest output passed on.
    pub max_output_bytes: Option<usize>,
    /// Retry.
    pub retry: Option<RawRetry>,
    /// Circuit breaker.
    pub breaker: Option<RawBreaker>,
    /// Loop guard.
    pub loop_guard: Option<RawLoopGuard>,
}

/// Per-tool overrides (`[tools.NAME]`): the limits plus policy.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawToolOverride {
    /// One attempt's limit.
    pub timeout_ms: Option<u64>,
    /// The whole call's limit, retries included.
    pub deadline_ms: Option<u64>,
    /// Largest output passed on.
    pub max_output_bytes: Option<usize>,
    /// Retry.
    pub retry: Option<RawRetry>,
    /// Circuit breaker.
    pub breaker: Option<RawBreaker>,
    /// Loop guard.
    pub loop_guard: Option<RawLoopGuard>,
    /// Fixed verdict for this tool.
    pub policy: Option<Verdict>,
    /// Risk override.
    pub risk: Option<Risk>,
}

impl RawToolOverride {
    /// The limits part.
    pub fn limits(&self) -> RawLimits {
        RawLimits {
            timeout_ms: self.timeout_ms,
            deadline_ms: self.deadline_ms,
            max_output_bytes: self.max_output_bytes,
            retry: self.retry.clone(),
            breaker: self.breaker.clone(),
            loop_guard: self.loop_guard.clone(),
        }
    }
}

/// `[pipeline.retry]`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawRetry {
    /// Extra attempts after the first.
    pub max_retries: Option<u32>,
    /// First backoff cap.
    pub initial_backoff_ms: Option<u64>,
    /// Largest backoff.
    pub max_backoff_ms: Option<u64>,
    /// Growth per attempt.
    pub multiplier: Option<f64>,
}

/// `[pipeline.breaker]`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawBreaker {
    /// Failures in the window that open it.
    pub failure_threshold: Option<u32>,
    /// The window.
    pub window_s: Option<u64>,
    /// Time open before probing.
    pub cooldown_s: Option<u64>,
    /// Probes while half-open.
    pub half_open_probes: Option<u32>,
}

/// `[pipeline.loop_guard]`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawLoopGuard {
    /// The window.
    pub window_s: Option<u64>,
    /// Repeats that warn.
    pub warn_at: Option<u32>,
    /// Repeats that block.
    pub block_at: Option<u32>,
    /// Repeats that halt the session.
    pub halt_at: Option<u32>,
}

/// `[policy]`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawPolicy {
    /// Risk at or above which a person is asked.
    pub ask_at: Option<Risk>,
}

/// `[builtin]`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawBuiltin {
    /// Directories the fs tools and `shell_exec` may touch (`~` expanded).
    #[serde(default)]
    pub roots: Vec<String>,
    /// Let `http_fetch` reach loopback and private addresses.
    pub allow_local: Option<bool>,
    /// Exact `host` or `host:port` exceptions to the SSRF guard.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Longest `shell_exec` timeout an agent may ask for.
    pub shell_max_timeout_ms: Option<u64>,
    /// Built-in tools not to register at all.
    #[serde(default)]
    pub disabled: Vec<String>,
}
