//! Every type the console sees, as the control service returns it and as
//! the UI reads it. Each derives [`ts_rs::TS`]; `cargo test` checks that
//! `ui/src/bindings/` holds exactly what these generate (the drift test in
//! `console::bindings`; `UPDATE_BINDINGS=1 cargo test --lib bindings`
//! rewrites them), so the UI cannot drift from the engine unnoticed.
//!
//! Integers: ids, sequence numbers, times and sizes are `number` in
//! TypeScript, not `bigint` (see `console::bindings::ts_config`): every
//! one of them stays far below 2^53 (unix ms, µs of one call, row ids),
//! and JSON parses them as numbers anyway.
//!
//! Engine types the console shows as they are ([`Event`],
//! [`ApprovalRequest`], [`RememberedRule`], [`ServerStatus`],
//! [`PinRecord`], ...) derive `TS` where they are defined.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::approval::{ApprovalRequest, RememberedRule, ScopeOffer};
use crate::barrier::BarrierStatus;
use crate::error::ErrorKind;
use crate::events::Event;
use crate::tool::{Annotations, Content, ParamGuard, Risk, Trust};
use crate::upstream::{InjectionFlag, PinRecord, ServerStatus};
use crate::wire::BreakerState;
use crate::wire::{AlwaysInput, CallOutcome};

/// One event of the live stream, numbered.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Envelope {
    /// Gap-free from 1 for the life of the engine.
    pub seq: u64,
    /// When the control service stamped it, unix ms.
    pub ts_ms: i64,
    /// The event.
    pub event: Event,
}

/// The stream's "you fell behind": fetch a snapshot and resubscribe from
/// its `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct Reload {
    /// The newest sequence number when the stream ended.
    pub seq: u64,
}

/// How the engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum EngineMode {
    /// `toolgate serve`, headless.
    Serve,
    /// Inside the desktop app.
    Desktop,
}

/// What the header shows about the engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct EngineInfo {
    /// toolgate's version.
    pub version: String,
    /// The engine's process id.
    pub pid: u32,
    /// When it started, unix ms.
    pub started_ms: i64,
    /// Its data directory (audit log, approvals, pins).
    pub data_dir: String,
    /// The agent socket agents connect to.
    pub agent_socket: String,
    /// The localhost MCP endpoint, if on.
    pub http_url: Option<String>,
    /// Headless or desktop.
    pub mode: EngineMode,
}

/// The header's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, TS)]
pub struct Counters {
    /// Approval requests waiting.
    pub pending: u64,
    /// Breakers open or half-open.
    pub open_breakers: u64,
    /// Upstream tools held back by pinning.
    pub quarantined: u64,
    /// Upstream servers not ready.
    pub servers_down: u64,
    /// Calls finished since the engine started, exact at the snapshot's
    /// `seq` (each later `call_finished` adds one).
    pub calls_total: u64,
    /// Of those, the ones that failed or whose tool reported an error.
    pub calls_failed: u64,
}

/// The last failure that counted against a breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct LastError {
    /// Its class.
    pub kind: ErrorKind,
    /// Its message, at most 300 bytes.
    pub message: String,
    /// When, unix ms.
    pub at_ms: i64,
}

/// One breaker tile.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BreakerView {
    /// The tool.
    pub tool: String,
    /// How people know the tool when it is not its name: a coding
    /// agent's own tool gated through its hooks, `claude-code__Bash`, is
    /// "Claude Code · Bash".
    pub shown_as: Option<String>,
    /// Closed, open or half-open.
    pub state: BreakerState,
    /// Failures counted inside the window.
    pub failures: u32,
    /// Failures in the window that open it.
    pub threshold: u32,
    /// The failure window, seconds.
    pub window_s: u64,
    /// How long an open breaker waits before a probe, seconds.
    pub cooldown_s: u64,
    /// Calls that reached the tool in the last two minutes.
    pub calls: u32,
    /// Of those, the share that failed, 0-100 (0 without calls).
    pub error_pct: f64,
    /// Time until an open breaker admits a probe.
    pub retry_in_ms: Option<u64>,
    /// The last failure that counted.
    pub last_error: Option<LastError>,
    /// Calls per 5 s over the last two minutes, oldest first (24 values).
    pub spark: Vec<u32>,
    /// Failures per 5 s, aligned with `spark`.
    pub spark_failed: Vec<u32>,
    /// Median, 90th and 99th percentile call time in ms of the tool's
    /// last 256 calls that reached it (retries included), however old:
    /// not the two minutes of `calls`; `null` before any.
    pub latency_ms: Option<Latency>,
}

/// The shape of every breaker's sparkline, as the engine buckets calls:
/// sent with the snapshot so a live view that adds calls between
/// snapshots buckets them the same way instead of keeping its own copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct SparkShape {
    /// The width of one bucket, ms.
    pub bucket_ms: u64,
    /// How many buckets a sparkline holds, oldest first.
    pub buckets: u32,
}

/// The breaker limits of a tool without its own `[tools.NAME]` breaker:
/// sent with the snapshot so a view that meets a breaker between snapshots
/// (its first transition) shows the engine's numbers instead of a copy of
/// them. Tools with an override get their own in their [`BreakerView`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct BreakerLimits {
    /// Failures inside the window that open the breaker.
    pub threshold: u32,
    /// The window failures are counted in, seconds.
    pub window_s: u64,
    /// How long an open breaker fails fast, seconds.
    pub cooldown_s: u64,
}

/// Call-time percentiles, in milliseconds (fractions kept: built-in tools
/// answer in microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, TS)]
pub struct Latency {
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// How many calls these are over: the tool's last ones, however old
    /// (a tool idle for an hour has call times and no calls in the tile's
    /// two minutes), so the tile can say "its last 12 calls".
    pub calls: u32,
}

/// Whether an agent can see and call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ToolState {
    /// Listed and callable.
    Active,
    /// An upstream tool held back until a person approves its change.
    Quarantined,
    /// Hidden by the allowlist or denylist.
    Denied,
}

/// One row of the Tools view.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ToolSummary {
    /// Registry name.
    pub name: String,
    /// First line of the description.
    pub summary: String,
    /// `builtin`, `mcp:SERVER`, ...
    pub source: String,
    /// The plugin that brought it: its own command tool, or a tool of one
    /// of its MCP servers (whose `source` is `mcp:SERVER`).
    pub plugin: Option<String>,
    /// How far its output is trusted.
    pub trust: Trust,
    /// Its risk before argument rules (as the policy sees the name).
    pub risk: Risk,
    /// Active, quarantined or denied.
    pub state: ToolState,
    /// Why it is denied (`matches deny pattern ...`).
    pub denied_by: Option<String>,
    /// MCP annotations (hints, never trusted).
    pub annotations: Annotations,
    /// The connected clients that see it only through `tool_search`
    /// (deferred for them), by their `initialize` names.
    pub deferred_for: Vec<String>,
    /// Why it is never deferred (built-in, a `[search] core` glob, or
    /// pinned by a person), with whether a person pinned it; `None`: it
    /// may be deferred.
    pub core: Option<crate::search::CoreView>,
}

/// What pinning a tool as core, or unpinning it, left: the tool's row and
/// every client's plan, so the console shows both at once (the `tools`
/// slice follows).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct CorePinned {
    /// The tool's registry name.
    pub tool: String,
    /// Whether it is pinned as core now.
    pub pinned: bool,
    /// Whether this request changed that.
    pub changed: bool,
    /// Its row as the Tools view lists it now; `None` when no tool of that
    /// name is registered or quarantined (pinned ahead of its server).
    pub summary: Option<ToolSummary>,
    /// What each agent client is listed now.
    pub clients: Vec<ClientView>,
}

/// One tool found by the Tools view's search: ranked by the same index
/// as `tool_search`, with the words it matched marked.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ToolMatch {
    /// The tool, as the list shows it.
    pub tool: ToolSummary,
    /// Its name, cut at the matched words.
    pub name: Vec<crate::search::terms::Marked>,
    /// Its one-line summary, cut at the matched words.
    pub summary: Vec<crate::search::terms::Marked>,
    /// Where else the search matched, in words (`the description`,
    /// `argument path`, `the server's name`): why a result whose name and
    /// summary show no marked word was found.
    pub matched_in: Vec<String>,
}

pub use crate::search::ClientView;

/// One tool in full.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ToolDetail {
    /// As listed.
    pub summary: ToolSummary,
    /// The whole description the model reads.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// Its output schema, if declared.
    pub output_schema: Option<Value>,
    /// Arguments checked by the path and SSRF guards.
    pub guards: Vec<ParamGuard>,
    /// The pin of an upstream tool (hash of description + schema).
    pub pin: Option<PinRecord>,
}

/// The policy at a glance (the editor reads the full document).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PolicySummary {
    /// Bumped on every change.
    pub version: u64,
    /// The preset's name.
    pub preset: String,
    /// Allow patterns; `None` when no allowlist is set.
    pub allowed_tools: Option<Vec<String>>,
    /// Deny patterns.
    pub denied_tools: Vec<String>,
    /// Configured argument and verdict rules.
    pub rules_count: u64,
    /// Remembered decisions not revoked.
    pub remembered_count: u64,
    /// Why the last edit of the config file was rejected (with the key
    /// path and line); the previous config stays in force. `None` once an
    /// edit applies.
    pub config_problem: Option<String>,
    /// Saved edits of settings read only at start, in words; `None` when
    /// the file's settings are all in force.
    pub restart_note: Option<String>,
}

/// One audited call, without its arguments or output (only their
/// one-line preview).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct CallSummary {
    /// Audit row id (the key for paging).
    pub id: i64,
    /// Engine call id (unique within one run of the engine).
    pub call_id: i64,
    /// Arrival, unix ms.
    pub ts_ms: i64,
    /// Tool name as requested.
    pub tool: String,
    /// Its arguments in one line, secrets hidden, at most 120 characters
    /// (see [`crate::preview`]).
    pub preview: String,
    /// Who called, in words (`socket client claude uid 1000 pid 42`).
    pub caller: String,
    /// Session id.
    pub session: String,
    /// `allowed` (the tool ran) or `refused`.
    pub decision: String,
    /// How it ended.
    pub outcome: CallOutcome,
    /// The error class, for `error` and `cancelled` (absent when the row
    /// names a class this version does not know).
    pub error_kind: Option<ErrorKind>,
    /// The message the agent got, for `error`.
    pub error_message: Option<String>,
    /// Time in the pipeline, µs.
    pub elapsed_us: i64,
    /// `[stage, µs]`, innermost first (each includes what it wrapped).
    pub stages: Vec<(String, u64)>,
    /// Output size in bytes after truncation.
    pub output_size: i64,
}

/// A call's output, kept for a while after it finished.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct OutputView {
    /// What the tool returned (its last attempt), before truncation and
    /// trust-wrapping; `None` if no tool ran (a hook answered).
    pub raw: Option<Vec<Content>>,
    /// What the agent got: truncated, trust-wrapped, with toolgate's
    /// notices.
    pub seen: Vec<Content>,
    /// The output was cut to the size limit.
    pub truncated: bool,
    /// The output was trust-wrapped.
    pub wrapped: bool,
    /// The tool marked its result as an error.
    pub is_error: bool,
}

/// A call received and not finished yet (it may be waiting for a
/// person, running, or retrying).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct InFlight {
    /// The call id.
    pub call_id: u64,
    /// When it arrived, unix ms.
    pub ts_ms: i64,
    /// The tool as requested.
    pub tool: Arc<str>,
    /// Who called, as live rows show it.
    pub caller: Arc<str>,
    /// The caller's session.
    pub session: Arc<str>,
    /// The arguments in one line, secrets hidden.
    pub preview: Arc<str>,
}

/// Everything about one call.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct CallDetail {
    /// As in lists.
    pub summary: CallSummary,
    /// The arguments as the pipeline ended with them, secrets redacted.
    pub args: Value,
    /// Why `args` is not all of them (a bound on what one call's detail
    /// reads; see `json_sketch`).
    pub args_shortened: Option<String>,
    /// The policy's verdict (`allow`, `ask`, `deny`), if it got that far.
    pub verdict: Option<String>,
    /// The rule that decided (`preset:default`, `policy.rules[0]`,
    /// `always-allow rule #3`), from the policy's note.
    pub rule: Option<String>,
    /// Who decided whether it ran, in a sentence: policy, a person's
    /// remembered rule (who made it, where and when), or a person asked.
    pub decided: Option<String>,
    /// What each stage did, in words: `[stage, note]`.
    pub notes: Vec<(String, String)>,
    /// The approval request the call waited on, if any.
    pub approval: Option<ApprovalRequest>,
    /// Its output, raw and as seen, while kept.
    pub output: Option<OutputView>,
    /// Why `output` is missing.
    pub output_missing: Option<String>,
}

/// A page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct AuditPage {
    /// The rows.
    pub rows: Vec<CallSummary>,
    /// Pass as `before` for the next (older) page; `None` at the end.
    pub next_before: Option<i64>,
}

/// Filters of an audit query; every one optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
pub struct AuditQuery {
    /// A tool name, or a glob (`fs_*`, `git__?`).
    #[ts(optional)]
    pub tool: Option<String>,
    /// Text the caller description contains (case-insensitive).
    #[ts(optional)]
    pub caller: Option<String>,
    /// `ok`, `tool_error`, `error`, or an error class (`denied`,
    /// `timeout`, ...).
    #[ts(optional)]
    pub outcome: Option<String>,
    /// Calls that arrived at or after this, unix ms.
    #[ts(optional)]
    pub since_ms: Option<i64>,
    /// Calls that arrived before this, unix ms.
    #[ts(optional)]
    pub until_ms: Option<i64>,
    /// Rows with an id below this (the previous page's `next_before`).
    #[ts(optional)]
    pub before: Option<i64>,
    /// Rows per page, 1-500 (default 100).
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// Export formats: `format=` of the audit export, on every transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated, with a header row.
    Csv,
}

/// Body of "approve".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
pub struct ApproveInput {
    /// Also allow matching calls from now on.
    #[ts(optional)]
    pub always: Option<AlwaysInput>,
}

/// Body of "deny".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
pub struct DenyInput {
    /// Passed to the agent.
    #[ts(optional)]
    pub reason: Option<String>,
    /// Also deny matching calls from now on.
    #[ts(optional)]
    pub always: Option<AlwaysInput>,
}

/// A decision as made.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DecidedView {
    /// The request, now closed.
    pub request: ApprovalRequest,
    /// The remembered rule made with it.
    pub rule: Option<RememberedRule>,
    /// Who decided, in words.
    pub decided_by: String,
}

/// What an "always" scope would cover, before anyone confirms it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ScopePreview {
    /// The scope with "this" spelled out (`tool=fs_write,/path:path=...`).
    pub text: String,
    /// It covers the request being decided (a scope that does not is
    /// refused when deciding).
    pub covers_request: bool,
    /// The same in words a person reads.
    pub words: String,
    /// Why it cannot be used, if it cannot.
    pub problem: Option<String>,
    /// What it lets through beyond the narrowest scope for this request
    /// ([`ApprovalDetail::scope`]), and for longer, in words (`Also allows
    /// any command from any caller, for 7 days.`); `None` when nothing.
    pub also_allows: Option<String>,
}

/// A request with the context a person decides on.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ApprovalDetail {
    /// The request (arguments redacted).
    pub request: ApprovalRequest,
    /// The same caller's last calls of this tool, newest first.
    pub caller_recent: Vec<CallSummary>,
    /// Where "always" starts: the narrowest scope covering this request
    /// and the conditions offered; `None` once it is no longer pending.
    pub scope: Option<ScopeOffer>,
}

/// A remembered rule with its use.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RuleView {
    /// The rule.
    pub rule: RememberedRule,
    /// In force now (not expired).
    pub active: bool,
    /// Calls it matched, across restarts (written behind in batches).
    pub hits: u64,
    /// When it last matched one, unix ms.
    pub last_used_ms: Option<i64>,
    /// Its scope in words.
    pub words: String,
    /// Where a person made it, in words (`in the console`, `from the CLI
    /// (pid 42)`), when recorded.
    pub made_where: Option<String>,
}

/// How the engine's own process is doing, for a person to watch: its
/// memory, threads and descriptors, and the connections open to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct EngineHealth {
    /// Memory, threads and descriptors of the engine's process.
    pub process: crate::process_stats::ProcessStats,
    /// Agents connected now (socket, bridge and HTTP sessions).
    pub agent_connections: u64,
    /// CLI connections on the control socket now.
    pub control_connections: u64,
}

/// Answer of a breaker reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct ResetResult {
    /// False when the tool had no breaker yet (never called).
    pub reset: bool,
}

/// One stderr line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct StderrLine {
    /// Its number, from 1 since the server was first started.
    pub n: u64,
    /// The text (at most 4 KiB).
    pub text: String,
}

/// A server's stderr after a line number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct StderrPage {
    /// Lines, oldest first.
    pub lines: Vec<StderrLine>,
    /// Pass as `after` next time.
    pub next: u64,
    /// Lines after `after` that are no longer kept.
    pub skipped: u64,
}

/// One version of a pinned tool.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PinSide {
    /// What the model reads.
    pub description: String,
    /// What its arguments must fit.
    pub schema: Value,
}

/// A quarantined tool, both versions for a diff.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PinDiff {
    /// The pin.
    pub pin: PinRecord,
    /// The approved version (none if the first version was flagged).
    pub pinned: Option<PinSide>,
    /// The version the server offers now.
    pub current: Option<PinSide>,
    /// Injection markers in the offered description.
    pub flags: Vec<InjectionFlag>,
}

/// The whole console state at one sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Snapshot {
    /// Apply stream events with a greater `seq` (see `control::snapshot`).
    pub seq: u64,
    /// About the engine.
    pub engine: EngineInfo,
    /// What the barrier between governed processes and toolgate holds on
    /// this machine (the console warns when it is not `full`).
    pub barrier: BarrierStatus,
    /// The header's counters.
    pub counters: Counters,
    /// Waiting approval requests, soonest expiry first.
    pub pending: Vec<ApprovalRequest>,
    /// The last 50 closed requests, newest first.
    pub recent_approvals: Vec<ApprovalRequest>,
    /// Breakers of tools that have been called, by tool name.
    pub breakers: Vec<BreakerView>,
    /// How their sparklines bucket calls.
    pub spark: SparkShape,
    /// The limits of a breaker not listed yet.
    pub breaker_defaults: BreakerLimits,
    /// Upstream servers.
    pub servers: Vec<ServerStatus>,
    /// The plugin directory's plugins.
    pub plugins: Vec<crate::plugins::PluginView>,
    /// Quarantined upstream tools.
    pub quarantined: Vec<PinRecord>,
    /// Every tool, active, quarantined or denied.
    pub tools: Vec<ToolSummary>,
    /// What each connected agent client is listed.
    pub clients: Vec<ClientView>,
    /// The policy at a glance.
    pub policy: PolicySummary,
    /// The newest 500 finished calls, newest first.
    pub recent_calls: Vec<CallSummary>,
    /// Calls received and not finished at `seq`, oldest first (waiting
    /// for a person, running, retrying).
    pub in_flight: Vec<InFlight>,
    /// The team's queue and engines; `null` when the engine runs alone.
    /// Later changes come as the `team` slice.
    pub team: Option<super::team::TeamView>,
}

/// How to connect an MCP client to this engine (Settings, copy buttons).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ConnectInfo {
    /// The `mcpServers` entry for stdio clients (Claude Desktop, Cursor,
    /// ...): toolgate's bridge relays stdio to the agent socket.
    pub mcp_servers: Value,
    /// How the snippet's command was chosen: `toolgate` on the PATH, or
    /// this engine's program by its full path, and why.
    pub command_note: String,
    /// The bridge as one shell command line, for clients that take one.
    pub bridge_command: String,
    /// The agent socket, for clients that open a Unix socket.
    pub agent_socket: String,
    /// The localhost streamable-HTTP endpoint, if on. Its bearer token is
    /// not shown here: it is in the `0600` file beside the socket.
    pub http_url: Option<String>,
}

/// A control error's parts, as a transport reports it (the console's
/// wire form, with its own codes, is `console::ApiError`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    /// `not_found`, `stale`, `invalid`, `unavailable`, `internal` (and the
    /// transport's `unauthorized`, `forbidden`).
    pub code: String,
    /// What happened and what to do.
    pub message: String,
    /// The field an `invalid` error is about.
    pub field: Option<String>,
}
