import { describe, expect, it } from 'vitest';
import { afterArrival, afterDecision, canAct, type InboxItem } from './inbox';

const waiting = (id: number, expires_ms: number): InboxItem => ({ id, expires_ms, status: 'pending' });
const ended = (id: number, status = 'approved'): InboxItem => ({ id, expires_ms: 0, status });

describe('inbox flow', () => {
  it('a decision moves to the next waiting request, soonest deadline first', () => {
    const pending = [waiting(1, 3_000), waiting(2, 1_000), waiting(3, 2_000)];
    expect(afterDecision(pending, 2)).toBe(3);
    expect(afterDecision(pending, 3)).toBe(2);
    // The decided request may still be listed (its event has not come yet).
    expect(afterDecision([waiting(7, 1)], 7)).toBeNull();
    expect(afterDecision([], 7)).toBeNull();
  });

  it('equal deadlines go by id', () => {
    expect(afterDecision([waiting(9, 5), waiting(4, 5), waiting(1, 1)], 1)).toBe(4);
  });

  it('an arrival is selected when nothing waiting is selected, and never steals the selection', () => {
    expect(afterArrival(null, 5)).toBe(5);
    expect(afterArrival(ended(4), 5)).toBe(5);
    expect(afterArrival(ended(4, 'cancelled'), 5)).toBe(5);
    expect(afterArrival(waiting(3, 10), 5)).toBe(3);
  });

  it('keys act only on a waiting request', () => {
    expect(canAct(waiting(1, 1))).toBe(true);
    for (const s of ['approved', 'denied', 'timed_out', 'cancelled', 'expired']) expect(canAct(ended(1, s))).toBe(false);
    expect(canAct(null)).toBe(false);
    expect(canAct(undefined)).toBe(false);
  });
});
