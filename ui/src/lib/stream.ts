/**
 * The live connection to the engine: load a snapshot, then follow
 * `GET /api/events?after=<seq>` (SSE), applying only envelopes newer than
 * what the store already holds.
 *
 * - An envelope with seq <= the last one applied is a replay: skipped.
 * - An envelope with seq > last + 1 means events were lost: reload.
 * - `event: reload` (the engine's ring no longer holds our position, or we
 *   fell behind): reload.
 * - A dropped connection: the store is marked stale (kept, greyed) and we
 *   retry with a short backoff (the engine is on this machine and a person
 *   waits at the screen: a few seconds at most between tries). Each retry
 *   first fetches the snapshot, which both checks the engine answers and
 *   tells whether it is still the same engine process (a restarted engine
 *   numbers its events from 1 again, so its snapshot replaces ours instead
 *   of resuming from our seq). A restarted engine comes back on the same
 *   port and keeps the console's sessions, so the tab finds it by itself;
 *   when tries keep failing for `LOST_HINT_MS`, the status says so and the
 *   banner tells the person what to run.
 *
 * Everything that touches the outside (EventSource, fetch, timers, clock) is
 * injected, so the whole state machine is unit-tested without a browser.
 */
import type { Envelope, Snapshot } from './api/types';
import { ApiError } from './api/client';

/** What the header shows about the engine connection. */
export type ConnStatus =
  | { kind: 'connecting' }
  | { kind: 'live' }
  /**
   * The engine did not answer. `retry_at_ms` is when the next try starts (at
   * or before now: a try is under way); `since_ms` is when the connection
   * was lost, for "still nothing after 30 s".
   */
  | { kind: 'retrying'; attempt: number; retry_at_ms: number; since_ms: number; reason: string }
  /** The engine answers but this browser has no console session (401): retrying cannot help, a fresh login link can. */
  | { kind: 'signed_out'; reason: string };

/** Why the store was (re)loaded from a snapshot. */
export type ResetReason = 'initial' | 'behind' | 'gap' | 'restarted';

/** The receiving end: the console store. */
export interface StreamSink {
  reset(snapshot: Snapshot, why: ResetReason): void;
  push(env: Envelope): void;
  status(s: ConnStatus): void;
}

/** The subset of EventSource the stream uses. */
export interface EventSourceLike {
  onopen: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  addEventListener(type: string, fn: (ev: { data: string }) => void): void;
  close(): void;
}

export interface StreamDeps {
  open(url: string): EventSourceLike;
  snapshot(): Promise<Snapshot>;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
  now(): number;
}

/** The longest wait between tries: the engine is local, a person is waiting. */
export const MAX_BACKOFF_MS = 3_000;

/**
 * How long tries may fail before the console says the engine may be
 * elsewhere (stopped, or started on another port) and what to run.
 */
export const LOST_HINT_MS = 30_000;

/** Backoff before retry `attempt` (1-based): 0.5 s doubling to a 3 s cap. */
export function backoffMs(attempt: number): number {
  return Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.max(0, attempt - 1));
}

/** Whether the engine has been unreachable long enough to tell the person what to run. */
export function lostLong(s: ConnStatus, now: number): boolean {
  return s.kind === 'retrying' && now - s.since_ms >= LOST_HINT_MS;
}

/** What to do with one envelope, given the last seq applied. */
export type SeqDecision = 'apply' | 'skip' | 'gap';

export function decide(lastSeq: number, seq: number): SeqDecision {
  if (seq <= lastSeq) return 'skip';
  if (seq === lastSeq + 1) return 'apply';
  return 'gap';
}

/** Parses an SSE `message` payload; null when it is not an envelope. */
export function parseEnvelope(data: string): Envelope | null {
  try {
    const v = JSON.parse(data) as Partial<Envelope>;
    if (typeof v.seq !== 'number' || typeof v.ts_ms !== 'number' || !v.event || typeof v.event !== 'object') {
      return null;
    }
    return v as Envelope;
  } catch {
    return null;
  }
}

function sameEngine(a: Snapshot['engine'], b: Snapshot['engine']): boolean {
  return a.pid === b.pid && a.started_ms === b.started_ms;
}

export class Stream {
  private lastSeq = 0;
  private engine: Snapshot['engine'] | null = null;
  private source: EventSourceLike | null = null;
  private timer: unknown = null;
  private attempt = 0;
  /** When the connection was lost, while tries fail; null while live. */
  private lostSince: number | null = null;
  private lastReason = '';
  private stopped = true;
  /** Bumped on every (re)connect so late callbacks of an old one do nothing. */
  private generation = 0;

  constructor(
    private readonly sink: StreamSink,
    private readonly deps: StreamDeps,
  ) {}

  /** The last seq applied (for tests and diagnostics). */
  get seq(): number {
    return this.lastSeq;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.sink.status({ kind: 'connecting' });
    void this.load('initial');
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    this.closeSource();
    if (this.timer !== null) this.deps.clearTimer(this.timer);
    this.timer = null;
  }

  /** "Retry now" in the banner. */
  retryNow(): void {
    if (this.stopped) return;
    if (this.timer !== null) this.deps.clearTimer(this.timer);
    this.timer = null;
    void this.reconnect();
  }

  private closeSource(): void {
    if (this.source) {
      this.source.onopen = null;
      this.source.onerror = null;
      this.source.close();
      this.source = null;
    }
  }

  /** Fetches a snapshot, hands it to the store, subscribes after its seq. */
  private async load(why: ResetReason): Promise<void> {
    const gen = ++this.generation;
    this.closeSource();
    let snap: Snapshot;
    try {
      snap = await this.deps.snapshot();
    } catch (e) {
      if (gen === this.generation) this.failed(e);
      return;
    }
    if (gen !== this.generation || this.stopped) return;
    this.adopt(snap, why);
    this.subscribe(gen);
  }

  private adopt(snap: Snapshot, why: ResetReason): void {
    this.engine = snap.engine;
    this.lastSeq = snap.seq;
    this.sink.reset(snap, why);
  }

  /** After a dropped connection: check the engine, then resume or reload. */
  private async reconnect(): Promise<void> {
    const gen = ++this.generation;
    this.closeSource();
    this.sink.status(this.trying());
    let snap: Snapshot;
    try {
      snap = await this.deps.snapshot();
    } catch (e) {
      if (gen === this.generation) this.failed(e);
      return;
    }
    if (gen !== this.generation || this.stopped) return;
    if (!this.engine || !sameEngine(this.engine, snap.engine) || snap.seq < this.lastSeq) {
      this.adopt(snap, this.engine ? 'restarted' : 'initial');
    }
    this.subscribe(gen);
  }

  private subscribe(gen: number): void {
    const es = this.deps.open(`/api/events?after=${this.lastSeq}`);
    this.source = es;
    es.onopen = () => {
      if (gen !== this.generation) return;
      this.attempt = 0;
      this.lostSince = null;
      this.sink.status({ kind: 'live' });
    };
    es.onerror = () => {
      if (gen !== this.generation) return;
      this.closeSource();
      this.retry('The connection to the engine dropped.');
    };
    es.addEventListener('message', (ev) => {
      if (gen !== this.generation) return;
      const env = parseEnvelope(ev.data);
      if (!env) return;
      switch (decide(this.lastSeq, env.seq)) {
        case 'skip':
          return;
        case 'gap':
          void this.load('gap');
          return;
        case 'apply':
          this.lastSeq = env.seq;
          this.sink.push(env);
      }
    });
    es.addEventListener('reload', () => {
      if (gen !== this.generation) return;
      void this.load('behind');
    });
  }

  /** A snapshot request failed: signed out stops here, anything else retries. */
  private failed(e: unknown): void {
    if (e instanceof ApiError && e.code === 'unauthorized') {
      this.closeSource();
      this.lostSince = null;
      this.sink.status({ kind: 'signed_out', reason: e.message });
      return;
    }
    this.retry(reasonOf(e));
  }

  /** The status while a try is under way: still retrying, the try starts now. */
  private trying(): ConnStatus {
    if (this.lostSince === null) return { kind: 'connecting' };
    const now = this.deps.now();
    return { kind: 'retrying', attempt: this.attempt, retry_at_ms: now, since_ms: this.lostSince, reason: this.lastReason };
  }

  private retry(reason: string): void {
    if (this.stopped) return;
    this.attempt++;
    const now = this.deps.now();
    this.lostSince ??= now;
    this.lastReason = reason;
    const wait = backoffMs(this.attempt);
    this.sink.status({ kind: 'retrying', attempt: this.attempt, retry_at_ms: now + wait, since_ms: this.lostSince, reason });
    if (this.timer !== null) this.deps.clearTimer(this.timer);
    this.timer = this.deps.setTimer(() => {
      this.timer = null;
      if (this.engine) void this.reconnect();
      else void this.load('initial');
    }, wait);
  }
}

/** Why a try failed, short: the banner says what to do once tries keep failing. */
function reasonOf(e: unknown): string {
  if (e instanceof ApiError && e.code === 'network') return 'Nothing answers at its address.';
  return e instanceof Error ? e.message : 'The engine did not answer.';
}

/** The browser's implementations. */
export function browserDeps(snapshot: () => Promise<Snapshot>): StreamDeps {
  return {
    open: (url) => new EventSource(url, { withCredentials: true }) as unknown as EventSourceLike,
    snapshot,
    setTimer: (fn, ms) => setTimeout(fn, ms),
    clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    now: () => Date.now(),
  };
}
