/** The store and stream, handed to every component through Svelte context. */
import { getContext, setContext } from 'svelte';
import type { ConsoleStore } from './stores/console.svelte';
import type { Stream } from './stream';

export const STORE = Symbol('store');
export const STREAM = Symbol('stream');

export function provide(store: ConsoleStore, stream: Pick<Stream, 'retryNow'>): void {
  setContext(STORE, store);
  setContext(STREAM, stream);
}

export function useStore(): ConsoleStore {
  return getContext<ConsoleStore>(STORE);
}

export function useStream(): Pick<Stream, 'retryNow'> {
  return getContext<Pick<Stream, 'retryNow'>>(STREAM);
}
