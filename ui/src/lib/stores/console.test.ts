import { describe, expect, it } from 'vitest';
import { ConsoleStore } from './console.svelte';
import type { Envelope, Event } from '../api/types';
import { envelopes, snapshot as demoSnapshot } from '../../dev/fixtures';

/** The demo's snapshot without calls in flight (most tests count finished rows). */
const snapshot = (...a: Parameters<typeof demoSnapshot>) => ({ ...demoSnapshot(...a), in_flight: [] });
import { wire } from '../../test/harness';

function manual() {
  const pending: (() => void)[] = [];
  return {
    schedule: (fn: () => void) => pending.push(fn),
    run: () => pending.splice(0).forEach((f) => f()),
    get count() {
      return pending.length;
    },
  };
}

let seq = 1000;
const env = (event: Event, ts_ms = 5_000_000): Envelope => ({ seq: ++seq, ts_ms, event });

describe('ConsoleStore', () => {
  it('reads a slice again when the stream says it changed, whatever changed it', async () => {
    const m = manual();
    const asked: string[] = [];
    const s: ConsoleStore = new ConsoleStore({
      schedule: m.schedule,
      fetchSlice: (slice) => {
        asked.push(slice);
        const tools = s.tools.map((t) => (t.name === 'fs_write' ? { ...t, state: 'denied' as const, denied_by: 'matches deny pattern `fs_write`' } : t));
        return Promise.resolve({ slice: 'tools', revision: 7, tools, quarantined: [] });
      },
    });
    s.reset(snapshot(), 'initial');
    expect(s.tools.find((t) => t.name === 'fs_write')?.state).toBe('active');
    s.push(env({ type: 'state_changed', slice: 'tools', revision: 7 }));
    m.run();
    await new Promise((r) => setTimeout(r, 0));
    expect(asked).toEqual(['tools']);
    expect(s.tools.find((t) => t.name === 'fs_write')?.state).toBe('denied');
    expect(s.quarantined).toEqual([]);
  });

  it('loads a snapshot: approvals soonest first, recent calls in time order, counters', () => {
    const s = new ConsoleStore({ schedule: manual().schedule, now: () => 1 });
    const snap = snapshot(10_000_000);
    s.reset(snap, 'initial');
    expect(s.loaded).toBe(true);
    expect(s.pending.map((p) => p.id)).toEqual([41, 42, 43]);
    expect(s.pending[0]?.caller).toBe('socket claude-desktop pid 48213 via bridge pid 48230');
    expect(s.liveSize).toBe(500);
    const ts = s.live.toArray().map((r) => r.ts_ms);
    expect(ts).toEqual([...ts].sort((a, b) => a - b));
    expect(s.counters).toEqual({ pending: 3, open_breakers: 1, quarantined: 1, servers_down: 2 });
    expect(s.reloaded).toBeNull();
  });

  it('batches envelopes into one flush per frame', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset(snapshot(), 'initial');
    const v0 = s.liveVersion;
    for (const e of envelopes(0, 1_000, 50)) s.push(e);
    expect(m.count).toBe(1);
    expect(s.queued).toBe(100);
    expect(s.liveSize).toBe(500);
    m.run();
    expect(s.queued).toBe(0);
    expect(s.liveSize).toBe(550);
    expect(s.liveVersion).toBe(v0 + 1);
    // The next push schedules the next frame.
    s.push(env({ type: 'policy_reloaded', version: 9 }));
    expect(m.count).toBe(1);
  });

  it('joins call_received and call_finished into one row, in order', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset({ ...snapshot(), recent_calls: [] }, 'initial');
    s.push(env({ type: 'call_received', call_id: 7, tool: 'fs_read', caller: 'cursor', session: 's' }, 100));
    m.run();
    expect(s.live.last()).toMatchObject({ call_id: 7, outcome: 'running', elapsed_us: null });
    s.push(env({ type: 'call_finished', call_id: 7, tool: 'fs_read', elapsed: 840, outcome: { status: 'err', kind: 'timeout', message: 'slow', counts_as_failure: true } }, 101));
    m.run();
    expect(s.liveSize).toBe(1);
    expect(s.liveRow(7)).toMatchObject({ outcome: 'error' });
    expect(s.liveRow(8)).toBeNull();
    expect(s.live.last()).toMatchObject({ outcome: 'error', error_kind: 'timeout', error_message: 'slow', elapsed_us: 840 });
    expect(s.callsFailed).toBe(snapshot().counters.calls_failed + 1);
  });

  it('keeps a bounded ring of live rows', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, capacity: 100 });
    s.reset(snapshot(), 'initial');
    expect(s.liveSize).toBe(100);
    for (const e of envelopes(0, 9_000_000_000_000, 250)) s.push(e);
    m.run();
    expect(s.liveSize).toBe(100);
    expect(s.live.dropped).toBe(650);
    // A finish whose row was evicted does not resurrect stale index entries.
    expect(s.live.toArray().every((r) => r.outcome !== 'running')).toBe(true);
  });

  it('moves a decided request from pending to recent with who decided', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset(snapshot(), 'initial');
    s.push(env(wire({ type: 'approval_decided', id: 42, tool: 'fs_write', status: 'approved', by: 'tray' })));
    s.markMine(41);
    s.push(env(wire({ type: 'approval_decided', id: 41, tool: 'shell_exec', status: 'denied', by: 'console', reason: 'no' })));
    m.run();
    expect(s.pending.map((p) => p.id)).toEqual([43]);
    expect(s.recent[0]).toMatchObject({ id: 41, status: 'denied', decision_reason: 'no', mine: true });
    expect(s.recent[1]).toMatchObject({ id: 42, status: 'approved', decided_by: 'tray', decision_reason: null, rule_id: null, mine: false });
    expect(s.counters.pending).toBe(1);
  });

  it('adds a new request in expiry order and tells listeners after applying', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    const snap = snapshot(10_000_000);
    s.reset(snap, 'initial');
    const seen: string[] = [];
    s.onEvent((e) => seen.push(`${e.event.type}:${s.pending.length}`));
    s.push(
      env({ type: 'approval_requested', id: 50, call_id: 1, tool: 'x', risk: 'high', rule: 'r', reason: 'why', caller: { via: 'socket', pid: 4, uid: 1000, exe: '/usr/bin/node', bridge_pid: null, client_name: 'c', agent_id: null, text: 'socket c pid 4' }, expires_ms: 10_000_000 + 1 }),
    );
    m.run();
    expect(s.pending.map((p) => p.id)).toEqual([50, 41, 42, 43]);
    // Worded like a request from the snapshot, not the engine's raw text.
    expect(s.pending[0]?.caller).toBe('socket c pid 4');
    expect(seen).toEqual(['approval_requested:4']);
  });

  it('follows breakers, servers and quarantine', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, now: () => 0 });
    s.reset(snapshot(), 'initial');
    s.push(env({ type: 'breaker_transition', tool: 'fs_read', from: 'closed', to: 'open' }, 1_000));
    s.push(env({ type: 'breaker_transition', tool: 'web__fetch', from: 'half_open', to: 'closed' }, 1_000));
    s.push(env(wire({ type: 'server_status', server: 'web', state: 'ready', tools: 2 })));
    s.push(env({ type: 'tool_quarantined', server: 'db', tool: 'db__list_tables', reason: 'changed', flags: [] }));
    m.run();
    expect(s.breakers.find((b) => b.tool === 'fs_read')?.state).toBe('open');
    expect(s.probeAt['fs_read']).toBe(31_000);
    expect(s.breakers.find((b) => b.tool === 'web__fetch')).toMatchObject({ state: 'closed', failures: 0 });
    expect(s.servers.find((x) => x.server === 'web')).toMatchObject({ state: 'ready', last_error: null });
    expect(s.tools.find((t) => t.name === 'db__list_tables')?.state).toBe('quarantined');
    expect(s.counters).toMatchObject({ open_breakers: 1, servers_down: 1, quarantined: 2 });
  });

  it('counts only tool failures against a breaker, refusals are neutral', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, now: () => 0 });
    s.reset(snapshot(), 'initial');
    const before = s.breakers.find((b) => b.tool === 'shell_exec');
    const f0 = before?.failures ?? 0;
    const c0 = before?.calls ?? 0;
    s.push(env({ type: 'call_finished', call_id: 1, tool: 'shell_exec', elapsed: 1, outcome: { status: 'err', kind: 'denied', message: 'no', counts_as_failure: false } }, 1));
    s.push(env({ type: 'call_finished', call_id: 2, tool: 'shell_exec', elapsed: 1, outcome: { status: 'err', kind: 'connection', message: 'reset', counts_as_failure: true } }, 2));
    m.run();
    const after = s.breakers.find((b) => b.tool === 'shell_exec');
    expect(after?.failures).toBe(f0 + 1);
    expect(after?.calls).toBe(c0 + 1);
    expect(after?.last_error).toEqual({ kind: 'connection', message: 'reset', at_ms: 2 });
  });

  it('records a cancelled call as the audit log does, neutral for its breaker and not failed', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, now: () => 0 });
    s.reset({ ...snapshot(), recent_calls: [] }, 'initial');
    const failed0 = s.callsFailed;
    const b0 = { ...s.breakers.find((b) => b.tool === 'shell_exec') };
    s.push(env({ type: 'call_received', call_id: 9, tool: 'shell_exec', caller: 'cursor', session: 's' }, 1));
    s.push(env({ type: 'call_finished', call_id: 9, tool: 'shell_exec', elapsed: 5, outcome: { status: 'cancelled', reason: 'client_disconnected' } }, 2));
    m.run();
    expect(s.liveRow(9)).toMatchObject({ outcome: 'cancelled', error_kind: 'cancelled', error_message: 'The client disconnected' });
    expect(s.callsFailed).toBe(failed0);
    expect(s.breakers.find((b) => b.tool === 'shell_exec')).toMatchObject({ failures: b0?.failures, calls: b0?.calls });
  });

  it('keeps the retries of a call for its detail view', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset(snapshot(), 'initial');
    s.push(env({ type: 'call_retry', call_id: 77, attempt: 1, kind: 'timeout', backoff: 200_000 }));
    s.push(env({ type: 'call_retry', call_id: 77, attempt: 2, kind: 'connection', backoff: 400_000 }));
    m.run();
    expect(s.retriesOf(77).map((r) => [r.attempt, r.kind])).toEqual([
      [1, 'timeout'],
      [2, 'connection'],
    ]);
    expect(s.retriesOf(78)).toEqual([]);
  });

  it('says why it reloaded, and drops what was queued before the snapshot', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule, now: () => 42 });
    s.reset(snapshot(), 'initial');
    s.push(env(wire({ type: 'approval_decided', id: 41, tool: 'shell_exec', status: 'approved' })));
    s.reset(snapshot(), 'behind');
    m.run();
    expect(s.reloaded).toEqual({ at_ms: 42, why: 'behind' });
    expect(s.pending.some((p) => p.id === 41)).toBe(true);
    // The ring keeps its rows across a reload (no duplicates from the snapshot).
    expect(s.liveSize).toBe(500);
  });

  it('is stale while the stream is not live', () => {
    const s = new ConsoleStore({ schedule: manual().schedule });
    expect(s.stale).toBe(false);
    s.reset(snapshot(), 'initial');
    s.status({ kind: 'retrying', attempt: 1, retry_at_ms: 1, reason: 'down' });
    expect(s.stale).toBe(true);
    s.status({ kind: 'live' });
    expect(s.stale).toBe(false);
  });

  it('shows the calls in flight at a snapshot as running, and finishes them from the stream', () => {
    const m = manual();
    const s = new ConsoleStore({ schedule: m.schedule });
    s.reset({ ...demoSnapshot(10_000_000), recent_calls: [], in_flight: [{ call_id: 900, ts_ms: 9_999_000, tool: 'shell_exec', caller: 'socket cursor pid 4', session: 's' }] }, 'initial');
    expect(s.liveRow(900)).toMatchObject({ outcome: 'running', tool: 'shell_exec', caller: 'socket cursor pid 4' });
    s.push(env({ type: 'call_finished', call_id: 900, tool: 'shell_exec', outcome: { status: 'ok', is_error: false, size: 2 }, elapsed: 1500 }));
    m.run();
    expect(s.liveRow(900)?.outcome).toBe('ok');
  });
});
