/**
 * Every shape the console UI receives from or sends to the engine.
 *
 * Written by hand from /work/brief/console-design.md and the Rust structs
 * (src/events.rs, src/approval/*, src/pipeline/breaker.rs, src/upstream/*,
 * src/audit/record.rs, src/tool/*), with field names exactly as serde emits
 * them (snake_case unless the struct says `rename_all = "camelCase"`).
 *
 * This is the ONLY module the rest of the UI imports API types from. When the
 * engine exports ts-rs bindings into `ui/src/bindings/`, this file becomes a
 * list of re-exports from there, and nothing else changes.
 *
 * Rust u64/i64/usize are `number` (the engine exports them with
 * `#[ts(type = "number")]`): ids, sequence numbers and unix-ms times all stay
 * far below 2^53.
 */

// ---------------------------------------------------------------- enums

/** `tool::Risk`. */
export type Risk = 'low' | 'medium' | 'high' | 'critical';

/** `tool::Trust`. */
export type Trust = 'builtin' | 'trusted' | 'external' | 'untrusted';

/** `tool::Source`, serialised as its Display form: `builtin`, `plugin:NAME`, `mcp:SERVER`, `agent:ID`. */
export type Source = string;

/** `events::StageName`. */
export type StageName =
  | 'allowlist'
  | 'hooks'
  | 'trust'
  | 'truncate'
  | 'loop_guard'
  | 'validate'
  | 'guards'
  | 'policy'
  | 'breaker'
  | 'retry'
  | 'timeout'
  | 'execute';

/** `events::BreakerState`. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/** `upstream::ServerState`. */
export type ServerState = 'starting' | 'ready' | 'restarting' | 'failed' | 'stopped';

/** `approval::ApprovalStatus`. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'timed_out' | 'expired';

/** `approval::RuleEffect`. */
export type RuleEffect = 'allow' | 'deny';

/** `events::RuleChange`. */
export type RuleChange = 'added' | 'edited' | 'revoked';

/** `approval::matcher::PatternKind`. */
export type PatternKind = 'glob' | 'path' | 'regex';

/** `approval::rules::Verdict`. */
export type Verdict = 'allow' | 'deny' | 'ask';

/** `approval::rules::Preset`. */
export type Preset = 'read_only' | 'strict' | 'default' | 'autonomous';

/** `upstream::inspect::InjectionFlag`. */
export type InjectionFlag =
  | 'important_tag'
  | 'override_phrase'
  | 'zero_width'
  | 'bidi_control'
  | 'html_comment';

/** `upstream::pins::PinStatus`. */
export type PinStatus = 'pinned' | 'quarantined';

/** `error::ErrorKind`. */
export type ErrorKind =
  | 'unknown_tool'
  | 'not_allowed'
  | 'blocked'
  | 'loop_detected'
  | 'invalid_args'
  | 'guard_denied'
  | 'policy_denied'
  | 'needs_approval'
  | 'denied'
  | 'approval_timed_out'
  | 'breaker_open'
  | 'timeout'
  | 'rate_limit'
  | 'connection'
  | 'upstream_5xx'
  | 'tool_failed'
  | 'internal';

/** Audit `outcome` column: `ok`, `tool_error` or `error` (plus `cancelled`, `denied` as filters). */
export type AuditOutcome = 'ok' | 'tool_error' | 'error' | 'cancelled' | 'denied';

/** Loop guard level in `Event::LoopGuard`. */
export type LoopLevel = 'warn' | 'block' | 'halt';

// ---------------------------------------------------------------- events (src/events.rs)

/** `events::Outcome` (tag `status`). */
export type Outcome =
  | { status: 'ok'; is_error: boolean; size: number }
  | { status: 'err'; kind: ErrorKind; message: string };

/** `events::Event` (tag `type`, snake_case). Elapsed times are µs. */
export type Event =
  | { type: 'call_received'; call_id: number; tool: string; caller: string; session: string }
  | { type: 'call_stage'; call_id: number; stage: StageName; elapsed: number; note?: string }
  | { type: 'call_retry'; call_id: number; attempt: number; kind: ErrorKind; backoff: number }
  | { type: 'call_finished'; call_id: number; tool: string; outcome: Outcome; elapsed: number }
  | { type: 'breaker_transition'; tool: string; from: BreakerState; to: BreakerState }
  | { type: 'tool_registered'; tool: string; source: Source }
  | { type: 'tool_replaced'; tool: string; source: Source }
  | { type: 'tool_unregistered'; tool: string; source: Source }
  | { type: 'loop_guard'; session: string; tool: string; level: LoopLevel }
  | { type: 'server_status'; server: string; state: ServerState; tools: number; error?: string }
  | { type: 'tool_quarantined'; server: string; tool: string; reason: 'changed' | 'flagged'; flags: string[] }
  | {
      type: 'approval_requested';
      id: number;
      call_id: number;
      tool: string;
      risk: Risk;
      rule: string;
      reason: string;
      caller: string;
      expires_ms: number;
    }
  | {
      type: 'approval_decided';
      id: number;
      tool: string;
      status: ApprovalStatus;
      by?: string;
      reason?: string;
      rule_id?: number;
    }
  | { type: 'approval_rule_changed'; rule_id: number; change: RuleChange; effect: RuleEffect; scope: string }
  | { type: 'policy_reloaded'; version: number };

export type EventType = Event['type'];

/** One event of the console stream: `control::stream` stamps a gap-free seq (from 1) and a time. */
export interface Envelope {
  seq: number;
  ts_ms: number;
  event: Event;
}

/** The data of an SSE `event: reload`: the stream ended; fetch the snapshot and resubscribe. */
export interface ReloadNotice {
  seq: number;
}

// ---------------------------------------------------------------- approvals (src/approval)

/** `approval::CallerInfo`. */
export interface CallerInfo {
  via: string;
  pid: number | null;
  uid: number | null;
  exe: string | null;
  client_name: string | null;
  agent_id: string | null;
}

/** `approval::CallerKey`: a caller's identity across runs (no pid). */
export interface CallerKey {
  via: string;
  uid: number | null;
  exe: string | null;
  client_name: string | null;
  agent_id: string | null;
}

/** `approval::ArgClause`. */
export interface ArgClause {
  pointer: string;
  kind: PatternKind;
  pattern: string;
}

/** `approval::ScopeDef` (empty lists and absent options are skipped by serde). */
export interface ScopeDef {
  tool: string;
  args?: ArgClause[];
  args_hash?: string;
  caller?: CallerKey;
}

/** `approval::ApprovalRequest`. */
export interface ApprovalRequest {
  id: number;
  call_id: number;
  tool: string;
  /** Secret arguments already replaced by "[redacted]". */
  args: unknown;
  args_hash: string;
  policy_version: number;
  risk: Risk;
  rule: string;
  reason: string;
  caller: CallerInfo;
  session: string;
  created_ms: number;
  expires_ms: number;
  status: ApprovalStatus;
  decided_ms: number | null;
  decided_by: string | null;
  decision_reason: string | null;
  rule_id: number | null;
  waiting: boolean;
}

/** `approval::RememberedRule`, plus usage figures the control service adds. */
export interface RememberedRule {
  id: number;
  effect: RuleEffect;
  scope: ScopeDef;
  scope_text: string;
  reason: string | null;
  created_ms: number;
  created_by: string | null;
  from_request: number | null;
  expires_ms: number | null;
  revoked_ms: number | null;
  /** Calls it decided, if the service counts them. */
  hits?: number;
  last_used_ms?: number | null;
}

/** GET /api/approvals/{id}. */
export interface ApprovalDetail {
  request: ApprovalRequest;
  caller_recent: CallSummary[];
}

/** The `always` part of an approve/deny body. */
export interface AlwaysBody {
  scope: string;
  ttl_s?: number;
}

/** POST /api/approvals/{id}/approve. */
export interface ApproveBody {
  always?: AlwaysBody;
}

/** POST /api/approvals/{id}/deny. */
export interface DenyBody {
  reason?: string;
  always?: AlwaysBody;
}

/** Answer to approve / deny. */
export interface Decided {
  request: ApprovalRequest;
  rule: RememberedRule | null;
}

/** POST /api/approvals/{id}/scope: a preview that changes nothing. */
export interface ScopePreview {
  /** The scope with every "this" resolved, in SCOPE syntax. */
  text: string;
  covers_request: boolean;
  /** The scope in words ("fs_write calls whose /path is under ~/proj"). */
  words: string;
}

// ---------------------------------------------------------------- breakers, servers, pins, tools

/** One breaker tile (`control::types::BreakerView`). */
export interface BreakerView {
  tool: string;
  state: BreakerState;
  /** Counted failures in the window. */
  failures: number;
  /** Failures in the window that open it. */
  threshold: number;
  window_s: number;
  /** Time open before probing (lets the UI run the ring after a live transition). */
  cooldown_s: number;
  /** Error percentage over the window, 0–100. */
  error_pct: number;
  /** Calls in the window. */
  calls: number;
  /** Time until an open breaker admits a probe; null unless open. */
  retry_in_ms: number | null;
  last_error: string | null;
  /** Calls per 5 s bucket over the last 2 minutes, oldest first (24 buckets). */
  spark: number[];
  /** Failures per bucket, same buckets, if the service sends them. */
  spark_errors?: number[];
  /** Latency percentiles over the window, µs, if known. */
  latency_us?: { p50: number; p90: number; p99: number } | null;
}

/** `upstream::ServerStatus`. */
export interface ServerStatus {
  server: string;
  state: ServerState;
  last_error: string | null;
  tools: number;
  quarantined: number;
  restarts: number;
  pid: number | null;
}

/** `upstream::pins::PinVersion`. */
export interface PinVersion {
  hash: string;
  description: string;
  input_schema: unknown;
  flags: InjectionFlag[];
}

/** `upstream::pins::PinRecord`. */
export interface PinRecord {
  server: string;
  tool: string;
  name: string;
  status: PinStatus;
  approved: PinVersion | null;
  pending: PinVersion | null;
  first_seen_ms: number;
  approved_ms: number | null;
  pending_since_ms: number | null;
}

/** GET /api/pins/{tool}. */
export interface PinDiff {
  pin: PinRecord;
  /** The approved version (null when the first version was flagged). */
  pinned: { description: string; schema: unknown } | null;
  current: { description: string; schema: unknown };
  flags: InjectionFlag[];
}

/** `tool::Annotations` (camelCase, absent hints skipped). */
export interface Annotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export type ToolState = 'active' | 'quarantined' | 'denied';

/** One row of the tools list. */
export interface ToolSummary {
  name: string;
  /** First line of the description. */
  summary: string;
  source: Source;
  trust: Trust;
  risk: Risk;
  state: ToolState;
  annotations: Annotations;
}

/** GET /api/tools/{name}. */
export interface ToolDetail {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  output_schema?: Record<string, unknown> | null;
  source: Source;
  trust: Trust;
  risk: Risk;
  state: ToolState;
  annotations: Annotations;
  guards?: { arg: string; kind: 'path' | 'url' }[];
  /** The pin, for upstream tools. */
  pin: PinRecord | null;
}

// ---------------------------------------------------------------- calls and audit

/** One finished call (an audit row, or a recent call in the snapshot). */
export interface CallSummary {
  /** Audit row id (keyset paging cursor). */
  id: number;
  call_id: number;
  ts_ms: number;
  tool: string;
  /** Caller description. */
  caller: string;
  session: string;
  /** `ok`, `tool_error` or `error`. */
  outcome: 'ok' | 'tool_error' | 'error';
  error_kind?: ErrorKind | null;
  error_message?: string | null;
  elapsed_us: number;
  /** `[stage, µs]` in completion order (inner stages first); each includes what it wraps. */
  stages: [StageName, number][];
  output_size: number;
}

/** `tool::Content` (tag `type`). */
export type Content =
  | { type: 'text'; text: string }
  | { type: 'json'; value: unknown }
  | { type: 'image'; data: string; mime_type: string }
  | { type: 'audio'; data: string; mime_type: string }
  | { type: 'resource'; uri: string; mime_type?: string; text?: string };

/** A call's output, raw and as the model saw it (trust-wrapped, truncated). */
export interface CallOutput {
  raw: Content[];
  seen: Content[];
  truncated: boolean;
  wrapped: boolean;
  is_error?: boolean;
}

/** GET /api/calls/{call_id}. */
export interface CallDetail {
  summary: CallSummary;
  /** Arguments, secrets redacted. */
  args: unknown;
  /** `allowed` (the tool ran) or `refused`. */
  decision: string;
  /** The rule that decided, in words. */
  rule?: string | null;
  notes: [StageName, string][];
  stages: [StageName, number][];
  /** Retries and other trace events of the call, when kept. */
  events?: Event[];
  /** Null when the output is no longer kept (see `output_missing`). */
  output: CallOutput | null;
  output_missing?: string | null;
}

/** GET /api/audit filters. */
export interface AuditQuery {
  tool?: string;
  caller?: string;
  outcome?: AuditOutcome;
  since_ms?: number;
  until_ms?: number;
  before?: number;
  limit?: number;
}

/** GET /api/audit answer. */
export interface AuditPage {
  rows: CallSummary[];
  next_before: number | null;
}

/** GET /api/servers/{name}/stderr. */
export interface StderrPage {
  lines: { n: number; text: string }[];
  next: number;
}

// ---------------------------------------------------------------- policy

/** One `[[policy.rules]]` entry (`config::raw::RawRule`). */
export interface PolicyRule {
  tool: string;
  arg?: string | null;
  glob?: string | null;
  path?: string | null;
  regex?: string | null;
  negate?: boolean;
  risk?: Risk | null;
  verdict?: Verdict | null;
  timeout_s?: number | null;
  reason?: string | null;
}

/** The editable part of the policy: what the console can change and save to the config file. */
export interface PolicyDoc {
  /** Tool-name globs that are visible; null = every tool. */
  allowed_tools: string[] | null;
  /** Tool-name globs that are never visible; beats the allowlist. */
  denied_tools: string[];
  preset: Preset;
  ask_at: Risk | null;
  approval_timeout_s: number | null;
  rules: PolicyRule[];
}

/** GET /api/policy. */
export interface PolicyView {
  doc: PolicyDoc;
  version: number;
  /** The config file it is saved to. */
  path: string;
  /** The effective policy, read-only (built-in rules included), as text. */
  effective: string;
}

export interface FieldError {
  /** Dotted path into PolicyDoc: `rules[2].regex`, `allowed_tools[0]`. */
  field: string;
  message: string;
}

/** POST /api/policy/validate. */
export interface PolicyValidation {
  ok: boolean;
  /** Unified diff of the config file, empty when nothing changes. */
  diff: string;
  errors: FieldError[];
}

/** PUT /api/policy body. */
export interface PolicyPut {
  doc: PolicyDoc;
  base_version: number;
}

/** PUT /api/policy answer. */
export interface PolicyApplied {
  version: number;
  diff: string;
}

/** POST /api/policy/test body. */
export interface PolicyTestBody {
  tool: string;
  args: unknown;
  caller?: string;
}

/** POST /api/policy/test answer. */
export interface PolicyTestResult {
  verdict: Verdict;
  risk: Risk;
  rule: string;
  reason: string;
}

/** Summary in the snapshot. */
export interface PolicySummary {
  version: number;
  preset: Preset;
  allowed_tools: string[] | null;
  denied_tools: string[];
  rules_count: number;
}

// ---------------------------------------------------------------- snapshot

export interface EngineInfo {
  version: string;
  pid: number;
  started_ms: number;
  data_dir: string;
  agent_socket: string;
  http_url: string;
  mode: 'serve' | 'desktop';
}

export interface Counters {
  pending: number;
  open_breakers: number;
  quarantined: number;
  servers_down: number;
  calls_total: number;
  calls_failed: number;
}

/** GET /api/snapshot: one consistent read, valid at `seq`. */
export interface Snapshot {
  seq: number;
  engine: EngineInfo;
  counters: Counters;
  /** Soonest expiry first. */
  pending: ApprovalRequest[];
  /** The last 50 closed, newest first. */
  recent_approvals: ApprovalRequest[];
  breakers: BreakerView[];
  servers: ServerStatus[];
  quarantined: PinRecord[];
  tools: ToolSummary[];
  policy: PolicySummary;
  /** The newest 500, newest first. */
  recent_calls: CallSummary[];
}

/** GET /api/connect. */
export interface ConnectInfo {
  agent_socket: string;
  /** `{"mcpServers": {...}}` for MCP clients, pretty-printed. */
  mcp_servers_json: string;
  /** The bridge command line. */
  bridge_command: string;
  http_url: string;
}

// ---------------------------------------------------------------- errors

export type ApiErrorCode =
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'stale'
  | 'invalid'
  | 'unavailable'
  | 'internal';

/** Every error answer: HTTP status + this body. */
export interface ApiErrorBody {
  error: { code: ApiErrorCode; message: string; field?: string };
}
