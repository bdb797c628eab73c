import { describe, expect, it } from 'vitest';
import {
  BINDINGS,
  DecisionGuard,
  IDLE,
  SEQUENCES,
  gotoKeys,
  isDecision,
  isTypingTarget,
  resolveKey,
  sheet,
  type KeyContext,
  type KeyState,
  type ViewId,
} from './keymap';

const ctx = (over: Partial<KeyContext> = {}): KeyContext => ({ inInput: false, dialogOpen: false, now: 1000, ...over });

function key(k: string, init: KeyboardEventInit = {}): KeyboardEvent {
  return new KeyboardEvent('keydown', { key: k, ...init });
}

function press(k: string, init: KeyboardEventInit = {}, c: Partial<KeyContext> = {}, state: KeyState = IDLE) {
  return resolveKey(key(k, init), state, ctx(c));
}

describe('resolveKey', () => {
  it('maps the single keys of the keyboard map', () => {
    expect(press('a').action).toEqual({ type: 'approve' });
    expect(press('s').action).toEqual({ type: 'approveAlways' });
    expect(press('d').action).toEqual({ type: 'deny' });
    expect(press('j').action).toEqual({ type: 'move', delta: 1 });
    expect(press('k').action).toEqual({ type: 'move', delta: -1 });
    expect(press('Enter').action).toEqual({ type: 'open' });
    expect(press('Escape').action).toEqual({ type: 'close' });
    expect(press('/').action).toEqual({ type: 'search' });
    expect(press(' ', { code: 'Space' }).action).toEqual({ type: 'togglePause' });
    expect(press('r').action).toEqual({ type: 'toggleRaw' });
    expect(press('p').action).toEqual({ type: 'toggleCore' });
    expect(press('?', { shiftKey: true }).action).toEqual({ type: 'help' });
  });

  it('never reads Shift+A as approve (or anything)', () => {
    expect(press('A', { shiftKey: true }).action).toBeNull();
    expect(press('D', { shiftKey: true }).action).toBeNull();
    expect(press('a', { ctrlKey: true }).action).toBeNull();
  });

  it('leaves Ctrl+digits to the browser (they switch its tabs)', () => {
    for (let n = 1; n <= 9; n++) {
      const ev = key(String(n), { ctrlKey: true, cancelable: true });
      expect(resolveKey(ev, IDLE, ctx()).action).toBeNull();
    }
  });

  it('reads g-sequences, and the second key is not also its own action', () => {
    const g = press('g');
    expect(g.action).toBeNull();
    expect(g.state.prefix).toBe('g');
    const all = [
      ['a', 'approvals'],
      ['l', 'live'],
      ['b', 'breakers'],
      ['t', 'tools'],
      ['p', 'policy'],
      ['s', 'servers'],
      ['u', 'audit'],
      ['c', 'connect'],
      ['e', 'settings'],
    ] as const;
    for (const [k, view] of all) {
      const r = press(k, {}, { now: 1500 }, { prefix: 'g', at: 1000 });
      expect(r.action).toEqual({ type: 'goto', view });
      expect(r.state).toEqual(IDLE);
    }
  });

  it('drops a stale g prefix: a late `a` approves as itself', () => {
    const r = press('a', {}, { now: 5000 }, { prefix: 'g', at: 1000 });
    expect(r.action).toEqual({ type: 'approve' });
  });

  it('a key that is no sequence ends it and acts on its own', () => {
    const r = press('j', {}, { now: 1200 }, { prefix: 'g', at: 1000 });
    expect(r.action).toEqual({ type: 'move', delta: 1 });
  });

  it('does nothing while typing in a field', () => {
    for (const k of ['a', 'd', 's', 'j', '/', 'g', 'Escape']) expect(press(k, {}, { inInput: true }).action).toBeNull();
    expect(press('u', {}, { inInput: true }, { prefix: 'g', at: 1000 }).action).toBeNull();
  });

  it('does nothing during IME composition', () => {
    expect(press('a', { isComposing: true }).action).toBeNull();
    expect(press('a', { keyCode: 229 } as KeyboardEventInit).action).toBeNull();
    expect(press('Process').action).toBeNull();
  });

  it('Ctrl+Shift+J jumps to the soonest approval everywhere, dialogs and fields included', () => {
    const jump = { type: 'jumpSoonest' };
    expect(press('J', { ctrlKey: true, shiftKey: true }).action).toEqual(jump);
    expect(press('J', { ctrlKey: true, shiftKey: true }, { dialogOpen: true }).action).toEqual(jump);
    expect(press('J', { ctrlKey: true, shiftKey: true }, { inInput: true }).action).toEqual(jump);
    expect(press('a', {}, { dialogOpen: true }).action).toBeNull();
  });
});

describe('isTypingTarget', () => {
  it('knows text fields from buttons and checkboxes', () => {
    const make = (html: string) => {
      const d = document.createElement('div');
      d.innerHTML = html;
      return d.firstElementChild;
    };
    expect(isTypingTarget(make('<input>'))).toBe(true);
    expect(isTypingTarget(make('<input type="search">'))).toBe(true);
    expect(isTypingTarget(make('<textarea></textarea>'))).toBe(true);
    expect(isTypingTarget(make('<select></select>'))).toBe(true);
    expect(isTypingTarget(make('<div contenteditable="true"></div>'))).toBe(true);
    expect(isTypingTarget(make('<input type="checkbox">'))).toBe(false);
    expect(isTypingTarget(make('<button></button>'))).toBe(false);
    expect(isTypingTarget(null)).toBe(false);
  });
});

describe('DecisionGuard', () => {
  it('holds decisions for 400 ms after the selection changes or a request arrives', () => {
    let now = 10_000;
    const g = new DecisionGuard(() => now);
    expect(g.ready()).toBe(true);
    g.touch();
    now += 399;
    expect(g.ready()).toBe(false);
    now += 1;
    expect(g.ready()).toBe(true);
    g.touch();
    now += 100;
    expect(g.ready()).toBe(false);
  });

  it('applies to approve, approve & always, deny only', () => {
    expect(isDecision({ type: 'approve' })).toBe(true);
    expect(isDecision({ type: 'approveAlways' })).toBe(true);
    expect(isDecision({ type: 'deny' })).toBe(true);
    expect(isDecision({ type: 'move', delta: 1 })).toBe(false);
  });
});

describe('the shortcut sheet', () => {
  it('lists every binding once, grouped', () => {
    const rows = sheet().flatMap((g) => g.rows);
    expect(rows.length).toBe(BINDINGS.length);
    const goto = sheet().find((g) => g.group === 'Go to');
    expect(goto?.rows[0]).toEqual({ display: ['g a'], label: 'Approvals' });
    expect(goto?.rows.find((r) => r.label === 'Audit')?.display).toEqual(['g u']);
    expect(goto?.rows.find((r) => r.label === 'Settings')?.display).toEqual(['g e']);
  });

  it('gives every view its own g chord, none shared', () => {
    const views: ViewId[] = ['approvals', 'live', 'breakers', 'tools', 'policy', 'servers', 'audit', 'connect', 'settings'];
    const chords = views.map(gotoKeys);
    expect(chords.every((c) => /^g [a-z]$/.test(c))).toBe(true);
    expect(new Set(chords).size).toBe(views.length);
    expect(Object.keys(SEQUENCES).length).toBe(views.length);
  });
});
