import { describe, expect, it } from 'vitest';
import { absAt, evictedAbove, filterRows, newSince, newestAbs, rowCount } from './follow';

describe('follow helpers', () => {
  const w = { dropped: 100, length: 10 };

  it('addresses unfiltered rows by absolute index', () => {
    expect(rowCount(null, w)).toBe(10);
    expect(absAt(null, w, 0)).toBe(100);
    expect(newestAbs(null, w)).toBe(109);
    expect(newSince(null, w, 105)).toBe(4);
    expect(newestAbs(null, { dropped: 0, length: 0 })).toBe(-1);
  });

  it('filters and counts new rows in a filtered list', () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ even: i % 2 === 0 }));
    const list = filterRows((i) => rows[i], w, (r) => r.even);
    expect(list).toEqual([100, 102, 104, 106, 108]);
    expect(newSince(list, w, 103)).toBe(3);
    expect(newSince(list, w, 108)).toBe(0);
    expect(newSince(list, w, 0)).toBe(5);
  });

  it('counts rows evicted above, so a paused reader stays put', () => {
    expect(evictedAbove(null, { dropped: 100, length: 10 }, { dropped: 103, length: 10 })).toBe(3);
    expect(evictedAbove([100, 102, 104], w, { dropped: 103, length: 10 })).toBe(2);
    expect(evictedAbove(null, w, w)).toBe(0);
  });
});
