/**
 * Latest-wins, debounced requests: a search box asks as the person types,
 * but only once they pause, and only the answer to the last words counts.
 * A newer question aborts the older request (its answer, should it still
 * arrive, is dropped), so a slow answer to "op" never replaces the one to
 * "open a bug".
 */

/** Timers, swappable in tests. */
export interface Timers {
  set(f: () => void, ms: number): unknown;
  clear(id: unknown): void;
}

const realTimers: Timers = {
  set: (f, ms) => setTimeout(f, ms),
  clear: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
};

export interface LatestOptions<Q, R> {
  /** Asks; must stop when `signal` aborts. */
  run: (q: Q, signal: AbortSignal) => Promise<R>;
  /** The answer to the latest question. */
  onResult: (q: Q, r: R) => void;
  /** The latest question failed (never called for an aborted, stale one). */
  onError: (q: Q, e: unknown) => void;
  /** Whether a question is waiting or being answered. */
  onBusy?: (busy: boolean) => void;
  /** Milliseconds of quiet before asking. */
  delay: number;
  timers?: Timers;
}

export class Latest<Q, R> {
  #o: LatestOptions<Q, R>;
  #timers: Timers;
  #timer: unknown = null;
  #inflight: AbortController | null = null;
  #generation = 0;

  constructor(o: LatestOptions<Q, R>) {
    this.#o = o;
    this.#timers = o.timers ?? realTimers;
  }

  /** Asks `q` after the delay, replacing whatever was waiting or in flight. */
  push(q: Q): void {
    this.#drop();
    const gen = this.#generation;
    this.#o.onBusy?.(true);
    this.#timer = this.#timers.set(() => {
      this.#timer = null;
      void this.#ask(q, gen);
    }, this.#o.delay);
  }

  /** Forgets whatever was waiting or in flight (the box was emptied, the view closed). */
  cancel(): void {
    this.#drop();
    this.#o.onBusy?.(false);
  }

  #drop(): void {
    this.#generation++;
    if (this.#timer !== null) this.#timers.clear(this.#timer);
    this.#timer = null;
    this.#inflight?.abort();
    this.#inflight = null;
  }

  async #ask(q: Q, gen: number): Promise<void> {
    const ctl = new AbortController();
    this.#inflight = ctl;
    try {
      const r = await this.#o.run(q, ctl.signal);
      if (gen !== this.#generation) return;
      this.#inflight = null;
      this.#o.onResult(q, r);
    } catch (e) {
      if (gen !== this.#generation) return;
      this.#inflight = null;
      this.#o.onError(q, e);
    }
    this.#o.onBusy?.(false);
  }
}
