import { describe, expect, it } from 'vitest';
import { approvalCountdown, soonest } from './countdown';

describe('approvalCountdown', () => {
  const created = 0;
  const expires = 120_000;

  it('runs from full to empty with the time as text and words', () => {
    const c = approvalCountdown(created, expires, 30_000);
    expect(c.fraction).toBeCloseTo(0.75);
    expect(c.text).toBe('1:30');
    expect(c.words).toBe('Denied automatically in 1 min 30 s');
    expect(c.tone).toBe('info');
    expect(c.expired).toBe(false);
  });

  it('turns amber under 30 % and red under 10 % or 10 s', () => {
    expect(approvalCountdown(created, expires, 90_000).tone).toBe('warn');
    expect(approvalCountdown(created, expires, 110_000).tone).toBe('danger');
    expect(approvalCountdown(0, 20_000, 11_000).tone).toBe('danger');
  });

  it('stops at zero and says so', () => {
    const c = approvalCountdown(created, expires, 200_000);
    expect(c.left_ms).toBe(0);
    expect(c.fraction).toBe(0);
    expect(c.text).toBe('0:00');
    expect(c.expired).toBe(true);
    expect(c.words).toMatch(/Time is up/);
  });

  it('never divides by zero', () => {
    const c = approvalCountdown(5, 5, 5);
    expect(Number.isFinite(c.fraction)).toBe(true);
  });
});

describe('soonest', () => {
  it('picks the request that expires first, lower id on ties', () => {
    expect(soonest([])).toBeNull();
    expect(soonest([{ id: 3, expires_ms: 50 }, { id: 1, expires_ms: 90 }, { id: 2, expires_ms: 50 }])).toBe(2);
  });
});
