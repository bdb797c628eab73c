import { describe, expect, it } from 'vitest';
import { RegistryStore } from './registry.svelte';
import { ServersStore } from './servers.svelte';
import { wire } from '../../test/harness';
import type { ClientView, EventOf } from '../api/types';
import { snapshot } from './test-support';

describe('RegistryStore', () => {
  it('quarantines a tool, and a re-registration releases it', () => {
    const s = new RegistryStore();
    s.reset(snapshot());
    const q0 = s.quarantined.length;
    s.quarantine(7, { type: 'tool_quarantined', server: 'db', tool: 'db__list_tables', reason: 'changed', flags: [] });
    expect(s.tools.find((t) => t.name === 'db__list_tables')?.state).toBe('quarantined');
    expect(s.quarantined.find((q) => q.name === 'db__list_tables')).toMatchObject({ server: 'db', tool: 'list_tables', pending_since_ms: 7 });
    expect(s.quarantined.length).toBe(q0 + 1);
    s.seen('db__list_tables', 'db');
    expect(s.tools.find((t) => t.name === 'db__list_tables')?.state).toBe('active');
    expect(s.quarantined.length).toBe(q0);
  });

  it('adds an unknown tool and drops an unregistered one', () => {
    const s = new RegistryStore();
    s.reset(snapshot());
    s.seen('new_tool', 'builtin');
    expect(s.tools.find((t) => t.name === 'new_tool')).toMatchObject({ trust: 'builtin', state: 'active' });
    s.unregistered('new_tool');
    expect(s.tools.some((t) => t.name === 'new_tool')).toBe(false);
  });

  it('shows a client’s new plan at once, replacing its old one or adding it in name order', () => {
    const s = new RegistryStore();
    const view = (client: string, mode: 'auto' | 'on' | 'off', chosen: 'auto' | 'on' | 'off' | null): ClientView => ({
      client,
      connected: true,
      mode,
      chosen,
      window: 200_000,
      threshold: 20_000,
      deferring: mode === 'on',
      listed: [],
      listed_tokens: 0,
      deferred: [],
      deferred_tokens: 0,
      words: '',
    });
    s.set([], [], [view('cursor', 'auto', null), view('zed', 'auto', null)]);
    s.clientChanged(view('cursor', 'off', 'off'));
    expect(s.clients.map((c) => [c.client, c.mode, c.chosen])).toEqual([
      ['cursor', 'off', 'off'],
      ['zed', 'auto', null],
    ]);
    s.clientChanged(view('claude-code', 'on', 'on'));
    expect(s.clients.map((c) => c.client)).toEqual(['claude-code', 'cursor', 'zed']);
  });

  it('shows a pinned tool’s row and every client’s plan as the engine answered', () => {
    const s = new RegistryStore();
    s.reset(snapshot());
    const row = s.tools.find((t) => t.source !== 'builtin' && t.core === null);
    if (!row) throw new Error('the snapshot has a deferrable tool');
    const core = { reason: { kind: 'pinned' as const }, pinned: true, words: 'Pinned as core by a person.' };
    const clients = s.clients.map((c) => ({ ...c, listed: [...c.listed, row.name] }));
    s.corePinned({ tool: row.name, pinned: true, changed: true, summary: { ...row, core, deferred_for: [] }, clients });
    expect(s.tools.find((t) => t.name === row.name)?.core).toEqual(core);
    expect(s.clients.every((c) => c.listed.includes(row.name))).toBe(true);
    // A pin ahead of its server: no row to change, the plans still follow.
    s.corePinned({ tool: 'down__tool', pinned: true, changed: true, summary: null, clients: [] });
    expect(s.tools.some((t) => t.name === 'down__tool')).toBe(false);
    expect(s.clients).toEqual([]);
  });
});

describe('ServersStore', () => {
  it('follows a server’s state; ready clears its error', () => {
    const s = new ServersStore();
    s.reset(snapshot());
    const down0 = s.down;
    s.status(wire({ type: 'server_status', server: 'web', state: 'ready', tools: 2 }) as EventOf<'server_status'>);
    expect(s.list.find((x) => x.server === 'web')).toMatchObject({ state: 'ready', last_error: null });
    expect(s.down).toBe(down0 - 1);
  });
});
