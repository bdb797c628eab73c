/**
 * Settings kept in this browser (localStorage): theme, the pinned live
 * column, desktop notifications (a placeholder until the desktop app).
 */
export type ThemePref = 'system' | 'light' | 'dark';

function read<T extends string>(key: string, allowed: readonly T[], fallback: T): T {
  try {
    const v = localStorage.getItem(key);
    return v !== null && (allowed as readonly string[]).includes(v) ? (v as T) : fallback;
  } catch {
    return fallback;
  }
}

function write(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    /* private mode: the setting lasts for this page only */
  }
}

/** Applies a theme preference to the document. */
export function applyTheme(pref: ThemePref, root: HTMLElement = document.documentElement): void {
  if (pref === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', pref);
}

class Prefs {
  theme = $state<ThemePref>(read('tg.theme', ['system', 'light', 'dark'], 'system'));
  feedPinned = $state(read('tg.feedPinned', ['1', '0'], '0') === '1');
  notifications = $state(read('tg.notifications', ['1', '0'], '1') === '1');

  setTheme(t: ThemePref): void {
    this.theme = t;
    write('tg.theme', t);
    applyTheme(t);
  }

  toggleFeed(): void {
    this.feedPinned = !this.feedPinned;
    write('tg.feedPinned', this.feedPinned ? '1' : '0');
  }

  setNotifications(on: boolean): void {
    this.notifications = on;
    write('tg.notifications', on ? '1' : '0');
  }
}

export const prefs = new Prefs();
