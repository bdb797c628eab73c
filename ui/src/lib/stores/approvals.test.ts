import { describe, expect, it } from 'vitest';
import { ApprovalsStore } from './approvals.svelte';
import { wire } from '../../test/harness';
import { snapshot } from './test-support';
import type { EventOf } from '../api/types';

const decided = (e: Omit<EventOf<'approval_decided'>, 'type'>) => wire({ type: 'approval_decided', ...e }) as EventOf<'approval_decided'>;

describe('ApprovalsStore', () => {
  it('loads a snapshot soonest deadline first, with the engine’s caller words', () => {
    const s = new ApprovalsStore();
    s.reset(snapshot(10_000_000));
    expect(s.pending.map((p) => p.id)).toEqual([41, 42, 43]);
    expect(s.pending[0]?.caller).toBe('claude-desktop (pid 48213 via bridge pid 48230)');
    expect(s.waitingCalls.size).toBe(3);
  });

  it('moves a decided request from pending to recent with who decided', () => {
    const s = new ApprovalsStore();
    s.reset(snapshot());
    s.decided(1, decided({ id: 42, tool: 'fs_write', status: 'approved', by: 'tray' }));
    s.markMine(41);
    s.decided(2, decided({ id: 41, tool: 'shell_exec', status: 'denied', by: 'console', reason: 'no' }));
    expect(s.pending.map((p) => p.id)).toEqual([43]);
    expect(s.recent[0]).toMatchObject({ id: 41, status: 'denied', decision_reason: 'no', mine: true, decided_ms: 2 });
    expect(s.recent[1]).toMatchObject({ id: 42, status: 'approved', decided_by: 'tray', decision_reason: null, rule_id: null, mine: false });
  });

  it('adds a new request in expiry order, worded like one from the snapshot', () => {
    const s = new ApprovalsStore();
    s.reset(snapshot(10_000_000));
    const e: EventOf<'approval_requested'> = {
      type: 'approval_requested',
      id: 50,
      call_id: 1,
      tool: 'x',
      preview: 'ls -la',
      risk: 'high',
      rule: 'r',
      reason: 'why',
      caller: { via: 'socket', pid: 4, uid: 1000, exe: '/usr/bin/node', bridge_pid: null, client_name: 'c', agent_id: null, through_tool_call: false, text: 'socket c pid 4' },
      expires_ms: 10_000_000 + 1,
    };
    s.requested(5, e);
    s.requested(5, e);
    expect(s.pending.map((p) => p.id)).toEqual([50, 41, 42, 43]);
    expect(s.pending[0]).toMatchObject({ caller: 'socket c pid 4', preview: 'ls -la', created_ms: 5, status: 'pending' });
  });
});
