/**
 * The live feed: a bounded ring of calls joined from `call_received` and
 * `call_finished`, the call counters, the retries seen per call and the
 * loop guard's passing notes.
 *
 * The ring is not a proxy (100,000 rows would be too many to track one by
 * one): `version` moves when it changed, and the reading methods touch it
 * so a view that reads them re-runs.
 */
import type { CallOutcome, CallSummary, CancelReason, ErrorKind, EventOf, InFlight, LoopLevel, Snapshot } from '../api/types';
import { Ring } from '../ring';

/** One call in the live feed. */
export interface LiveRow {
  call_id: number;
  ts_ms: number;
  tool: string;
  /** The arguments in one line, as the engine previews them (secrets hidden). */
  preview: string;
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

/** A passing note (loop guard) shown in the feed. */
export interface Notice {
  seq: number;
  ts_ms: number;
  level: LoopLevel;
  tool: string;
  session: string;
}

export const LIVE_CAPACITY = 100_000;
const NOTICES = 20;
/** Calls whose retry events are kept for their detail view (the engine's CallDetail has none). */
const RETRY_CALLS = 5_000;

/** An audit row's outcome as a live one (an unknown future value reads as an error). */
function liveOutcome(o: CallOutcome): LiveOutcome {
  return o === 'unknown' ? 'error' : o;
}

function rowFromSummary(c: CallSummary): LiveRow {
  return {
    call_id: c.call_id,
    ts_ms: c.ts_ms,
    tool: c.tool,
    preview: c.preview,
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

/** A row for a call that has not finished: what is known when it arrives. */
function runningRow(call_id: number, ts_ms: number, tool: string, caller: string, session: string, preview = ''): LiveRow {
  return { call_id, ts_ms, tool, preview, caller, session, outcome: 'running', error_kind: null, error_message: null, elapsed_us: null, stages: null, output_size: null };
}

/** A call the engine has received and not finished (the snapshot's `in_flight`). */
function rowFromInFlight(c: InFlight): LiveRow {
  return runningRow(c.call_id, c.ts_ms, c.tool, c.caller, c.session, c.preview);
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

export class LiveStore {
  /** The rows, oldest first (not proxied; read through `version`). */
  readonly rows: Ring<LiveRow>;
  version = $state(0);
  callsTotal = $state(0);
  callsFailed = $state(0);
  notices = $state<Notice[]>([]);
  private index = new Map<number, LiveRow>();
  /** call_retry events by call id, oldest call first (bounded by RETRY_CALLS). */
  private retryLog = new Map<number, EventOf<'call_retry'>[]>();

  constructor(capacity: number = LIVE_CAPACITY) {
    this.rows = new Ring<LiveRow>(capacity);
  }

  /** Rows in the ring, read reactively. */
  get size(): number {
    void this.version;
    return this.rows.length;
  }

  /** A copy of the live row of a call, read reactively; null once it left the ring. */
  row(callId: number): LiveRow | null {
    void this.version;
    const r = this.index.get(callId);
    return r ? { ...r } : null;
  }

  /** The retries this window saw for a call, read reactively. */
  retriesOf(callId: number): EventOf<'call_retry'>[] {
    void this.version;
    return [...(this.retryLog.get(callId) ?? [])];
  }

  /** Tells readers the ring changed (once per applied batch). */
  touch(): void {
    this.version++;
  }

  /** The snapshot's counters and calls; the ring keeps what it holds (a reload adds no duplicates). */
  reset(snap: Snapshot): void {
    this.callsTotal = snap.counters.calls_total;
    this.callsFailed = snap.counters.calls_failed;
    this.mergeRows([...snap.recent_calls.map(rowFromSummary), ...snap.in_flight.map(rowFromInFlight)]);
  }

  received(ts_ms: number, e: EventOf<'call_received'>): void {
    this.add(runningRow(e.call_id, ts_ms, e.tool, e.caller, e.session, e.preview));
  }

  finished(ts_ms: number, e: EventOf<'call_finished'>): void {
    let row = this.index.get(e.call_id);
    if (!row) {
      // Received before our snapshot, finished after it.
      row = runningRow(e.call_id, ts_ms - Math.round(e.elapsed / 1_000), e.tool, '', '');
      this.add(row);
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
  }

  retried(e: EventOf<'call_retry'>): void {
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

  loopGuard(seq: number, ts_ms: number, e: EventOf<'loop_guard'>): void {
    this.notices = [{ seq, ts_ms, level: e.level, tool: e.tool, session: e.session }, ...this.notices].slice(0, NOTICES);
  }

  private add(row: LiveRow): void {
    const evicted = this.rows.push(row);
    if (evicted && this.index.get(evicted.call_id) === evicted) this.index.delete(evicted.call_id);
    this.index.set(row.call_id, row);
  }

  /** Adds the snapshot's calls (finished and in flight) to the feed, in order; known rows that were running take the newer state. */
  private mergeRows(rows: LiveRow[]): void {
    const fresh = rows.filter((r) => !this.index.has(r.call_id)).sort((a, b) => a.ts_ms - b.ts_ms || a.call_id - b.call_id);
    if (fresh.length) {
      const last = this.rows.last();
      if (!last || (fresh[0] && fresh[0].ts_ms >= last.ts_ms)) {
        for (const r of fresh) this.add({ ...r });
      } else {
        // Interleave: rebuild in order (rare: a reload after missing events).
        const all = [...this.rows.toArray(), ...fresh.map((r) => ({ ...r }))].sort((a, b) => a.ts_ms - b.ts_ms || a.call_id - b.call_id);
        this.rows.clear();
        this.index.clear();
        for (const r of all) this.add(r);
      }
    }
    // Known rows may have finished meanwhile.
    for (const r of rows) {
      const row = this.index.get(r.call_id);
      if (row && row.outcome === 'running' && r.outcome !== 'running') Object.assign(row, r);
    }
    this.version++;
  }
}
