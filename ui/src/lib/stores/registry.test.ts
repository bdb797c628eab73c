import { describe, expect, it } from 'vitest';
import { RegistryStore } from './registry.svelte';
import { ServersStore } from './servers.svelte';
import { wire } from '../../test/harness';
import type { EventOf } from '../api/types';
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
