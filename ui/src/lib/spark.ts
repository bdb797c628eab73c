/**
 * Breaker sparklines kept live between snapshots: the engine's buckets
 * (their width and count come with the snapshot, `SparkShape`), advanced by
 * the clock and bumped by call_finished events.
 */
import type { Outcome, SparkShape } from './api/types';

/** Rolling counts: `calls[i]`, `errors[i]`, the newest bucket last, ending at `end_ms` (exclusive). */
export interface Spark {
  calls: number[];
  errors: number[];
  end_ms: number;
  /** How the engine buckets calls. */
  shape: SparkShape;
}

export function sparkFrom(calls: number[], errors: number[] | undefined, at_ms: number, shape: SparkShape): Spark {
  const { bucket_ms, buckets } = shape;
  const pad = (a: number[]) => {
    const tail = a.slice(-buckets);
    return [...new Array<number>(buckets - tail.length).fill(0), ...tail];
  };
  const end = Math.floor(at_ms / bucket_ms) * bucket_ms + bucket_ms;
  return { calls: pad(calls), errors: pad(errors ?? []), end_ms: end, shape };
}

/** Moves the window so `ts_ms` falls in its newest bucket (older buckets fall off). */
export function advance(s: Spark, ts_ms: number): Spark {
  if (ts_ms < s.end_ms) return s;
  const { bucket_ms, buckets } = s.shape;
  const steps = Math.floor((ts_ms - s.end_ms) / bucket_ms) + 1;
  if (steps >= buckets) {
    return {
      calls: new Array<number>(buckets).fill(0),
      errors: new Array<number>(buckets).fill(0),
      end_ms: s.end_ms + steps * bucket_ms,
      shape: s.shape,
    };
  }
  const zeros = new Array<number>(steps).fill(0);
  return {
    calls: [...s.calls.slice(steps), ...zeros],
    errors: [...s.errors.slice(steps), ...zeros],
    end_ms: s.end_ms + steps * bucket_ms,
    shape: s.shape,
  };
}

/** Counts one finished call at `ts_ms`. Calls older than the window are dropped. */
export function bump(s: Spark, ts_ms: number, failed: boolean): Spark {
  const moved = advance(s, ts_ms);
  const { bucket_ms, buckets } = moved.shape;
  const idx = buckets - 1 - Math.floor((moved.end_ms - 1 - ts_ms) / bucket_ms);
  if (idx < 0) return moved;
  const calls = moved.calls.slice();
  const errors = moved.errors.slice();
  calls[idx] = (calls[idx] ?? 0) + 1;
  if (failed) errors[idx] = (errors[idx] ?? 0) + 1;
  return { calls, errors, end_ms: moved.end_ms, shape: moved.shape };
}

/** Error % over the last `window_s` seconds of the spark (0 when no calls). */
export function errorPct(s: Spark, window_s: number): number {
  const { bucket_ms, buckets } = s.shape;
  const n = Math.max(1, Math.min(buckets, Math.ceil((window_s * 1_000) / bucket_ms)));
  let c = 0;
  let e = 0;
  for (let i = buckets - n; i < buckets; i++) {
    c += s.calls[i] ?? 0;
    e += s.errors[i] ?? 0;
  }
  return c === 0 ? 0 : (100 * e) / c;
}

/**
 * Whether an outcome counts against the tool's breaker: the engine says so
 * in the outcome (`counts_as_failure`), so this never re-derives the rule.
 * A result the tool marked `isError` counts only where a server is
 * configured to; the event does not carry that, and the next snapshot
 * brings the engine's own counts.
 */
export function countsAsFailure(o: Outcome): boolean {
  return o.status === 'err' && o.counts_as_failure;
}

/** Whether the outcome says nothing about the tool's health (refusals and cancellations, as the engine classes them). */
export function isNeutral(o: Outcome): boolean {
  if (o.status === 'cancelled') return true;
  return o.status === 'err' && !o.counts_as_failure;
}

/** Calls and failures over the whole spark (the tile's two minutes, as the engine counts them). */
export function sparkTotals(s: Spark): { calls: number; failed: number; error_pct: number } {
  let calls = 0;
  let failed = 0;
  for (let i = 0; i < s.shape.buckets; i++) {
    calls += s.calls[i] ?? 0;
    failed += s.errors[i] ?? 0;
  }
  return { calls, failed, error_pct: calls === 0 ? 0 : (100 * failed) / calls };
}
