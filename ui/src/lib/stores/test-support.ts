/** Shared by the store tests: the demo snapshot and envelopes numbered in order. */
import type { Envelope, Event } from '../api/types';
import { snapshot as demoSnapshot } from '../../dev/fixtures';

/** The demo's snapshot without calls in flight (most tests count finished rows). */
export const snapshot = (...a: Parameters<typeof demoSnapshot>) => ({ ...demoSnapshot(...a), in_flight: [] });
export { demoSnapshot };

let seq = 1000;
export const env = (event: Event, ts_ms = 5_000_000): Envelope => ({ seq: ++seq, ts_ms, event });

/** A hand-cranked frame scheduler. */
export function manual() {
  const pending: (() => void)[] = [];
  return {
    schedule: (fn: () => void) => pending.push(fn),
    run: () => pending.splice(0).forEach((f) => f()),
    get count() {
      return pending.length;
    },
  };
}
