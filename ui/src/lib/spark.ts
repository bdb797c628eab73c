/**
 * Breaker sparklines kept live between snapshots: 24 buckets of 5 s (the
 * last 2 minutes), advanced by the clock and bumped by call_finished events.
 */
import type { ErrorKind, Outcome } from './api/types';

export const BUCKET_MS = 5_000;
export const BUCKETS = 24;

/** Rolling counts: `calls[i]`, `errors[i]`, the newest bucket last, ending at `end_ms` (exclusive). */
export interface Spark {
  calls: number[];
  errors: number[];
  end_ms: number;
}

export function sparkFrom(calls: number[], errors: number[] | undefined, at_ms: number): Spark {
  const pad = (a: number[]) => {
    const tail = a.slice(-BUCKETS);
    return [...new Array<number>(BUCKETS - tail.length).fill(0), ...tail];
  };
  const end = Math.floor(at_ms / BUCKET_MS) * BUCKET_MS + BUCKET_MS;
  return { calls: pad(calls), errors: pad(errors ?? []), end_ms: end };
}

/** Moves the window so `ts_ms` falls in its newest bucket (older buckets fall off). */
export function advance(s: Spark, ts_ms: number): Spark {
  if (ts_ms < s.end_ms) return s;
  const steps = Math.floor((ts_ms - s.end_ms) / BUCKET_MS) + 1;
  if (steps >= BUCKETS) {
    return { calls: new Array<number>(BUCKETS).fill(0), errors: new Array<number>(BUCKETS).fill(0), end_ms: s.end_ms + steps * BUCKET_MS };
  }
  const zeros = new Array<number>(steps).fill(0);
  return {
    calls: [...s.calls.slice(steps), ...zeros],
    errors: [...s.errors.slice(steps), ...zeros],
    end_ms: s.end_ms + steps * BUCKET_MS,
  };
}

/** Counts one finished call at `ts_ms`. Calls older than the window are dropped. */
export function bump(s: Spark, ts_ms: number, failed: boolean): Spark {
  const moved = advance(s, ts_ms);
  const idx = BUCKETS - 1 - Math.floor((moved.end_ms - 1 - ts_ms) / BUCKET_MS);
  if (idx < 0) return moved;
  const calls = moved.calls.slice();
  const errors = moved.errors.slice();
  calls[idx] = (calls[idx] ?? 0) + 1;
  if (failed) errors[idx] = (errors[idx] ?? 0) + 1;
  return { calls, errors, end_ms: moved.end_ms };
}

/** Error % over the last `window_s` seconds of the spark (0 when no calls). */
export function errorPct(s: Spark, window_s: number): number {
  const n = Math.max(1, Math.min(BUCKETS, Math.ceil((window_s * 1_000) / BUCKET_MS)));
  let c = 0;
  let e = 0;
  for (let i = BUCKETS - n; i < BUCKETS; i++) {
    c += s.calls[i] ?? 0;
    e += s.errors[i] ?? 0;
  }
  return c === 0 ? 0 : (100 * e) / c;
}

const FAILURES: readonly ErrorKind[] = ['timeout', 'rate_limit', 'connection', 'upstream_5xx', 'tool_failed', 'internal'];

/**
 * Whether an outcome counts against the tool's breaker (mirrors
 * `CallError::counts_as_failure` with the default config: a result the tool
 * marked `isError` does not count unless a server is configured to; the
 * event does not say whose fault a `tool_failed` was, so it counts, as the
 * tool's own failures do). The next snapshot brings the engine's own counts.
 */
export function countsAsFailure(o: Outcome): boolean {
  return o.status === 'err' && FAILURES.includes(o.kind);
}

/** Whether the outcome says anything about the tool's health (refusals and cancellations do not). */
export function isNeutral(o: Outcome): boolean {
  if (o.status === 'cancelled') return true;
  return o.status === 'err' && !FAILURES.includes(o.kind);
}

/** Calls and failures over the whole spark (the tile's two minutes, as the engine counts them). */
export function sparkTotals(s: Spark): { calls: number; failed: number; error_pct: number } {
  let calls = 0;
  let failed = 0;
  for (let i = 0; i < BUCKETS; i++) {
    calls += s.calls[i] ?? 0;
    failed += s.errors[i] ?? 0;
  }
  return { calls, failed, error_pct: calls === 0 ? 0 : (100 * failed) / calls };
}
