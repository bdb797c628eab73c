/**
 * Everything the console shows, kept live: loaded from a snapshot, then
 * changed by the event stream. Envelopes are queued and applied together
 * once per animation frame, so a burst of a thousand calls costs one paint.
 *
 * Events carry no call content (docs/architecture/console.md, "Feeding it
 * live"): arguments and
 * outputs are fetched when a row is opened; here we keep what the stream
 * says — who, which tool, how it ended, how long.
 */
import type {
  ApprovalRequest,
  ApprovalStatus,
  BarrierStatus,
  BreakerLimits,
  BreakerView,
  CancelReason,
  CallOutcome,
  CallSummary,
  ErrorKind,
  InFlight,
  EngineInfo,
  Envelope,
  Event,
  EventOf,
  LastError,
  LoopLevel,
  Outcome,
  PinRecord,
  PolicySummary,
  Risk,
  ServerStatus,
  SliceView,
  Snapshot,
  SparkShape,
  ToolSummary,
} from '../api/types';
import { Refresher, type FetchSlice } from '../refresher';
import { serverDown } from '../format';
import { Ring } from '../ring';
import { bump, countsAsFailure, isNeutral, sparkFrom, sparkTotals, type Spark } from '../spark';
import type { ConnStatus, ResetReason, StreamSink } from '../stream';

/** One approval request as the console lists it. */
export interface ApprovalItem {
  id: number;
  call_id: number;
  tool: string;
  risk: Risk;
  rule: string;
  reason: string;
  caller: string;
  created_ms: number;
  expires_ms: number;
  status: ApprovalStatus;
  decided_ms: number | null;
  decided_by: string | null;
  decision_reason: string | null;
  rule_id: number | null;
  /** Decided from this window. */
  mine: boolean;
  /** The full request (arguments etc.) when known. */
  request: ApprovalRequest | null;
}

/** One call in the live feed. */
export interface LiveRow {
  call_id: number;
  ts_ms: number;
  tool: string;
  caller: string;
  session: string;
  /** `running` until it finished; then as the audit log says it. */
  outcome: LiveOutcome;
  /** The error class. */
  error_kind: ErrorKind | null;
  error_message: string | null;
  elapsed_us: number | null;
  /** `[stage, µs]`, innermost first (stage names as the audit log has them). */
  stages: [string, number][] | null;
  output_size: number | null;
}

export type LiveOutcome = 'running' | Exclude<CallOutcome, 'unknown'>;

/** An audit row's outcome as a live one (an unknown future value reads as an error). */
function liveOutcome(o: CallOutcome): LiveOutcome {
  return o === 'unknown' ? 'error' : o;
}

/** A passing note (loop guard) shown in the feed. */
export interface Notice {
  seq: number;
  ts_ms: number;
  level: LoopLevel;
  tool: string;
  session: string;
}

export interface ReloadNote {
  at_ms: number;
  why: ResetReason;
}

export type Scheduler = (flush: () => void) => void;

export interface StoreOptions {
  /** Live rows kept in the page. */
  capacity?: number;
  /** How a flush is scheduled; default: the next animation frame. */
  schedule?: Scheduler;
  now?: () => number;
  /** Reads a slice again when the stream says it changed; without it, `state_changed` is ignored. */
  fetchSlice?: FetchSlice;
}

export const LIVE_CAPACITY = 100_000;
const RECENT_APPROVALS = 50;
const NOTICES = 20;
/** Calls whose retry events are kept for their detail view (the engine's CallDetail has none). */
const RETRY_CALLS = 5_000;

const defaultSchedule: Scheduler = (fn) => {
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(() => fn());
  else setTimeout(fn, 16);
};

function itemFromRequest(r: ApprovalRequest): ApprovalItem {
  return {
    id: r.id,
    call_id: r.call_id,
    tool: r.tool,
    risk: r.risk,
    rule: r.rule,
    reason: r.reason,
    caller: r.caller.text,
    created_ms: r.created_ms,
    expires_ms: r.expires_ms,
    status: r.status,
    decided_ms: r.decided_ms,
    decided_by: r.decided_by,
    decision_reason: r.decision_reason,
    rule_id: r.rule_id,
    mine: false,
    request: r,
  };
}

function rowFromSummary(c: CallSummary): LiveRow {
  return {
    call_id: c.call_id,
    ts_ms: c.ts_ms,
    tool: c.tool,
    caller: c.caller,
    session: c.session,
    outcome: liveOutcome(c.outcome),
    error_kind: c.error_kind,
    error_message: c.error_message,
    elapsed_us: c.elapsed_us,
    stages: c.stages,
    output_size: c.output_size,
  };
}

/** A call the engine has received and not finished (the snapshot's `in_flight`). */
function rowFromInFlight(c: InFlight): LiveRow {
  return { ...c, outcome: 'running', error_kind: null, error_message: null, elapsed_us: null, stages: null, output_size: null };
}

function bySoonest(a: ApprovalItem, b: ApprovalItem): number {
  return a.expires_ms - b.expires_ms || a.id - b.id;
}

function cancelWords(r: CancelReason): string {
  switch (r) {
    case 'client_cancelled':
      return 'The client cancelled the call';
    case 'client_disconnected':
      return 'The client disconnected';
    case 'shutdown':
      return 'toolgate shut down';
  }
}

/** The breaker's last counted failure, from a call_finished outcome. */
function lastError(o: Outcome, at_ms: number): LastError | null {
  if (o.status === 'err') return { kind: o.kind, message: o.message, at_ms };
  if (o.status === 'ok' && o.is_error) return { kind: 'tool_failed', message: 'The tool reported an error', at_ms };
  return null;
}

export class ConsoleStore implements StreamSink {
  // --- connection
  conn = $state<ConnStatus>({ kind: 'connecting' });
  loaded = $state(false);
  reloaded = $state<ReloadNote | null>(null);
  /** Data is being shown but the stream is not live: grey it and say so. */
  stale = $derived(this.loaded && this.conn.kind !== 'live');

  // --- state
  engine = $state<EngineInfo | null>(null);
  /** What keeps governed processes away from toolgate on this machine. */
  barrier = $state<BarrierStatus | null>(null);
  pending = $state<ApprovalItem[]>([]);
  /** Calls waiting for a person (their live rows say so rather than "running"). */
  waitingCalls = $derived(new Set(this.pending.map((p) => p.call_id)));
  recent = $state<ApprovalItem[]>([]);
  breakers = $state<BreakerView[]>([]);
  /** Live spark per tool (not part of the proxied state: replaced whole). */
  sparks = $state.raw<Record<string, Spark>>({});
  /**
   * How the engine buckets its sparklines, from each snapshot. Until the
   * first one there are no breakers, so no spark is made from this.
   */
  sparkShape = $state.raw<SparkShape>({ bucket_ms: 1, buckets: 0 });
  /** The limits of a breaker the snapshot did not list, from each snapshot (events apply only after one). */
  breakerDefaults = $state.raw<BreakerLimits>({ threshold: 0, window_s: 0, cooldown_s: 0 });
  /** When each open breaker admits a probe (unix ms). */
  probeAt = $state<Record<string, number>>({});
  servers = $state<ServerStatus[]>([]);
  quarantined = $state<PinRecord[]>([]);
  tools = $state<ToolSummary[]>([]);
  policy = $state<PolicySummary | null>(null);
  callsTotal = $state(0);
  callsFailed = $state(0);
  notices = $state<Notice[]>([]);
  /** Remembered rules changed since the Policy view last loaded them. */
  rulesVersion = $state(0);

  /** The live feed: a bounded ring (not proxied; `liveVersion` says when it changed). */
  readonly live: Ring<LiveRow>;
  liveVersion = $state(0);
  private liveIndex = new Map<number, LiveRow>();
  /** call_retry events by call id, oldest call first (bounded by RETRY_CALLS). */
  private retryLog = new Map<number, EventOf<'call_retry'>[]>();

  counters = $derived({
    pending: this.pending.length,
    open_breakers: this.breakers.filter((b) => b.state === 'open').length,
    quarantined: this.quarantined.length,
    servers_down: this.servers.filter((s) => serverDown(s.state)).length,
  });

  private queue: Envelope[] = [];
  private scheduled = false;
  private readonly schedule: Scheduler;
  private readonly now: () => number;
  private readonly mine = new Set<number>();
  private readonly listeners = new Set<(env: Envelope) => void>();
  private readonly refresher: Refresher | null;

  constructor(opts: StoreOptions = {}) {
    this.live = new Ring<LiveRow>(opts.capacity ?? LIVE_CAPACITY);
    this.schedule = opts.schedule ?? defaultSchedule;
    this.now = opts.now ?? (() => Date.now());
    this.refresher = opts.fetchSlice ? new Refresher(opts.fetchSlice, (v) => this.applySlice(v)) : null;
  }

  /** Called for every envelope applied, after it is applied (toasts, the decision guard). */
  onEvent(fn: (env: Envelope) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** This window is deciding request `id` (so its end reads "by you"). */
  markMine(id: number): void {
    this.mine.add(id);
  }

  // ------------------------------------------------------------ StreamSink

  status(s: ConnStatus): void {
    this.conn = s;
  }

  reset(snap: Snapshot, why: ResetReason): void {
    // Anything queued belongs to the world before this snapshot.
    this.queue = [];
    this.refresher?.reset();
    const now = this.now();
    this.engine = snap.engine;
    this.barrier = snap.barrier;
    this.pending = snap.pending.map(itemFromRequest).sort(bySoonest);
    this.recent = snap.recent_approvals.map((r) => ({ ...itemFromRequest(r), mine: this.mine.has(r.id) }));
    this.sparkShape = snap.spark;
    this.breakerDefaults = snap.breaker_defaults;
    this.setBreakers(snap.breakers);
    this.servers = snap.servers;
    this.quarantined = snap.quarantined;
    this.tools = snap.tools;
    this.policy = snap.policy;
    this.callsTotal = snap.counters.calls_total;
    this.callsFailed = snap.counters.calls_failed;
    this.mergeRows([...snap.recent_calls.map(rowFromSummary), ...snap.in_flight.map(rowFromInFlight)]);
    this.loaded = true;
    this.reloaded = why === 'initial' ? null : { at_ms: now, why };
    this.rulesVersion++;
  }

  /** Breakers read whole (snapshot or slice), with their sparks and probe times. */
  private setBreakers(list: BreakerView[]): void {
    const now = this.now();
    const sparks: Record<string, Spark> = {};
    const probeAt: Record<string, number> = {};
    for (const b of list) {
      sparks[b.tool] = sparkFrom(b.spark, b.spark_failed, now, this.sparkShape);
      if (b.retry_in_ms !== null) probeAt[b.tool] = now + b.retry_in_ms;
    }
    this.breakers = list;
    this.sparks = sparks;
    this.probeAt = probeAt;
  }

  /** A slice read again after `state_changed`: it replaces the page's copy. */
  applySlice(v: SliceView): void {
    switch (v.slice) {
      case 'tools':
        this.tools = v.tools;
        this.quarantined = v.quarantined;
        break;
      case 'policy':
        this.policy = v.policy;
        break;
      case 'servers':
        this.servers = v.servers;
        break;
      case 'breakers':
        this.setBreakers(v.breakers);
        break;
    }
  }

  push(env: Envelope): void {
    this.queue.push(env);
    if (!this.scheduled) {
      this.scheduled = true;
      this.schedule(() => this.flush());
    }
  }

  /** Applies everything queued (one frame's worth). */
  flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (!batch.length) return;
    let liveChanged = false;
    for (const env of batch) liveChanged = this.apply(env) || liveChanged;
    if (liveChanged) this.liveVersion++;
    for (const env of batch) for (const fn of this.listeners) fn(env);
  }

  /** Rows in the live ring, read reactively (the ring itself is not a proxy). */
  get liveSize(): number {
    void this.liveVersion;
    return this.live.length;
  }

  /** A copy of the live row of a call, read reactively; null once it left the ring. */
  liveRow(callId: number): LiveRow | null {
    void this.liveVersion;
    const r = this.liveIndex.get(callId);
    return r ? { ...r } : null;
  }

  /** The retries this window saw for a call, read reactively. */
  retriesOf(callId: number): EventOf<'call_retry'>[] {
    void this.liveVersion;
    return [...(this.retryLog.get(callId) ?? [])];
  }

  /** Envelopes waiting for the next frame (tests, diagnostics). */
  get queued(): number {
    return this.queue.length;
  }

  dismissReload(): void {
    this.reloaded = null;
  }

  // ------------------------------------------------------------ applying events

  /** Applies one envelope; true when the live feed changed. */
  private apply(env: Envelope): boolean {
    const e: Event = env.event;
    switch (e.type) {
      case 'call_received':
        this.addLive({
          call_id: e.call_id,
          ts_ms: env.ts_ms,
          tool: e.tool,
          caller: e.caller,
          session: e.session,
          outcome: 'running',
          error_kind: null,
          error_message: null,
          elapsed_us: null,
          stages: null,
          output_size: null,
        });
        return true;
      case 'call_finished':
        this.finishCall(env.ts_ms, e);
        return true;
      case 'approval_requested':
        this.requested(env.ts_ms, e);
        return false;
      case 'approval_decided':
        this.decided(env.ts_ms, e);
        return false;
      case 'breaker_transition':
        this.transition(env.ts_ms, e.tool, e.to);
        return false;
      case 'server_status':
        this.serverStatus(e);
        return false;
      case 'tool_registered':
      case 'tool_replaced':
        this.toolSeen(e.tool, e.source);
        return false;
      case 'tool_unregistered':
        this.tools = this.tools.filter((t) => t.name !== e.tool);
        return false;
      case 'tool_quarantined':
        this.toolQuarantined(env.ts_ms, e);
        return false;
      case 'approval_rule_changed':
        this.rulesVersion++;
        return false;
      case 'policy_reloaded':
        if (this.policy) this.policy.version = e.version;
        return false;
      case 'state_changed':
        this.refresher?.announce(e.slice, e.revision);
        return false;
      case 'loop_guard':
        this.notices = [{ seq: env.seq, ts_ms: env.ts_ms, level: e.level, tool: e.tool, session: e.session }, ...this.notices].slice(
          0,
          NOTICES,
        );
        return false;
      case 'call_retry':
        this.retried(e);
        return true;
      case 'call_stage':
        return false;
    }
  }

  private retried(e: EventOf<'call_retry'>): void {
    const list = this.retryLog.get(e.call_id);
    if (list) {
      list.push(e);
      return;
    }
    this.retryLog.set(e.call_id, [e]);
    if (this.retryLog.size > RETRY_CALLS) {
      const oldest = this.retryLog.keys().next().value;
      if (oldest !== undefined) this.retryLog.delete(oldest);
    }
  }

  private addLive(row: LiveRow): void {
    const evicted = this.live.push(row);
    if (evicted && this.liveIndex.get(evicted.call_id) === evicted) this.liveIndex.delete(evicted.call_id);
    this.liveIndex.set(row.call_id, row);
  }

  /** Adds a snapshot's recent calls that the ring does not hold yet, keeping time order. */
  /** Adds the snapshot's calls (finished and in flight) to the feed, in order; known rows that were running take the newer state. */
  private mergeRows(rows: LiveRow[]): void {
    const fresh = rows.filter((r) => !this.liveIndex.has(r.call_id)).sort((a, b) => a.ts_ms - b.ts_ms || a.call_id - b.call_id);
    if (fresh.length) {
      const last = this.live.last();
      if (!last || (fresh[0] && fresh[0].ts_ms >= last.ts_ms)) {
        for (const r of fresh) this.addLive({ ...r });
      } else {
        // Interleave: rebuild in order (rare: a reload after missing events).
        const all = [...this.live.toArray(), ...fresh.map((r) => ({ ...r }))].sort((a, b) => a.ts_ms - b.ts_ms || a.call_id - b.call_id);
        this.live.clear();
        this.liveIndex.clear();
        for (const r of all) this.addLive(r);
      }
    }
    // Known rows may have finished meanwhile.
    for (const r of rows) this.completeRow(this.liveIndex.get(r.call_id), r);
    this.liveVersion++;
  }

  private completeRow(row: LiveRow | undefined, r: LiveRow): void {
    if (!row || row.outcome !== 'running' || r.outcome === 'running') return;
    Object.assign(row, r);
  }

  private finishCall(ts_ms: number, e: EventOf<'call_finished'>): void {
    let row = this.liveIndex.get(e.call_id);
    if (!row) {
      // Received before our snapshot, finished after it.
      row = {
        call_id: e.call_id,
        ts_ms: ts_ms - Math.round(e.elapsed / 1_000),
        tool: e.tool,
        caller: '',
        session: '',
        outcome: 'running',
        error_kind: null,
        error_message: null,
        elapsed_us: null,
        stages: null,
        output_size: null,
      };
      this.addLive(row);
    }
    const o = e.outcome;
    row.elapsed_us = e.elapsed;
    switch (o.status) {
      case 'ok':
        row.outcome = o.is_error ? 'tool_error' : 'ok';
        row.output_size = o.size;
        break;
      case 'err':
        row.outcome = 'error';
        row.error_kind = o.kind;
        row.error_message = o.message;
        break;
      case 'cancelled':
        // As the audit log records it: outcome `cancelled`, class `cancelled`.
        row.outcome = 'cancelled';
        row.error_kind = 'cancelled';
        row.error_message = cancelWords(o.reason);
        break;
    }
    this.callsTotal++;
    // Counters::calls_failed: "failed or whose tool reported an error".
    if (row.outcome === 'error' || row.outcome === 'tool_error') this.callsFailed++;
    this.breakerCall(ts_ms, e.tool, o);
  }

  private breakerCall(ts_ms: number, tool: string, o: Outcome): void {
    const b = this.breakers.find((x) => x.tool === tool);
    if (!b || isNeutral(o)) return;
    const failed = countsAsFailure(o);
    const spark = bump(this.sparks[tool] ?? sparkFrom([], [], ts_ms, this.sparkShape), ts_ms, failed);
    this.sparks = { ...this.sparks, [tool]: spark };
    const totals = sparkTotals(spark);
    b.calls = totals.calls;
    b.error_pct = totals.error_pct;
    if (failed) {
      b.failures++;
      b.last_error = lastError(o, ts_ms);
    }
  }

  private requested(ts_ms: number, e: EventOf<'approval_requested'>): void {
    if (this.pending.some((p) => p.id === e.id)) return;
    const item: ApprovalItem = {
      id: e.id,
      call_id: e.call_id,
      tool: e.tool,
      risk: e.risk,
      rule: e.rule,
      reason: e.reason,
      caller: e.caller.text,
      created_ms: ts_ms,
      expires_ms: e.expires_ms,
      status: 'pending',
      decided_ms: null,
      decided_by: null,
      decision_reason: null,
      rule_id: null,
      mine: false,
      request: null,
    };
    this.pending = [...this.pending, item].sort(bySoonest);
  }

  private decided(ts_ms: number, e: EventOf<'approval_decided'>): void {
    const i = this.pending.findIndex((p) => p.id === e.id);
    const base: ApprovalItem | undefined = i >= 0 ? this.pending[i] : this.recent.find((r) => r.id === e.id);
    const ended: ApprovalItem = {
      ...(base ?? {
        id: e.id,
        call_id: 0,
        tool: e.tool,
        risk: 'medium' as Risk,
        rule: '',
        reason: '',
        caller: '',
        created_ms: ts_ms,
        expires_ms: ts_ms,
        request: null,
      }),
      status: e.status,
      decided_ms: ts_ms,
      decided_by: e.by ?? null,
      decision_reason: e.reason ?? null,
      rule_id: e.rule_id ?? null,
      mine: this.mine.has(e.id),
    } as ApprovalItem;
    if (i >= 0) this.pending = this.pending.filter((p) => p.id !== e.id);
    this.recent = [ended, ...this.recent.filter((r) => r.id !== e.id)].slice(0, RECENT_APPROVALS);
  }

  private transition(ts_ms: number, tool: string, to: BreakerView['state']): void {
    let b = this.breakers.find((x) => x.tool === tool);
    if (!b) {
      b = {
        tool,
        state: to,
        failures: 0,
        ...this.breakerDefaults,
        error_pct: 0,
        calls: 0,
        retry_in_ms: null,
        last_error: null,
        spark: [],
        spark_failed: [],
        latency_ms: null,
      };
      this.breakers.push(b);
      b = this.breakers[this.breakers.length - 1] as BreakerView;
    }
    b.state = to;
    const probeAt = { ...this.probeAt };
    if (to === 'open') {
      b.retry_in_ms = b.cooldown_s * 1_000;
      probeAt[tool] = ts_ms + b.cooldown_s * 1_000;
    } else {
      b.retry_in_ms = null;
      delete probeAt[tool];
      if (to === 'closed') b.failures = 0;
    }
    this.probeAt = probeAt;
  }

  /** A breaker was reset from this window: close it without waiting for the event. */
  breakerReset(tool: string): void {
    this.transition(this.now(), tool, 'closed');
  }

  private serverStatus(e: EventOf<'server_status'>): void {
    // `error` is left out of the JSON when there is none (the binding says
    // `string | null`), so both absent and null mean "no error".
    const error = e.error ?? null;
    const s = this.servers.find((x) => x.server === e.server);
    if (s) {
      if (e.state === 'restarting' && s.state !== 'restarting') s.restarts++;
      s.state = e.state;
      s.tools = e.tools;
      if (error !== null) s.last_error = error;
      else if (e.state === 'ready') s.last_error = null;
    } else {
      this.servers.push({
        server: e.server,
        state: e.state,
        tools: e.tools,
        last_error: error,
        config_problem: null,
        quarantined: 0,
        restarts: 0,
        pid: null,
      });
    }
  }

  private toolSeen(name: string, source: string): void {
    const t = this.tools.find((x) => x.name === name);
    if (t) {
      t.source = source;
      if (t.state === 'quarantined') t.state = 'active';
    } else {
      this.tools.push({
        name,
        summary: '',
        source,
        trust: source === 'builtin' ? 'builtin' : 'external',
        risk: 'low',
        state: 'active',
        denied_by: null,
        annotations: {},
      });
    }
    // A re-registered tool is no longer held back.
    this.quarantined = this.quarantined.filter((q) => q.name !== name);
  }

  private toolQuarantined(ts_ms: number, e: EventOf<'tool_quarantined'>): void {
    const t = this.tools.find((x) => x.name === e.tool);
    if (t) t.state = 'quarantined';
    if (this.quarantined.some((q) => q.name === e.tool)) return;
    const rawName = e.tool.startsWith(`${e.server}__`) ? e.tool.slice(e.server.length + 2) : e.tool;
    this.quarantined.push({
      server: e.server,
      tool: rawName,
      name: e.tool,
      status: 'quarantined',
      approved: null,
      pending: null,
      first_seen_ms: ts_ms,
      approved_ms: null,
      pending_since_ms: ts_ms,
    });
  }

  /** A pin was accepted from this window. */
  pinAccepted(name: string): void {
    this.quarantined = this.quarantined.filter((q) => q.name !== name);
    const t = this.tools.find((x) => x.name === name);
    if (t) t.state = 'active';
  }
}
