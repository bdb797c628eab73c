import { describe, expect, it } from 'vitest';
import { connectClients, connectPlan } from '../dev/fixtures';
import type { ClientStatus } from './api/types';
import {
  actionForKey,
  actions,
  connectedWhen,
  connectionLook,
  hooksLook,
  movable,
  outcome,
  parseStamp,
  partition,
  reviewTitle,
  roleHeading,
  sentence,
  serverLook,
  step,
  tilde,
} from './connect';

const all = connectClients();
const byId = (id: string): ClientStatus => all.find((c) => c.id === id)!;

describe('connect view logic', () => {
  it('lists the clients found first, in the engine order, and folds the others away', () => {
    const { found, missing } = partition(all);
    expect(found.map((c) => c.id)).toEqual(['claude-desktop', 'claude-code', 'cursor']);
    expect(missing.map((c) => c.id)).toEqual(['vscode', 'windsurf', 'gemini-cli', 'codex', 'zed']);
  });

  it('says connected or not with a word and an icon, never colour alone', () => {
    for (const c of all) {
      const l = connectionLook(c);
      expect(l.word.length).toBeGreaterThan(0);
      expect(l.icon.length).toBeGreaterThan(0);
    }
    expect(connectionLook(byId('claude-code'))).toMatchObject({ word: 'Connected', tone: 'ok' });
    expect(connectionLook(byId('claude-desktop')).word).toBe('Not connected');
    expect(connectionLook(byId('zed')).word).toBe('Not found');
    expect(hooksLook(byId('claude-desktop'))).toBeNull();
    expect(hooksLook(byId('claude-code'))?.word).toBe('Hooks not installed');
    const installed = { ...byId('claude-code'), hooks: { installed: true, path: '/h/.claude/settings.json' } };
    expect(hooksLook(installed)?.word).toBe('Hooks installed');
  });

  it('offers what applies now: connect or disconnect, and the one hook action of a hook-capable agent', () => {
    expect(actions(byId('claude-desktop'))).toEqual(['connect']);
    expect(actions(byId('claude-code'))).toEqual(['disconnect', 'install_hooks']);
    expect(actions(byId('zed'))).toEqual([]);
    // An agent found nowhere: nothing to install into.
    expect(actions(byId('gemini-cli'))).toEqual([]);
    const installed = { ...byId('claude-code'), hooks: { installed: true, path: '/h/.claude/settings.json' } };
    expect(actions(installed)).toEqual(['disconnect', 'remove_hooks']);
    expect(actionForKey(installed, 'hooks')).toBe('remove_hooks');
    expect(actionForKey(byId('claude-code'), 'hooks')).toBe('install_hooks');
    expect(actionForKey(byId('claude-code'), 'connect')).toBeNull();
    expect(actionForKey(byId('claude-desktop'), 'disconnect')).toBeNull();
    expect(actionForKey(byId('claude-desktop'), 'hooks')).toBeNull();
  });

  it("marks toolgate's bridge and the servers that stay, and counts only the ones connect moves", () => {
    const code = byId('claude-code');
    const [bridge] = code.files[0]!.servers;
    const [sentry] = code.files[2]!.servers;
    expect(serverLook(bridge!)?.word).toBe("toolgate's bridge");
    expect(serverLook(sentry!)?.word).toBe('Stays in the client');
    expect(movable(code)).toEqual([]);
    expect(movable(byId('claude-desktop')).map((s) => s.name)).toEqual(['filesystem', 'github']);
  });

  it("reads the engine's reason a server stays as a sentence, code kept", () => {
    expect(sentence('uses `${TOKEN}`, which only the client can fill in')).toBe('Uses `${TOKEN}`, which only the client can fill in.');
    expect(sentence('`args` is not a list')).toBe('`args` is not a list.');
    expect(sentence('already a sentence.')).toBe('Already a sentence.');
  });

  it('heads each file of a plan with whose it is', () => {
    const plan = connectPlan('claude-desktop', 'connect');
    expect(plan.files.map((f) => roleHeading(f, plan))).toEqual(["toolgate's config", "Claude Desktop's MCP config"]);
    expect(roleHeading({ ...plan.files[0]!, role: 'hooks' }, plan)).toBe("Claude Desktop's hook settings");
    expect(reviewTitle('install_hooks', 'Cursor')).toBe("Install toolgate's hooks for Cursor");
    expect(reviewTitle('disconnect', 'Cursor')).toBe('Disconnect Cursor from toolgate');
  });

  it("reads the engine's connect time, and falls back to it as written when it is another shape", () => {
    expect(parseStamp('20261205T091502Z')?.toISOString()).toBe('2026-12-05T09:15:02.000Z');
    expect(parseStamp('yesterday')).toBeNull();
    expect(connectedWhen('20261205T091502Z', 'UTC')).toBe('5 Dec 2026, 09:15');
    expect(connectedWhen('yesterday')).toBe('yesterday');
    expect(connectedWhen(null)).toBeNull();
  });

  it('sums up an apply: what was done, the restart line, each backup and warning', () => {
    const plan = connectPlan('claude-desktop', 'connect');
    const o = outcome({ plan, backups: ['/h/a.json.bak'], warnings: ['keychain entry `x` was not deleted'] });
    expect(o.title).toBe('Claude Desktop now goes through toolgate');
    expect(o.restart).toBe(plan.restart);
    expect(o.lines).toEqual(['Backup: `/h/a.json.bak`']);
    expect(o.warnings).toHaveLength(1);
  });

  it('shows paths under HOME as ~/..., and no other', () => {
    expect(tilde('/home/ada/.cursor/mcp.json', '/home/ada')).toBe('~/.cursor/mcp.json');
    expect(tilde('/home/ada/.cursor/mcp.json', '/home/ada/')).toBe('~/.cursor/mcp.json');
    expect(tilde('/home/adam/x.json', '/home/ada')).toBe('/home/adam/x.json');
    expect(tilde('/etc/x.json', '/')).toBe('/etc/x.json');
    expect(tilde('/etc/x.json', null)).toBe('/etc/x.json');
    expect(outcome({ plan: connectPlan('cursor', 'connect'), backups: ['/home/ada/a.bak'], warnings: [] }, '/home/ada').lines).toEqual(['Backup: `~/a.bak`']);
  });

  it('moves with j/k and stops at the ends', () => {
    const { found } = partition(all);
    expect(step(found, null, 1)).toBe('claude-desktop');
    expect(step(found, null, -1)).toBe('cursor');
    expect(step(found, 'claude-desktop', 1)).toBe('claude-code');
    expect(step(found, 'cursor', 1)).toBe('cursor');
    expect(step(found, 'claude-desktop', -1)).toBe('claude-desktop');
    expect(step([], null, 1)).toBeNull();
  });
});
