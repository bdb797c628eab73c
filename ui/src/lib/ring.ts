/**
 * A bounded ring of items, oldest first, with O(1) push and index.
 *
 * The live feed keeps the last N calls in the page (N = 100,000 by default):
 * enough to scroll back through a busy hour, bounded so a week-long tab does
 * not grow without end. `dropped` counts items pushed out at the front, so a
 * paused list can keep the rows under the reader still by shifting its
 * scroll position by exactly what left.
 */
export class Ring<T> {
  private buf: (T | undefined)[];
  private start = 0;
  private len = 0;
  /** Items evicted from the front since creation. */
  dropped = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('ring capacity must be a positive integer');
    this.buf = new Array<T | undefined>(Math.min(capacity, 1024));
  }

  get length(): number {
    return this.len;
  }

  /** Appends; returns the item it evicted, if the ring was full. */
  push(item: T): T | undefined {
    if (this.len < this.capacity) {
      if (this.len === this.buf.length) this.grow();
      this.buf[(this.start + this.len) % this.buf.length] = item;
      this.len++;
      return undefined;
    }
    const old = this.buf[this.start];
    this.buf[this.start] = item;
    this.start = (this.start + 1) % this.buf.length;
    this.dropped++;
    return old;
  }

  /** Item `i` (0 = oldest), or undefined out of range. */
  at(i: number): T | undefined {
    if (i < 0 || i >= this.len) return undefined;
    return this.buf[(this.start + i) % this.buf.length];
  }

  /** The newest item. */
  last(): T | undefined {
    return this.at(this.len - 1);
  }

  clear(): void {
    this.buf = new Array<T | undefined>(Math.min(this.capacity, 1024));
    this.start = 0;
    this.len = 0;
  }

  toArray(): T[] {
    const out: T[] = new Array<T>(this.len);
    for (let i = 0; i < this.len; i++) out[i] = this.at(i) as T;
    return out;
  }

  /** Doubles the backing array (never past capacity) while keeping order. */
  private grow(): void {
    const next = new Array<T | undefined>(Math.min(this.capacity, this.buf.length * 2));
    for (let i = 0; i < this.len; i++) next[i] = this.buf[(this.start + i) % this.buf.length];
    this.buf = next;
    this.start = 0;
  }
}
