/**
 * Circuit breakers, one per tool that has one: state, counts, the live
 * sparkline and, for an open breaker, when it admits a probe.
 *
 * Read whole from the snapshot or the `breakers` slice; between reads,
 * `breaker_transition` moves a state and each `call_finished` bumps the
 * tool's sparkline and counts (a refusal is neutral: it never reached the
 * tool).
 */
import type { BreakerLimits, BreakerView, LastError, Outcome, Snapshot, SparkShape } from '../api/types';
import { bump, countsAsFailure, isNeutral, sparkFrom, sparkTotals, type Spark } from '../spark';

/** The breaker's last counted failure, from a call_finished outcome. */
function lastError(o: Outcome, at_ms: number): LastError | null {
  if (o.status === 'err') return { kind: o.kind, message: o.message, at_ms };
  if (o.status === 'ok' && o.is_error) return { kind: 'tool_failed', message: 'The tool reported an error', at_ms };
  return null;
}

export class BreakersStore {
  list = $state<BreakerView[]>([]);
  /** Live spark per tool (not part of the proxied state: replaced whole). */
  sparks = $state.raw<Record<string, Spark>>({});
  /**
   * How the engine buckets its sparklines, from each snapshot. Until the
   * first one there are no breakers, so no spark is made from this.
   */
  shape = $state.raw<SparkShape>({ bucket_ms: 1, buckets: 0 });
  /** The limits of a breaker the snapshot did not list, from each snapshot (events apply only after one). */
  defaults = $state.raw<BreakerLimits>({ threshold: 0, window_s: 0, cooldown_s: 0 });
  /** When each open breaker admits a probe (unix ms). */
  probeAt = $state<Record<string, number>>({});
  open = $derived(this.list.filter((b) => b.state === 'open').length);

  reset(snap: Snapshot, now: number): void {
    this.shape = snap.spark;
    this.defaults = snap.breaker_defaults;
    this.set(snap.breakers, now);
  }

  /** Breakers read whole (snapshot or slice), with their sparks and probe times. */
  set(list: BreakerView[], now: number): void {
    const sparks: Record<string, Spark> = {};
    const probeAt: Record<string, number> = {};
    for (const b of list) {
      sparks[b.tool] = sparkFrom(b.spark, b.spark_failed, now, this.shape);
      if (b.retry_in_ms !== null) probeAt[b.tool] = now + b.retry_in_ms;
    }
    this.list = list;
    this.sparks = sparks;
    this.probeAt = probeAt;
  }

  /** A call of `shown` (the tool as its call events name it) ended with `o`. */
  called(ts_ms: number, shown: string, o: Outcome): void {
    const b = this.list.find((x) => x.tool === shown || x.shown_as === shown);
    if (!b || isNeutral(o)) return;
    const tool = b.tool;
    const failed = countsAsFailure(o);
    const spark = bump(this.sparks[tool] ?? sparkFrom([], [], ts_ms, this.shape), ts_ms, failed);
    this.sparks = { ...this.sparks, [tool]: spark };
    const totals = sparkTotals(spark);
    b.calls = totals.calls;
    b.error_pct = totals.error_pct;
    if (failed) {
      b.failures++;
      b.last_error = lastError(o, ts_ms);
    }
  }

  transition(ts_ms: number, tool: string, to: BreakerView['state'], shown_as: string | null = null): void {
    let b = this.list.find((x) => x.tool === tool);
    if (!b) {
      b = {
        tool,
        shown_as,
        state: to,
        failures: 0,
        ...this.defaults,
        error_pct: 0,
        calls: 0,
        retry_in_ms: null,
        last_error: null,
        spark: [],
        spark_failed: [],
        latency_ms: null,
      };
      this.list.push(b);
      b = this.list[this.list.length - 1] as BreakerView;
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
}
