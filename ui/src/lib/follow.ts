/**
 * Follow / Pause for a tailing list whose rows live in a bounded ring.
 *
 * Rows are addressed by their absolute index (ever-increasing; the ring's
 * `dropped` + position), so "what is new since I paused" and "how many rows
 * above me were evicted" are both a subtraction, and the list never jumps
 * under a reader: evictions above are compensated by moving the scroll
 * position up by exactly their height.
 */

/** Rows of the list (absolute indices, ascending) when a filter is on; null = every row of the ring. */
export type RowList = number[] | null;

export interface Window {
  /** Absolute index of the ring's first row. */
  dropped: number;
  /** Rows in the ring. */
  length: number;
}

/** Absolute indices of the rows matching `keep`. */
export function filterRows<T>(at: (i: number) => T | undefined, w: Window, keep: (row: T) => boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < w.length; i++) {
    const r = at(i);
    if (r !== undefined && keep(r)) out.push(w.dropped + i);
  }
  return out;
}

/** Rows in the list. */
export function rowCount(list: RowList, w: Window): number {
  return list ? list.length : w.length;
}

/** Absolute index of list row `i`. */
export function absAt(list: RowList, w: Window, i: number): number {
  return list ? (list[i] ?? -1) : w.dropped + i;
}

/** Absolute index of the newest row in the list, or -1. */
export function newestAbs(list: RowList, w: Window): number {
  if (list) return list.length ? (list[list.length - 1] as number) : -1;
  return w.length ? w.dropped + w.length - 1 : -1;
}

/** Rows newer than `seen` (an absolute index). */
export function newSince(list: RowList, w: Window, seen: number): number {
  if (!list) return Math.max(0, w.dropped + w.length - 1 - seen);
  // list is ascending: binary search for the first abs > seen.
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as number) <= seen) lo = mid + 1;
    else hi = mid;
  }
  return list.length - lo;
}

/** Rows that left the top of the list between two states (to keep a paused reader's rows still). */
export function evictedAbove(before: RowList, beforeW: Window, after: Window): number {
  if (!before) return Math.max(0, Math.min(after.dropped - beforeW.dropped, beforeW.length));
  let n = 0;
  for (const abs of before) {
    if (abs < after.dropped) n++;
    else break;
  }
  return n;
}
