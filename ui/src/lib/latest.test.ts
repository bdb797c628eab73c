import { describe, expect, it } from 'vitest';
import { Latest, type Timers } from './latest';

/** Timers fired by hand. */
function manual() {
  let next = 1;
  const waiting = new Map<number, () => void>();
  const timers: Timers = {
    set: (f) => {
      const id = next++;
      waiting.set(id, f);
      return id;
    },
    clear: (id) => void waiting.delete(id as number),
  };
  const fire = () => {
    const fs = [...waiting.values()];
    waiting.clear();
    fs.forEach((f) => f());
  };
  return { timers, fire, waiting };
}

/** A request answered by hand. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

function setup() {
  const t = manual();
  const asked: { q: string; signal: AbortSignal; answer: ReturnType<typeof deferred<string>> }[] = [];
  const results: [string, string][] = [];
  const errors: [string, unknown][] = [];
  const busy: boolean[] = [];
  const latest = new Latest<string, string>({
    delay: 150,
    timers: t.timers,
    run: (q, signal) => {
      const answer = deferred<string>();
      asked.push({ q, signal, answer });
      return answer.promise;
    },
    onResult: (q, r) => results.push([q, r]),
    onError: (q, e) => errors.push([q, e]),
    onBusy: (b) => busy.push(b),
  });
  return { latest, asked, results, errors, busy, ...t };
}

describe('latest-wins requests', () => {
  it('asks once the typing pauses, with the last words only', async () => {
    const s = setup();
    s.latest.push('o');
    s.latest.push('op');
    s.latest.push('open');
    expect(s.asked).toEqual([]);
    expect(s.waiting.size).toBe(1);
    s.fire();
    expect(s.asked.map((a) => a.q)).toEqual(['open']);
    s.asked[0]?.answer.resolve('R');
    await tick();
    expect(s.results).toEqual([['open', 'R']]);
    expect(s.busy.at(-1)).toBe(false);
  });

  it('aborts a stale request and drops its answer, even one that arrives late', async () => {
    const s = setup();
    s.latest.push('op');
    s.fire();
    s.latest.push('open');
    const stale = s.asked[0];
    expect(stale?.signal.aborted).toBe(true);
    s.fire();
    s.asked[1]?.answer.resolve('new');
    stale?.answer.resolve('old');
    await tick();
    expect(s.results).toEqual([['open', 'new']]);
  });

  it('reports the latest failure, never a stale one', async () => {
    const s = setup();
    s.latest.push('a');
    s.fire();
    s.latest.push('b');
    s.fire();
    s.asked[0]?.answer.reject(new Error('aborted'));
    s.asked[1]?.answer.reject(new Error('engine away'));
    await tick();
    expect(s.errors.map(([q, e]) => [q, (e as Error).message])).toEqual([['b', 'engine away']]);
    expect(s.results).toEqual([]);
  });

  it('cancel forgets what waits and what runs', async () => {
    const s = setup();
    s.latest.push('a');
    s.fire();
    s.latest.push('b');
    s.latest.cancel();
    expect(s.waiting.size).toBe(0);
    expect(s.asked[0]?.signal.aborted).toBe(true);
    s.asked[0]?.answer.resolve('late');
    await tick();
    expect(s.results).toEqual([]);
    expect(s.busy.at(-1)).toBe(false);
  });
});
