import { describe, expect, it } from 'vitest';
import { advance, bump, countsAsFailure, errorPct, isNeutral, sparkFrom, sparkTotals } from './spark';

/** The engine's shape (`Snapshot.spark`). */
const SHAPE = { bucket_ms: 5_000, buckets: 24 };

describe('spark', () => {
  const t0 = 1_000_000;

  it('pads to 24 buckets ending at the current 5 s bucket', () => {
    const s = sparkFrom([1, 2, 3], [0, 1, 0], t0, SHAPE);
    expect(s.calls).toHaveLength(SHAPE.buckets);
    expect(s.calls.slice(-3)).toEqual([1, 2, 3]);
    expect(s.end_ms).toBe(1_005_000);
  });

  it('counts a call in the newest bucket and slides with time', () => {
    let s = sparkFrom([], [], t0, SHAPE);
    s = bump(s, t0 + 100, false);
    s = bump(s, t0 + 200, true);
    expect(s.calls.at(-1)).toBe(2);
    expect(s.errors.at(-1)).toBe(1);
    s = bump(s, t0 + 5_100, false);
    expect(s.calls.slice(-2)).toEqual([2, 1]);
    expect(advance(s, t0 + 10 * 60_000).calls.every((c) => c === 0)).toBe(true);
  });

  it('computes the error % over the breaker window', () => {
    const s = sparkFrom([10, 10, 10, 10], [0, 0, 5, 5], t0, SHAPE);
    expect(errorPct(s, 10)).toBe(50);
    expect(errorPct(s, 20)).toBe(25);
    expect(errorPct(sparkFrom([], [], t0, SHAPE), 60)).toBe(0);
  });

  it('takes the breaker rule from the engine\'s flag; refusals are neutral', () => {
    expect(countsAsFailure({ status: 'ok', is_error: true, size: 1 })).toBe(false);
    expect(countsAsFailure({ status: 'ok', is_error: false, size: 1 })).toBe(false);
    expect(countsAsFailure({ status: 'err', kind: 'timeout', message: '', counts_as_failure: true })).toBe(true);
    expect(countsAsFailure({ status: 'err', kind: 'denied', message: '', counts_as_failure: false })).toBe(false);
    expect(isNeutral({ status: 'err', kind: 'invalid_args', message: '', counts_as_failure: false })).toBe(true);
    expect(isNeutral({ status: 'err', kind: 'connection', message: '', counts_as_failure: true })).toBe(false);
    // A tool_failed of the caller's making (a missing file) does not count.
    expect(countsAsFailure({ status: 'err', kind: 'tool_failed', message: '', counts_as_failure: false })).toBe(false);
    expect(isNeutral({ status: 'cancelled', reason: 'client_disconnected' })).toBe(true);
    expect(countsAsFailure({ status: 'cancelled', reason: 'shutdown' })).toBe(false);
  });

  it('totals the whole two minutes, as the engine does for the tile', () => {
    const s = sparkFrom([10, 10, 10, 10], [0, 0, 5, 5], t0, SHAPE);
    expect(sparkTotals(s)).toEqual({ calls: 40, failed: 10, error_pct: 25 });
    expect(sparkTotals(sparkFrom([], [], t0, SHAPE)).error_pct).toBe(0);
  });
});
