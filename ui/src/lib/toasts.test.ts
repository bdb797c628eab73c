import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_TOASTS, Toasts, keepToastsAbove } from './toasts.svelte';

describe('toasts', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps at most three, the oldest going first', () => {
    const t = new Toasts();
    for (const k of ['a', 'b', 'c', 'd']) t.show({ key: k, tone: 'info', title: k });
    expect(t.items.map((x) => x.key)).toEqual(['b', 'c', 'd']);
    expect(t.items).toHaveLength(MAX_TOASTS);
  });

  it('updates a note in place, and tells its owner when it goes by itself', () => {
    const t = new Toasts();
    let closed = 0;
    t.show({ key: 'x', tone: 'info', title: 'x' });
    t.upsert({ key: 'n', tone: 'warn', title: '1 call' }, 10_000, () => closed++);
    t.show({ key: 'y', tone: 'info', title: 'y' });
    t.upsert({ key: 'n', tone: 'warn', title: '2 calls' }, undefined);
    expect(t.items.map((x) => x.title)).toEqual(['x', '2 calls', 'y']);
    vi.advanceTimersByTime(9_999);
    expect(t.has('n')).toBe(true);
    vi.advanceTimersByTime(1);
    expect(t.has('n')).toBe(false);
    expect(closed).toBe(1);
  });

  it('restarts the time on a fresh upsert; its owner removing it is no dismissal', () => {
    const t = new Toasts();
    let closed = 0;
    t.upsert({ key: 'n', tone: 'warn', title: '1' }, 10_000, () => closed++);
    vi.advanceTimersByTime(8_000);
    t.upsert({ key: 'n', tone: 'warn', title: '2' }, 10_000);
    vi.advanceTimersByTime(8_000);
    expect(t.has('n')).toBe(true);
    t.remove('n');
    vi.advanceTimersByTime(5_000);
    expect(closed).toBe(0);
    t.upsert({ key: 'n', tone: 'warn', title: '3' }, 10_000, () => closed++);
    t.dismiss('n');
    expect(closed).toBe(1);
  });

  it('sits above marked buttons while they are shown, and back in the corner after', () => {
    const t = new Toasts();
    const bar = document.createElement('div');
    document.body.append(bar);
    bar.getBoundingClientRect = () => ({ top: 820, bottom: 900, left: 0, right: 800, width: 800, height: 80, x: 0, y: 820, toJSON: () => ({}) });
    Object.defineProperty(window, 'innerHeight', { configurable: true, value: 900 });
    const mark = keepToastsAbove(bar, t);
    expect(t.bottom).toBe(900 - 820 + 12);
    mark.destroy();
    expect(t.bottom).toBe(16);
    bar.remove();
  });
});
