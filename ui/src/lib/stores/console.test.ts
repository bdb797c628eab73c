import { describe, expect, it } from 'vitest';
import { ConsoleStore } from './console.svelte';
import { envelopes } from '../../dev/fixtures';
import { wire } from '../../test/harness';
import { env, manual, snapshot } from './test-support';

describe('ConsoleStore', () => {
  it('reads a slice again when the stream says it changed, whatever changed it', async () => {
    const m = manual();
    const asked: string[] = [];
    const s: ConsoleStore = new ConsoleStore({
      schedule: m.schedule,
      fetchSlice: (slice) => {
        asked.push(slice);
        const tools = s.registry.tools.map((t) => (t.name === 'fs_write' ? { ...t, state: 'denied' as const, denied_by: 'matches deny pattern `fs_write`' } : t));
        return Promise.resolve({ slice: 'tools', revision: 7, tools, quarantined: [], clients: [] });
      },
    });
    s.reset(snapshot(), 'initial');
    expect(s.registry.tools.find((t) => t.name === 'fs_write')?.state).toBe('active');
    s.push(env({ type: 'state_changed', slice: 'tools', revision: 7 }));
    m.run();
    await new Promise((r) => setTimeout(r, 0));
    expect(asked).toEqual(['tools']);
    expect(s.registry.tools.find((t) => t.name === 'fs_write')?.state).toBe('denied');
    expect(s.registry.quarantined).toEqual([]);
  });

  it('applies a snapshot to every domain, and counts from each', () => {
    const s = new ConsoleStore({ schedule: manual().schedule, now: () => 1 });
    s.reset(snapshot(10_000_000), 'initial');
    expect(s.loaded).toBe(true);
    expect(s.approvals.pending.map((p) => p.id)).toEqual([41, 42, 43]);
    expect(s.live.size).toBe(500);
    expect(s.connection.engine).not.toBeNull();
    expect(s.policy.summary).not.toBeNull();
    expect(s.counters).toEqual({ pending: 3, open_breakers: 1, quarantined: 1, servers_down: 2 });
    expect(s.connection.reloaded).toBeNull();
  });

  it('batches envelopes into one flush per frame', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset(snapshot(), 'initial');
    const v0 = s.live.version;
    for (const e of envelopes(0, 1_000, 50)) s.push(e);
    expect(m.count).toBe(1);
    expect(s.queued).toBe(100);
    expect(s.live.size).toBe(500);
    m.run();
    expect(s.queued).toBe(0);
    expect(s.live.size).toBe(550);
    expect(s.live.version).toBe(v0 + 1);
    // The next push schedules the next frame.
    s.push(env({ type: 'policy_reloaded', version: 9 }));
    expect(m.count).toBe(1);
  });

  it('routes each event to the domain that owns it (a finished call reaches the feed and the breaker)', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, now: () => 0 });
    s.reset({ ...snapshot(), recent_calls: [] }, 'initial');
    const before = s.breakers.list.find((b) => b.tool === 'shell_exec');
    const f0 = before?.failures ?? 0;
    const total0 = s.live.callsTotal;
    s.push(env({ type: 'call_received', call_id: 7, tool: 'shell_exec', caller: 'cursor', session: 's', preview: 'ls' }, 1));
    s.push(env({ type: 'call_finished', call_id: 7, tool: 'shell_exec', elapsed: 840, outcome: { status: 'err', kind: 'timeout', message: 'slow', counts_as_failure: true } }, 2));
    s.push(env({ type: 'breaker_transition', tool: 'fs_read', shown_as: null, from: 'closed', to: 'open' }, 1_000));
    s.push(env({ type: 'breaker_transition', tool: 'web__fetch', shown_as: null, from: 'half_open', to: 'closed' }, 1_000));
    s.push(env(wire({ type: 'server_status', server: 'web', state: 'ready', tools: 2 })));
    s.push(env({ type: 'tool_quarantined', server: 'db', tool: 'db__list_tables', reason: 'changed', flags: [] }));
    s.push(env({ type: 'approval_rule_changed', rule_id: 3, change: 'added', effect: 'allow', scope: 'shell_exec' }));
    const r0 = s.policy.rulesVersion;
    m.run();
    expect(s.live.row(7)).toMatchObject({ outcome: 'error', error_kind: 'timeout' });
    expect(s.live.callsTotal).toBe(total0 + 1);
    expect(s.breakers.list.find((b) => b.tool === 'shell_exec')?.failures).toBe(f0 + 1);
    expect(s.counters).toMatchObject({ open_breakers: 1, servers_down: 1, quarantined: 2 });
    expect(s.policy.rulesVersion).toBe(r0 + 1);
  });

  it('tells listeners after applying', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset(snapshot(10_000_000), 'initial');
    const seen: string[] = [];
    s.onEvent((e) => seen.push(`${e.event.type}:${s.approvals.pending.length}`));
    s.push(env(wire({ type: 'approval_decided', id: 41, tool: 'shell_exec', status: 'approved' })));
    m.run();
    expect(seen).toEqual(['approval_decided:2']);
  });

  it('says why it reloaded, and drops what was queued before the snapshot', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, now: () => 42 });
    s.reset(snapshot(), 'initial');
    s.push(env(wire({ type: 'approval_decided', id: 41, tool: 'shell_exec', status: 'approved' })));
    s.reset(snapshot(), 'behind');
    m.run();
    expect(s.connection.reloaded).toEqual({ at_ms: 42, why: 'behind' });
    expect(s.approvals.pending.some((p) => p.id === 41)).toBe(true);
    // The ring keeps its rows across a reload (no duplicates from the snapshot).
    expect(s.live.size).toBe(500);
  });

  it('is stale while the stream is not live', () => {
    const s = new ConsoleStore({ schedule: manual().schedule });
    expect(s.stale).toBe(false);
    s.reset(snapshot(), 'initial');
    s.status({ kind: 'retrying', attempt: 1, retry_at_ms: 1, since_ms: 0, reason: 'down' });
    expect(s.stale).toBe(true);
    s.status({ kind: 'live' });
    expect(s.stale).toBe(false);
  });

  it('closes a breaker reset from this window at once', () => {
    const s = new ConsoleStore({ schedule: manual().schedule, now: () => 0 });
    s.reset(snapshot(), 'initial');
    const open = s.breakers.list.find((b) => b.state === 'open');
    expect(open).toBeDefined();
    s.breakerReset(open?.tool ?? '');
    expect(s.breakers.list.find((b) => b.tool === open?.tool)).toMatchObject({ state: 'closed', failures: 0 });
    expect(s.counters.open_breakers).toBe(0);
  });
});
