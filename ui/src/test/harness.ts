/** Test helpers: a store with a hand-cranked frame, and a fake engine behind the API client. */
import { setTransport, type Method } from '../lib/api/client';
import type { Event, WireEvent } from '../lib/api/types';
import { STORE, STREAM } from '../lib/context';
import { ConsoleStore } from '../lib/stores/console.svelte';

export interface Call {
  method: Method;
  path: string;
  body: unknown;
}

export function fakeEngine(answer: (c: Call) => unknown = () => ({})) {
  const calls: Call[] = [];
  setTransport({
    request: async (method, path, body) => {
      const c = { method, path, body };
      calls.push(c);
      const a = answer(c);
      if (a instanceof Response) return a;
      return new Response(JSON.stringify(a), { status: 200, headers: { 'Content-Type': 'application/json' } });
    },
  });
  return calls;
}

export function testStore(capacity?: number) {
  const frames: (() => void)[] = [];
  const store = new ConsoleStore({ schedule: (f) => frames.push(f), ...(capacity ? { capacity } : {}) });
  return {
    store,
    frame: () => frames.splice(0).forEach((f) => f()),
    context: new Map<unknown, unknown>([
      [STORE, store],
      [STREAM, { retryNow: () => {} }],
    ]),
  };
}

/** An event as the engine serialises it (see WireEvent in types.ts). */
export const wire = (e: WireEvent): Event => e as Event;
