/**
 * The keyboard map (docs/architecture/console.md, "Keyboard"), as data plus
 * one pure resolver.
 *
 * - Keys do nothing while typing in a field or composing with an IME; the
 *   one exception is Ctrl+Shift+J (jump to the soonest-expiring approval),
 *   which works everywhere, dialogs included.
 * - `g` then a letter goes to a view (tinykeys-style sequence, 1.5 s):
 *   every view has one, the first letter of its name not already taken.
 *   There are no Ctrl+digit bindings: browsers keep Ctrl+1…9 (and Linux
 *   Chromium Alt+1…8) for switching tabs, so the page never sees them.
 * - `a` is never Shift+A: tinykeys' matcher refuses a press with a modifier
 *   the binding does not name, so "always" can't be hit by a held Shift.
 * - Approve/deny are refused by {@link DecisionGuard} for 400 ms after the
 *   selection changed or a new request arrived, so a key meant for one
 *   request never lands on another.
 *
 * Matching uses tinykeys' own parser and matcher, so key names follow its
 * syntax (`Control+Shift+J`, `Shift+?`, `Space`).
 */
import { matchKeyBindingPress, parseKeybinding } from 'tinykeys';

export type ViewId = 'approvals' | 'live' | 'breakers' | 'tools' | 'policy' | 'servers' | 'audit' | 'connect' | 'settings';

export type Action =
  | { type: 'help' }
  | { type: 'goto'; view: ViewId }
  | { type: 'jumpSoonest' }
  | { type: 'move'; delta: 1 | -1 }
  | { type: 'open' }
  | { type: 'close' }
  | { type: 'approve' }
  | { type: 'approveAlways' }
  | { type: 'deny' }
  | { type: 'search' }
  | { type: 'togglePause' }
  | { type: 'toggleRaw' }
  | { type: 'toggleCore' }
  | { type: 'connectClient' }
  | { type: 'disconnectClient' }
  | { type: 'toggleHooks' };

export interface Binding {
  /** tinykeys key strings; any of them triggers. */
  keys: string[];
  action: Action;
  /** What the `?` sheet says. */
  label: string;
  group: 'Go to' | 'Lists' | 'Approvals' | 'Live calls' | 'Tools' | 'Connect' | 'General';
  /** Shown in the sheet instead of the raw key strings. */
  display: string[];
  /** Works inside inputs and dialogs. */
  anywhere?: boolean;
}

/** The `g x` sequences, in rail order: one for every view. */
export const SEQUENCES: Readonly<Record<string, ViewId>> = {
  a: 'approvals',
  l: 'live',
  b: 'breakers',
  t: 'tools',
  p: 'policy',
  s: 'servers',
  u: 'audit',
  c: 'connect',
  e: 'settings',
};

/** The `g x` that goes to `view` (the rail's tooltips show it). */
export function gotoKeys(view: ViewId): string {
  const letter = Object.entries(SEQUENCES).find(([, v]) => v === view)?.[0];
  return letter ? `g ${letter}` : '';
}

const VIEW_LABEL: Record<ViewId, string> = {
  approvals: 'Approvals',
  live: 'Live calls',
  breakers: 'Breakers',
  tools: 'Tools',
  policy: 'Policy',
  servers: 'Servers',
  audit: 'Audit',
  connect: 'Connect',
  settings: 'Settings',
};

export const BINDINGS: readonly Binding[] = [
  { keys: ['Shift+?', '?'], action: { type: 'help' }, label: 'Show this sheet', group: 'General', display: ['?'] },
  { keys: ['/'], action: { type: 'search' }, label: 'Search in this view', group: 'General', display: ['/'] },
  // The sequences are read by resolveKey itself; these rows (no keys of
  // their own) are what the sheet lists.
  ...Object.values(SEQUENCES).map(
    (view): Binding => ({
      keys: [],
      action: { type: 'goto', view },
      label: VIEW_LABEL[view],
      group: 'Go to',
      display: [gotoKeys(view)],
    }),
  ),
  {
    keys: ['Control+Shift+J'],
    action: { type: 'jumpSoonest' },
    label: 'Jump to the approval that expires first',
    group: 'Approvals',
    display: ['Ctrl Shift J'],
    anywhere: true,
  },
  { keys: ['j', 'ArrowDown'], action: { type: 'move', delta: 1 }, label: 'Next item', group: 'Lists', display: ['j', '↓'] },
  { keys: ['k', 'ArrowUp'], action: { type: 'move', delta: -1 }, label: 'Previous item', group: 'Lists', display: ['k', '↑'] },
  { keys: ['Enter'], action: { type: 'open' }, label: 'Open', group: 'Lists', display: ['Enter'] },
  { keys: ['Escape'], action: { type: 'close' }, label: 'Close, cancel', group: 'Lists', display: ['Esc'] },
  { keys: ['a'], action: { type: 'approve' }, label: 'Approve once', group: 'Approvals', display: ['a'] },
  { keys: ['s'], action: { type: 'approveAlways' }, label: 'Approve & always…', group: 'Approvals', display: ['s'] },
  { keys: ['d'], action: { type: 'deny' }, label: 'Deny (type a reason, Enter sends)', group: 'Approvals', display: ['d'] },
  { keys: ['Space'], action: { type: 'togglePause' }, label: 'Pause / follow the feed', group: 'Live calls', display: ['Space'] },
  { keys: ['r'], action: { type: 'toggleRaw' }, label: 'Raw / as the model saw it', group: 'Live calls', display: ['r'] },
  { keys: ['p'], action: { type: 'toggleCore' }, label: 'Pin the open tool as core / unpin it', group: 'Tools', display: ['p'] },
  { keys: ['c'], action: { type: 'connectClient' }, label: 'Connect the selected client (review the diff first)', group: 'Connect', display: ['c'] },
  { keys: ['x'], action: { type: 'disconnectClient' }, label: 'Disconnect it (review the diff first)', group: 'Connect', display: ['x'] },
  { keys: ['h'], action: { type: 'toggleHooks' }, label: 'Install or remove its hooks (review the diff first)', group: 'Connect', display: ['h'] },
];

const PARSED = BINDINGS.map((b) => ({ b, presses: b.keys.map((k) => parseKeybinding(k)[0]) }));

/** Sequence state carried between key presses. */
export interface KeyState {
  prefix: 'g' | null;
  at: number;
}

export const IDLE: KeyState = { prefix: null, at: 0 };

export const SEQUENCE_MS = 1_500;

export interface KeyContext {
  /** Focus is in a text field, select or contenteditable. */
  inInput: boolean;
  /** A modal dialog is open. */
  dialogOpen: boolean;
  now: number;
}

export interface Resolution {
  action: Action | null;
  state: KeyState;
}

/** Whether an element takes typed text (keys must not act there). */
export function isTypingTarget(t: EventTarget | null): boolean {
  if (!t || typeof (t as Element).tagName !== 'string') return false;
  const el = t as HTMLElement;
  const tag = el.tagName.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if (tag === 'input') {
    const type = ((el as HTMLInputElement).type || 'text').toLowerCase();
    return !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color', 'file'].includes(type);
  }
  return el.isContentEditable === true || el.getAttribute?.('contenteditable') === 'true';
}

function plain(ev: KeyboardEvent): boolean {
  return !ev.ctrlKey && !ev.metaKey && !ev.altKey && !ev.shiftKey;
}

/** Resolves one keydown to an action (or none), given the sequence state. */
export function resolveKey(ev: KeyboardEvent, state: KeyState, ctx: KeyContext): Resolution {
  // IME composition: the keys belong to the composer (keyCode 229 is Chrome's "composing" marker).
  if (ev.isComposing || ev.keyCode === 229 || ev.key === 'Process') return { action: null, state };

  for (const { b, presses } of PARSED) {
    if (b.anywhere && presses.some((p) => p && matchKeyBindingPress(ev, p))) return { action: b.action, state: IDLE };
  }
  if (ctx.inInput || ctx.dialogOpen) return { action: null, state: IDLE };

  if (state.prefix === 'g' && ctx.now - state.at <= SEQUENCE_MS) {
    const view = plain(ev) ? SEQUENCES[ev.key] : undefined;
    if (view) return { action: { type: 'goto', view }, state: IDLE };
    // Any other key ends the sequence and is read on its own.
    state = IDLE;
  }
  if (ev.key === 'g' && plain(ev)) return { action: null, state: { prefix: 'g', at: ctx.now } };

  for (const { b, presses } of PARSED) {
    if (presses.some((p) => p && matchKeyBindingPress(ev, p))) return { action: b.action, state: IDLE };
  }
  return { action: null, state: IDLE };
}

/** Approve/deny are held back for `holdMs` after the selection changes or a request arrives. */
export class DecisionGuard {
  private last = -Infinity;

  constructor(
    private readonly now: () => number,
    readonly holdMs = 400,
  ) {}

  /** The selection changed, or a new request arrived. */
  touch(): void {
    this.last = this.now();
  }

  /** Whether a decision key may act now. */
  ready(): boolean {
    return this.now() - this.last >= this.holdMs;
  }
}

/** Actions a DecisionGuard holds back. */
export function isDecision(a: Action): boolean {
  return a.type === 'approve' || a.type === 'approveAlways' || a.type === 'deny';
}

/** The sheet's rows, grouped. */
export function sheet(): { group: Binding['group']; rows: { display: string[]; label: string }[] }[] {
  const order: Binding['group'][] = ['General', 'Go to', 'Lists', 'Approvals', 'Live calls', 'Tools', 'Connect'];
  return order.map((group) => ({
    group,
    rows: BINDINGS.filter((b) => b.group === group).map((b) => ({ display: b.display, label: b.label })),
  }));
}
