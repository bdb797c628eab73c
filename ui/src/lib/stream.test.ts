import { describe, expect, it } from 'vitest';
import { LOST_HINT_MS, Stream, backoffMs, decide, lostLong, parseEnvelope, type ConnStatus, type EventSourceLike, type ResetReason, type StreamDeps } from './stream';
import type { Envelope, Snapshot } from './api/types';
import { snapshot as fixtureSnapshot } from '../dev/fixtures';
import { ApiError } from './api/client';

class FakeES implements EventSourceLike {
  onopen: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closed = false;
  private fns = new Map<string, ((ev: { data: string }) => void)[]>();
  constructor(readonly url: string) {}
  addEventListener(type: string, fn: (ev: { data: string }) => void) {
    this.fns.set(type, [...(this.fns.get(type) ?? []), fn]);
  }
  send(type: string, data: unknown) {
    for (const fn of this.fns.get(type) ?? []) fn({ data: typeof data === 'string' ? data : JSON.stringify(data) });
  }
  close() {
    this.closed = true;
  }
}

function env(seq: number): Envelope {
  return { seq, ts_ms: 1000 + seq, event: { type: 'policy_reloaded', version: seq } };
}

function harness(snaps: (Snapshot | Error)[], clock = { now: 10_000 }) {
  const sources: FakeES[] = [];
  const timers: { fn: () => void; ms: number }[] = [];
  const resets: { seq: number; why: ResetReason }[] = [];
  const pushed: number[] = [];
  const statuses: ConnStatus[] = [];
  let snapCalls = 0;
  const deps: StreamDeps = {
    open: (url) => {
      const s = new FakeES(url);
      sources.push(s);
      return s;
    },
    snapshot: async () => {
      const s = snaps[Math.min(snapCalls++, snaps.length - 1)];
      if (s instanceof Error) throw s;
      if (!s) throw new Error('no snapshot');
      return s;
    },
    setTimer: (fn, ms) => {
      timers.push({ fn, ms });
      return timers.length;
    },
    clearTimer: () => {},
    now: () => clock.now,
  };
  const stream = new Stream(
    {
      reset: (s, why) => resets.push({ seq: s.seq, why }),
      push: (e) => pushed.push(e.seq),
      status: (s) => statuses.push(s),
    },
    deps,
  );
  return { stream, sources, timers, resets, pushed, statuses, get snapCalls() { return snapCalls; } };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('seq decisions', () => {
  it('applies the next seq, skips replays, flags gaps', () => {
    expect(decide(10, 11)).toBe('apply');
    expect(decide(10, 10)).toBe('skip');
    expect(decide(10, 3)).toBe('skip');
    expect(decide(10, 12)).toBe('gap');
  });

  it('parses envelopes and refuses junk', () => {
    expect(parseEnvelope(JSON.stringify(env(3)))?.seq).toBe(3);
    expect(parseEnvelope('not json')).toBeNull();
    expect(parseEnvelope('{"seq":"1","ts_ms":1,"event":{}}')).toBeNull();
    expect(parseEnvelope('{"seq":1,"ts_ms":1}')).toBeNull();
  });

  it('backs off from 0.5 s doubling to a 3 s cap: the engine is local and a person waits', () => {
    expect([1, 2, 3, 4, 5, 20].map(backoffMs)).toEqual([500, 1000, 2000, 3000, 3000, 3000]);
  });
});

describe('Stream', () => {
  it('loads the snapshot, subscribes after its seq and applies envelopes in order', async () => {
    const h = harness([{ ...fixtureSnapshot(), seq: 100 }]);
    h.stream.start();
    await flush();
    expect(h.resets).toEqual([{ seq: 100, why: 'initial' }]);
    expect(h.sources[0]?.url).toBe('/api/events?after=100');
    h.sources[0]?.onopen?.({});
    expect(h.statuses.at(-1)).toEqual({ kind: 'live' });
    for (const s of [99, 100, 101, 102, 102, 103]) h.sources[0]?.send('message', env(s));
    expect(h.pushed).toEqual([101, 102, 103]);
    expect(h.stream.seq).toBe(103);
  });

  it('reloads the snapshot on a gap and resubscribes from the new seq', async () => {
    const h = harness([{ ...fixtureSnapshot(), seq: 10 }, { ...fixtureSnapshot(), seq: 50 }]);
    h.stream.start();
    await flush();
    h.sources[0]?.send('message', env(11));
    h.sources[0]?.send('message', env(13));
    await flush();
    expect(h.pushed).toEqual([11]);
    expect(h.resets).toEqual([
      { seq: 10, why: 'initial' },
      { seq: 50, why: 'gap' },
    ]);
    expect(h.sources[0]?.closed).toBe(true);
    expect(h.sources[1]?.url).toBe('/api/events?after=50');
    // The old source is dead: nothing it says is applied.
    h.sources[0]?.send('message', env(51));
    expect(h.pushed).toEqual([11]);
    h.sources[1]?.send('message', env(51));
    expect(h.pushed).toEqual([11, 51]);
  });

  it('reloads on a reload event (fell behind)', async () => {
    const h = harness([{ ...fixtureSnapshot(), seq: 10 }, { ...fixtureSnapshot(), seq: 900 }]);
    h.stream.start();
    await flush();
    h.sources[0]?.send('reload', { seq: 900 });
    await flush();
    expect(h.resets.at(-1)).toEqual({ seq: 900, why: 'behind' });
    expect(h.sources[1]?.url).toBe('/api/events?after=900');
  });

  it('marks retrying with a countdown when the connection drops, then resumes from its seq', async () => {
    const snap = { ...fixtureSnapshot(), seq: 10 };
    const h = harness([snap, { ...snap, seq: 12 }]);
    h.stream.start();
    await flush();
    h.sources[0]?.send('message', env(11));
    h.sources[0]?.onerror?.({});
    expect(h.statuses.at(-1)).toEqual({ kind: 'retrying', attempt: 1, retry_at_ms: 10_500, since_ms: 10_000, reason: 'The connection to the engine dropped.' });
    expect(h.timers[0]?.ms).toBe(500);
    h.timers[0]?.fn();
    await flush();
    // Same engine: no reset, resume after the last applied seq (the engine replays 12 from its ring).
    expect(h.resets.length).toBe(1);
    expect(h.sources[1]?.url).toBe('/api/events?after=11');
  });

  it('replaces everything when the engine restarted while we were away', async () => {
    const snap = { ...fixtureSnapshot(), seq: 500 };
    const restarted = { ...fixtureSnapshot(), seq: 3, engine: { ...snap.engine, pid: 999, started_ms: snap.engine.started_ms + 1 } };
    const h = harness([snap, restarted]);
    h.stream.start();
    await flush();
    h.sources[0]?.onerror?.({});
    h.timers[0]?.fn();
    await flush();
    expect(h.resets.at(-1)).toEqual({ seq: 3, why: 'restarted' });
    expect(h.sources[1]?.url).toBe('/api/events?after=3');
  });

  it('keeps retrying with growing waits while the engine is unreachable', async () => {
    const down = new Error('The toolgate engine is not reachable.');
    const h = harness([down, down, down, { ...fixtureSnapshot(), seq: 7 }]);
    h.stream.start();
    await flush();
    expect(h.statuses.at(-1)).toMatchObject({ kind: 'retrying', attempt: 1, reason: down.message });
    h.timers.at(-1)?.fn();
    await flush();
    h.timers.at(-1)?.fn();
    await flush();
    expect(h.timers.map((t) => t.ms)).toEqual([500, 1000, 2000]);
    h.timers.at(-1)?.fn();
    await flush();
    expect(h.resets).toEqual([{ seq: 7, why: 'initial' }]);
    h.sources[0]?.onopen?.({});
    expect(h.statuses.at(-1)).toEqual({ kind: 'live' });
  });

  it('keeps saying it is retrying while a try is under way, and says when the engine was lost', async () => {
    const clock = { now: 10_000 };
    const down = new Error('Nothing answers.');
    const snap = { ...fixtureSnapshot(), seq: 4 };
    const h = harness([snap, down, down, snap], clock);
    h.stream.start();
    await flush();
    h.sources[0]?.onopen?.({});
    clock.now = 20_000;
    h.sources[0]?.onerror?.({});
    expect(lostLong(h.statuses.at(-1)!, clock.now)).toBe(false);
    clock.now = 20_500;
    h.timers.at(-1)?.fn();
    // The try itself: no flicker back to "connecting", the banner stays.
    expect(h.statuses.at(-1)).toEqual({ kind: 'retrying', attempt: 1, retry_at_ms: 20_500, since_ms: 20_000, reason: 'The connection to the engine dropped.' });
    await flush();
    expect(h.statuses.at(-1)).toMatchObject({ kind: 'retrying', attempt: 2, since_ms: 20_000, reason: down.message });
    clock.now = 20_000 + LOST_HINT_MS;
    expect(lostLong(h.statuses.at(-1)!, clock.now)).toBe(true);
    h.timers.at(-1)?.fn();
    await flush();
    h.timers.at(-1)?.fn();
    await flush();
    h.sources.at(-1)?.onopen?.({});
    expect(h.statuses.at(-1)).toEqual({ kind: 'live' });
    // A later drop starts a new streak.
    clock.now = 90_000;
    h.sources.at(-1)?.onerror?.({});
    expect(h.statuses.at(-1)).toMatchObject({ kind: 'retrying', attempt: 1, since_ms: 90_000 });
    expect(lostLong(h.statuses.at(-1)!, clock.now)).toBe(false);
  });

  it('stops cleanly: no further callbacks act', async () => {
    const h = harness([{ ...fixtureSnapshot(), seq: 1 }]);
    h.stream.start();
    await flush();
    h.stream.stop();
    expect(h.sources[0]?.closed).toBe(true);
    h.sources[0]?.send('message', env(2));
    expect(h.pushed).toEqual([]);
  });

describe('signed out', () => {
  it('stops at a 401: no retry loop, a status that says to sign in', async () => {
    const h = harness([new ApiError('unauthorized', 401, 'no console session')]);
    h.stream.start();
    await flush();
    expect(h.statuses.at(-1)).toEqual({ kind: 'signed_out', reason: 'no console session' });
    expect(h.timers).toHaveLength(0);
    expect(h.sources).toHaveLength(0);
    expect(h.snapCalls).toBe(1);
  });

  it('still retries when the engine is down', async () => {
    const h = harness([new Error('connection refused')]);
    h.stream.start();
    await flush();
    expect(h.statuses.at(-1)?.kind).toBe('retrying');
    expect(h.timers).toHaveLength(1);
  });
});
});
