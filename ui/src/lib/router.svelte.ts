/**
 * Hash routing: `#/live?tool=fs_read&outcome=error`. Hash routes need
 * nothing from the server (it serves index.html at `/`), survive reloads and
 * make the header counters plain links to a filtered view.
 */
import { untrack } from 'svelte';
import type { ViewId } from './keymap';

export const VIEWS: readonly ViewId[] = ['approvals', 'live', 'breakers', 'tools', 'policy', 'servers', 'audit', 'connect', 'settings'];

export interface Route {
  view: ViewId;
  params: URLSearchParams;
}

export function parseHash(hash: string, fallback: ViewId): Route {
  const h = hash.replace(/^#\/?/, '');
  const [path = '', qs = ''] = h.split('?', 2);
  const view = (VIEWS as readonly string[]).includes(path) ? (path as ViewId) : fallback;
  return { view, params: new URLSearchParams(qs) };
}

export function href(view: ViewId, params: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return `#/${view}${s ? `?${s}` : ''}`;
}

class Router {
  route = $state<Route>({ view: 'live', params: new URLSearchParams() });
  /** Whether a view was asked for: in the location when the page opened, or navigated to since. */
  explicit = false;

  init(fallback: () => ViewId): void {
    this.explicit = /^#\/?[a-z]/.test(location.hash);
    this.route = parseHash(location.hash, fallback());
    window.addEventListener('hashchange', () => {
      this.explicit = true;
      this.route = parseHash(location.hash, this.route.view);
    });
  }

  /**
   * A view was asked for: `explicit`, or a navigation whose `hashchange`
   * has not fired yet (the location already names another view).
   */
  get asked(): boolean {
    return this.explicit || parseHash(location.hash, this.route.view).view !== this.route.view;
  }

  go(view: ViewId, params: Record<string, string | undefined> = {}): void {
    const next = href(view, params);
    if (location.hash !== next) location.hash = next;
    else untrack(() => (this.route = parseHash(next, view)));
  }

  /** Changes the query of the current view without a history entry per keystroke. */
  setParams(params: Record<string, string | undefined>): void {
    // Called from views' effects: must not make them depend on the route.
    untrack(() => {
      // A navigation whose `hashchange` has not fired yet: the location
      // already names another view, and writing this view's query would
      // undo it (seen: a Live view's first effect sent the page back).
      if (parseHash(location.hash, this.route.view).view !== this.route.view) return;
      const next = href(this.route.view, params);
      if (location.hash === next) return;
      history.replaceState(null, '', next);
      this.route = parseHash(next, this.route.view);
    });
  }
}

export const router = new Router();
