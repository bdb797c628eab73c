/**
 * The countdown to an approval's automatic deny, as a bar (share of the
 * time left) and as text (for reduced motion and screen readers).
 */
import { countdown, secondsLeft } from './format';
import type { Tone } from './format';

export interface Countdown {
  /** Time left, ms, never negative. */
  left_ms: number;
  /** Share of the whole wait still left, 0–1. */
  fraction: number;
  /** `1:05`. */
  text: string;
  /** `Denied automatically in 1 min 5 s`. */
  words: string;
  /** Colour as time runs out: info → warn (< 30 %) → danger (< 10 % or < 10 s). */
  tone: Tone;
  expired: boolean;
}

export function approvalCountdown(created_ms: number, expires_ms: number, now_ms: number): Countdown {
  const total = Math.max(1, expires_ms - created_ms);
  const left = Math.max(0, expires_ms - now_ms);
  const fraction = Math.min(1, left / total);
  const expired = left === 0;
  let tone: Tone = 'info';
  if (expired || fraction < 0.1 || left < 10_000) tone = 'danger';
  else if (fraction < 0.3) tone = 'warn';
  return {
    left_ms: left,
    fraction,
    text: countdown(left),
    words: expired ? 'Time is up — being denied' : `Denied automatically in ${secondsLeft(left)}`,
    tone,
    expired,
  };
}

/** The id of the pending request that expires first (ties: lower id), or null. */
export function soonest(items: readonly { id: number; expires_ms: number }[]): number | null {
  let best: { id: number; expires_ms: number } | null = null;
  for (const it of items) {
    if (!best || it.expires_ms < best.expires_ms || (it.expires_ms === best.expires_ms && it.id < best.id)) best = it;
  }
  return best ? best.id : null;
}
