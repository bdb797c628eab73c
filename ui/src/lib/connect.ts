/**
 * The Connect view's logic: which clients show where, what each offers,
 * and how the engine's states and files read. The words about a client
 * (its name, the summary and notes of a plan, why a server stays, what to
 * do after a change) are the engine's (`ClientStatus`, `ConnectPlan`);
 * this module only picks a tone, an icon and a short state word for them.
 */
import type { ClientId, ClientStatus, ConfigScope, ConnectAction, ConnectApplied, ConnectPlan, FilePlan, FileStatus, ServerSummary } from './api/types';
import type { Look } from './format';
import type { IconName } from './icons';

/** The clients found on this machine (engine order), then the others, folded away. */
export function partition(all: readonly ClientStatus[]): { found: ClientStatus[]; missing: ClientStatus[] } {
  return { found: all.filter((c) => c.detected), missing: all.filter((c) => !c.detected) };
}

/** Whether the client goes through toolgate: a word and an icon, never colour alone. */
export function connectionLook(c: ClientStatus): Look {
  if (c.connected) return { tone: 'ok', icon: 'check-circle', word: 'Connected' };
  if (!c.detected) return { tone: 'muted', icon: 'slash', word: 'Not found' };
  return { tone: 'muted', icon: 'plug', word: 'Not connected' };
}

/** Hooks, for an agent that has a hook system; `null` for one that has none. */
export function hooksLook(c: ClientStatus): Look | null {
  if (!c.hooks) return null;
  return c.hooks.installed
    ? { tone: 'ok', icon: 'shield', word: 'Hooks installed' }
    : { tone: 'muted', icon: 'shield', word: 'Hooks not installed' };
}

/** A running client: told to restart after a change (its hint comes with the plan). */
export const RUNNING_LOOK: Look = { tone: 'info', icon: 'activity', word: 'Running' };

/** The button of each action. */
export const ACTION_WORD: Record<ConnectAction, string> = {
  connect: 'Connect',
  disconnect: 'Disconnect',
  install_hooks: 'Install hooks',
  remove_hooks: 'Remove hooks',
};

/** The icon of each action's button. */
export const ACTION_ICON: Record<ConnectAction, IconName> = {
  connect: 'plug',
  disconnect: 'x-circle',
  install_hooks: 'shield',
  remove_hooks: 'shield-x',
};

/** The key of each action in this view (`c`, `x`, `h`; `h` installs or removes hooks, whichever applies). */
export const ACTION_KEY: Record<ConnectAction, string> = {
  connect: 'c',
  disconnect: 'x',
  install_hooks: 'h',
  remove_hooks: 'h',
};

/**
 * What a person can do to a client now: Connect when it was found and is
 * not connected, Disconnect when it is; Install or Remove hooks for an
 * agent with a hook system. A client found nowhere offers nothing.
 */
export function actions(c: ClientStatus): ConnectAction[] {
  const out: ConnectAction[] = [];
  if (c.connected) out.push('disconnect');
  else if (c.detected) out.push('connect');
  if (c.hooks && (c.detected || c.hooks.installed)) out.push(c.hooks.installed ? 'remove_hooks' : 'install_hooks');
  return out;
}

/** The action a shortcut asks for on this client, if it offers it (`h` is whichever hook action applies). */
export function actionForKey(c: ClientStatus, key: 'connect' | 'disconnect' | 'hooks'): ConnectAction | null {
  const offered = actions(c);
  if (key === 'hooks') return offered.find((a) => a === 'install_hooks' || a === 'remove_hooks') ?? null;
  return offered.includes(key) ? key : null;
}

/** The files that exist, then where toolgate looked (for a client found nowhere, all of them). */
export function existing(c: ClientStatus): FileStatus[] {
  return c.files.filter((f) => f.exists);
}

/** A path under `home` as `~/...`, as the CLI shows it; any other path as it is. */
export function tilde(path: string, home: string | null | undefined): string {
  if (!home || home === '/') return path;
  const h = home.replace(/\/+$/, '');
  return path === h ? '~' : path.startsWith(`${h}/`) ? `~${path.slice(h.length)}` : path;
}

/** The word of a scope as a heading's tag. */
export function scopeWord(s: ConfigScope): string {
  return s === 'user' ? 'User' : s === 'project' ? 'Project' : 'Local';
}

/** The servers of a client's files that would move into toolgate (not the bridge, not those that stay). */
export function movable(c: ClientStatus): ServerSummary[] {
  return existing(c).flatMap((f) => f.servers.filter((s) => !s.is_toolgate && !s.stays));
}

/** The engine's reason a server stays (a predicate: "uses `${input:token}`, which only the client can fill in") as a sentence. */
export function sentence(fragment: string): string {
  const t = fragment.trim();
  if (!t) return t;
  const head = t[0]?.toUpperCase() ?? '';
  return `${head}${t.slice(1)}${/[.!?]$/.test(t) ? '' : '.'}`;
}

/** How a server reads in the list: toolgate's bridge, one that stays in the client, or its target. */
export function serverLook(s: ServerSummary): Look | null {
  if (s.is_toolgate) return { tone: 'ok', icon: 'check', word: "toolgate's bridge" };
  if (s.stays) return { tone: 'warn', icon: 'alert', word: 'Stays in the client' };
  return null;
}

/** A file of a plan as a heading: whose file it is, in words. */
export function roleHeading(f: FilePlan, plan: Pick<ConnectPlan, 'client_name'>): string {
  switch (f.role) {
    case 'client':
      return `${plan.client_name}'s MCP config`;
    case 'hooks':
      return `${plan.client_name}'s hook settings`;
    case 'toolgate_config':
      return "toolgate's config";
  }
}

/** `20261205T102233Z` (UTC, as the engine records it) as a Date; `null` when it is not that shape. */
export function parseStamp(stamp: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, s);
  return Number.isNaN(t) ? null : new Date(t);
}

/** When a client was connected, for a person: `5 Dec 2026, 10:22`, in the reader's time zone. */
export function connectedWhen(stamp: string | null, timeZone?: string): string | null {
  if (!stamp) return null;
  const d = parseStamp(stamp);
  if (!d) return stamp;
  return new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', timeZone }).format(d);
}

/** The outcome of an apply, as one note: what was done, where the backups are, what to do next. */
export interface Outcome {
  action: ConnectAction;
  title: string;
  lines: string[];
  restart: string | null;
  warnings: string[];
}

const DONE: Record<ConnectAction, (name: string) => string> = {
  connect: (n) => `${n} now goes through toolgate`,
  disconnect: (n) => `${n} is disconnected from toolgate`,
  install_hooks: (n) => `toolgate's hooks are installed for ${n}`,
  remove_hooks: (n) => `toolgate's hooks are removed from ${n}`,
};

export function outcome(a: ConnectApplied, home?: string | null): Outcome {
  return {
    action: a.plan.action,
    title: DONE[a.plan.action](a.plan.client_name),
    lines: a.backups.map((b) => `Backup: \`${tilde(b, home)}\``),
    restart: a.plan.restart,
    warnings: a.warnings,
  };
}

/** The client after `from` in `list` by `delta`, clamped (j/k). */
export function step(list: readonly ClientStatus[], from: ClientId | null, delta: 1 | -1): ClientId | null {
  if (!list.length) return null;
  const i = list.findIndex((c) => c.id === from);
  if (i < 0) return (delta > 0 ? list[0] : list[list.length - 1])?.id ?? null;
  return list[Math.max(0, Math.min(list.length - 1, i + delta))]?.id ?? null;
}

/** The heading of a review. */
export function reviewTitle(action: ConnectAction, name: string): string {
  switch (action) {
    case 'connect':
      return `Connect ${name} to toolgate`;
    case 'disconnect':
      return `Disconnect ${name} from toolgate`;
    case 'install_hooks':
      return `Install toolgate's hooks for ${name}`;
    case 'remove_hooks':
      return `Remove toolgate's hooks from ${name}`;
  }
}
