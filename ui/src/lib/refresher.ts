/**
 * Keeps slices of engine state (tools, policy, servers, breakers) as new as
 * the stream says they are.
 *
 * The engine announces every change of a slice as `state_changed` with the
 * slice's revision after the change, whatever made it (the config file, the
 * CLI, another window, an upstream's `list_changed`, a plugin). A slice read
 * back carries the revision it was read at (read before the content), so:
 *
 * - one read per slice at a time; announcements during a read only raise
 *   the revision wanted;
 * - a read older than the newest announcement is applied (it is newer than
 *   what the page holds) and the slice is read again;
 * - a read older than one already applied is dropped (answers can overtake
 *   each other);
 * - after a snapshot (`reset`), reads started before it are dropped: the
 *   stream replays every announcement after the snapshot anyway.
 *
 * Everything outside (fetching, applying) is injected: unit-tested without
 * a browser.
 */
import type { Slice, SliceView } from './api/types';

export type FetchSlice = (slice: Slice) => Promise<SliceView>;

interface Track {
  /** The newest revision announced. */
  wanted: number;
  /** The revision of the last read applied (-1: none since the snapshot). */
  applied: number;
  busy: boolean;
}

export class Refresher {
  private tracks = new Map<Slice, Track>();
  private generation = 0;

  constructor(
    private readonly fetch: FetchSlice,
    private readonly apply: (view: SliceView) => void,
  ) {}

  /** The stream said `slice` is now at `revision`. */
  announce(slice: Slice, revision: number): void {
    const t = this.track(slice);
    if (revision <= t.applied) return;
    t.wanted = Math.max(t.wanted, revision);
    if (!t.busy) void this.read(slice, t);
  }

  /** A snapshot replaced everything: forget reads in flight. */
  reset(): void {
    this.generation++;
    this.tracks.clear();
  }

  /** Reads in flight (tests). */
  get busy(): number {
    let n = 0;
    for (const t of this.tracks.values()) if (t.busy) n++;
    return n;
  }

  private track(slice: Slice): Track {
    let t = this.tracks.get(slice);
    if (!t) {
      t = { wanted: 0, applied: -1, busy: false };
      this.tracks.set(slice, t);
    }
    return t;
  }

  private async read(slice: Slice, t: Track): Promise<void> {
    const gen = this.generation;
    t.busy = true;
    let view: SliceView | null = null;
    try {
      view = await this.fetch(slice);
    } catch {
      view = null;
    }
    if (gen !== this.generation) return;
    t.busy = false;
    // A failed read waits for the next announcement (or the snapshot a
    // dropped connection brings).
    if (!view) return;
    if (view.revision > t.applied) {
      t.applied = view.revision;
      this.apply(view);
    }
    if (t.applied < t.wanted) void this.read(slice, t);
  }
}
