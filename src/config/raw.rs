//! The config file as written: pure serde, every table closed
//! (`deny_unknown_fields`) so a typo is an error with its line, not a
//! silently ignored setting.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::policy::{Preset, Verdict};
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
    // -- upstream MCP servers --
    /// Upstream MCP servers (`[[servers]]`); validated by `config::servers`.
    #[serde(default)]
    pub servers: Vec<super::servers::RawServer>,
    /// How governed processes are confined (`[barrier]`).
    #[serde(default)]
    pub barrier: RawBarrier,
    /// Tool search and deferral (`[search]`).
    #[serde(default)]
    pub search: RawSearch,
    /// Coding agents' hooks (`[hooks]`, docs/hooks.md).
    #[serde(default)]
    pub hooks: RawHooks,
    /// The plugin directory (`[plugins]`, docs/plugins.md).
    #[serde(default)]
    pub plugins: RawPlugins,
    /// The team's shared database (`[storage]`, docs/team.md).
    #[serde(default)]
    pub storage: RawStorage,
    /// Who of the team may decide this engine's requests (`[team]`).
    #[serde(default)]
    pub team: RawTeam,
}

/// `[team]`: who may decide this engine's requests from other engines.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawTeam {
    /// User names (as each engine reports its user) who may decide this
    /// engine's requests; unset: anyone of the team. A CI engine lists its
    /// approvers here.
    pub deciders: Option<Vec<String>>,
    /// `engine` (default): remembered rules stay here. `team`: this
    /// engine's rules that mean the same everywhere are shared, and the
    /// team's apply here.
    pub rules: Option<crate::team::Sharing>,
    /// `engine` (default): an upstream tool's changed version is approved
    /// on each engine. `team`: a version approved on one sharing engine is
    /// approved on every sharing engine that holds it back.
    pub pins: Option<crate::team::Sharing>,
}

/// `[storage]`: a Postgres the engines of a team share. Unset: this engine
/// alone, on its embedded SQLite.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawStorage {
    /// `postgres://USER@HOST/DB?sslmode=verify-full`; no password in it.
    pub url: Option<String>,
    /// The password, as a keychain reference: `keyring:NAME`.
    pub password: Option<String>,
}

/// `[plugins]`: which plugins of `<config dir>/plugins/` are trusted.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawPlugins {
    /// Plugin names (their folder names) whose tools' output is trusted
    /// as their manifest says; every other plugin's tools are `untrusted`.
    #[serde(default)]
    pub trusted: Vec<String>,
}

/// `[hooks]`: what `toolgate hook run` does when toolgate is not running.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawHooks {
    /// `ask` (default): the agent asks its own user; `deny`: the agent's
    /// gated tools are refused. Never allow.
    pub when_engine_down: Option<crate::hooks::fallback::WhenEngineDown>,
}

/// `[search]`: when a client's tools are folded behind `tool_search`
/// (docs/architecture/search.md).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawSearch {
    /// `auto` (default): defer once the deferrable tools' schemas take
    /// `threshold_pct` of the client's context window; `on`; `off`.
    pub mode: Option<crate::search::DeferMode>,
    /// Percent of the context window at which `auto` defers (default 10).
    pub threshold_pct: Option<u32>,
    /// Context window, in tokens, of clients not listed below (default
    /// 128000).
    pub context_window: Option<u32>,
    /// Tool-name globs never deferred, beside the built-ins.
    pub core: Option<Vec<String>>,
    /// Per client, by the name it gives in `initialize`
    /// (`[search.clients.claude-code]`).
    #[serde(default)]
    pub clients: BTreeMap<String, crate::search::disclosure::ClientSettings>,
}

/// `[barrier]`: what every process started for a governed call runs
/// under (see docs/self-protection.md).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawBarrier {
    /// When the kernel cannot confine governed processes: `refuse`
    /// (default) refuses shell-like tools, `run` runs them unconfined.
    pub when_unavailable: Option<crate::barrier::WhenUnavailable>,
    /// Let governed processes open Unix sockets (ssh-agent, docker, D-Bus).
    /// Off by default: a user daemon reached that way can start programs
    /// outside the barrier.
    pub unix_sockets: Option<bool>,
    /// Files and directories governed processes may read but not change
    /// (`~` expanded); replaces the default list of shell startup and
    /// autostart files.
    pub read_only: Option<Vec<String>>,
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
    /// Fixed verdict for this tool (`[tools.NAME]` only).
    pub policy: Option<Verdict>,
    /// Risk override (`[tools.NAME]` only).
    pub risk: Option<Risk>,
    /// Whether the tool runs shell commands, over what its definition
    /// says (`[tools.NAME]` only; see `docs/policy.md`, "Shell-like
    /// tools").
    pub shell: Option<bool>,
}

/// Per-tool overrides (`[tools.NAME]`): the same table as `[pipeline]`,
/// where `policy` and `risk` are also allowed.
pub type RawToolOverride = RawLimits;

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
    /// Count results the tool marks `isError` as failures (default false).
    pub count_is_error: Option<bool>,
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

/// `[policy]`: see `docs/policy.md`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawPolicy {
    /// `read_only`, `strict`, `default` (default) or `autonomous`.
    pub preset: Option<Preset>,
    /// Risk at or above which a person is asked (overrides the preset's).
    pub ask_at: Option<Risk>,
    /// Seconds a person has to answer before the call is denied (default 120).
    pub approval_timeout_s: Option<u64>,
    /// Use the built-in dangerous-tool table and argument rules (default true).
    pub default_rules: Option<bool>,
    /// What "inside the project" means for writes (`~` expanded); default:
    /// `builtin.roots`.
    pub project_dirs: Option<Vec<String>>,
    /// Argument and tool rules (`[[policy.rules]]`), looked at before the
    /// built-in ones.
    #[serde(default)]
    pub rules: Vec<RawRule>,
    /// Per-caller profiles (`[[policy.callers]]`), first match wins.
    #[serde(default)]
    pub callers: Vec<RawCallerPolicy>,
}

/// One `[[policy.rules]]` entry: tool glob, optional argument condition,
/// and either a risk or a verdict.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawRule {
    /// Tool-name glob.
    pub tool: String,
    /// JSON pointer (`/command`) or top-level name (`command`).
    pub arg: Option<String>,
    /// Whole-string glob on the argument.
    pub glob: Option<String>,
    /// Path glob on the normalised argument (`~` expanded).
    pub path: Option<String>,
    /// Regular expression on the argument (unanchored).
    pub regex: Option<String>,
    /// The rule applies when the argument does *not* match.
    #[serde(default)]
    pub negate: bool,
    /// The call's risk when this matches.
    pub risk: Option<Risk>,
    /// Decide outright when this matches.
    pub verdict: Option<Verdict>,
    /// Approval timeout when this rule makes the call ask.
    pub timeout_s: Option<u64>,
    /// Why, shown to people.
    pub reason: Option<String>,
}

/// One `[[policy.callers]]` entry.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct RawCallerPolicy {
    /// Peer uid.
    pub uid: Option<u32>,
    /// Peer executable glob.
    pub exe: Option<String>,
    /// MCP client name glob.
    pub client: Option<String>,
    /// Agent id glob.
    pub agent: Option<String>,
    /// Preset for these callers.
    pub preset: Option<Preset>,
    /// Ask threshold for these callers.
    pub ask_at: Option<Risk>,
    /// Approval timeout for these callers.
    pub approval_timeout_s: Option<u64>,
    /// Rules looked at before the global ones.
    #[serde(default)]
    pub rules: Vec<RawRule>,
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
