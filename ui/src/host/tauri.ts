/**
 * The desktop window's only IPC: its own settings (src-tauri/src/commands.rs,
 * `get_desktop_settings` and `set_desktop_settings {patch}`). The only file
 * that knows the page may run inside Tauri.
 *
 * Why not `@tauri-apps/api`: two commands need one function of it,
 * `invoke`, which is itself `window.__TAURI_INTERNALS__.invoke(cmd, args)`;
 * the package would add a dependency (and a version to keep in step with
 * the shell) for that one line. `__TAURI_INTERNALS__` exists only inside the
 * desktop window, so in a browser `desktopHost()` is null and nothing here
 * runs.
 */

/** Mirror of `DesktopSettings` in src-tauri/src/settings.rs (not a ts-rs binding). */
export interface DesktopSettings {
  /** Desktop notifications for approval requests while the window is not focused. */
  notifications: boolean;
  /** Start the app when the person logs in. */
  start_at_login: boolean;
}

/** Mirror of `SettingsPatch`: the fields to change; the shell refuses unknown ones. */
export type SettingsPatch = Partial<DesktopSettings>;

/** What Tauri puts on `window` inside its webview (the part used here). */
export interface TauriInternals {
  invoke(cmd: string, args?: Record<string, unknown>): Promise<unknown>;
}

declare global {
  interface Window {
    __TAURI_INTERNALS__?: TauriInternals;
  }
}

/** A command the desktop shell refused or could not run; `message` is the shell's own words. */
export class DesktopError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DesktopError';
  }
}

export interface DesktopHost {
  getSettings(): Promise<DesktopSettings>;
  setSettings(patch: SettingsPatch): Promise<DesktopSettings>;
}

function settingsFrom(v: unknown): DesktopSettings {
  const o = v as Partial<DesktopSettings> | null;
  if (!o || typeof o.notifications !== 'boolean' || typeof o.start_at_login !== 'boolean') {
    throw new DesktopError('The desktop app answered with settings this page does not understand; update the app.');
  }
  return { notifications: o.notifications, start_at_login: o.start_at_login };
}

/** The shell rejects with its error's message as a string; anything else becomes one. */
function errorFrom(e: unknown): DesktopError {
  if (typeof e === 'string') return new DesktopError(e);
  if (e instanceof Error) return new DesktopError(e.message);
  return new DesktopError('The desktop app did not answer.');
}

async function call(t: TauriInternals, cmd: string, args?: Record<string, unknown>): Promise<DesktopSettings> {
  let answer: unknown;
  try {
    answer = await t.invoke(cmd, args);
  } catch (e) {
    throw errorFrom(e);
  }
  return settingsFrom(answer);
}

/** The desktop shell, when this page runs in its window; null in a browser. */
export function desktopHost(w: Pick<Window, '__TAURI_INTERNALS__'> | undefined = globalThis.window): DesktopHost | null {
  const t = w?.__TAURI_INTERNALS__;
  if (!t || typeof t.invoke !== 'function') return null;
  return {
    getSettings: () => call(t, 'get_desktop_settings'),
    // Only the fields the patch names: `undefined` keys would not survive
    // JSON anyway, but an explicit copy keeps the wire exactly SettingsPatch.
    setSettings: (patch) => {
      const p: SettingsPatch = {};
      if (patch.notifications !== undefined) p.notifications = patch.notifications;
      if (patch.start_at_login !== undefined) p.start_at_login = patch.start_at_login;
      return call(t, 'set_desktop_settings', { patch: p });
    },
  };
}
