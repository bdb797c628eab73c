import { describe, expect, it } from 'vitest';
import { LiveStore } from './live.svelte';
import type { EventOf } from '../api/types';
import { demoSnapshot, snapshot } from './test-support';

const received = (call_id: number, tool = 'fs_read'): EventOf<'call_received'> => ({ type: 'call_received', call_id, tool, caller: 'cursor', session: 's', preview: 'a.txt' });
const finished = (call_id: number, outcome: EventOf<'call_finished'>['outcome'], tool = 'fs_read', elapsed = 840): EventOf<'call_finished'> => ({
  type: 'call_finished',
  call_id,
  tool,
  elapsed,
  outcome,
});

describe('LiveStore', () => {
  it('loads the snapshot’s calls in time order, with its counters', () => {
    const s = new LiveStore();
    const snap = snapshot(10_000_000);
    s.reset(snap);
    expect(s.size).toBe(500);
    const ts = s.rows.toArray().map((r) => r.ts_ms);
    expect(ts).toEqual([...ts].sort((a, b) => a - b));
    expect(s.callsTotal).toBe(snap.counters.calls_total);
  });

  it('joins call_received and call_finished into one row', () => {
    const s = new LiveStore();
    s.reset({ ...snapshot(), recent_calls: [] });
    const failed0 = s.callsFailed;
    s.received(100, received(7));
    expect(s.rows.last()).toMatchObject({ call_id: 7, outcome: 'running', elapsed_us: null });
    s.finished(101, finished(7, { status: 'err', kind: 'timeout', message: 'slow', counts_as_failure: true }));
    expect(s.size).toBe(1);
    expect(s.row(7)).toMatchObject({ outcome: 'error', error_kind: 'timeout', error_message: 'slow', elapsed_us: 840 });
    expect(s.row(8)).toBeNull();
    expect(s.callsFailed).toBe(failed0 + 1);
  });

  it('keeps a bounded ring of rows', () => {
    const s = new LiveStore(100);
    s.reset(snapshot());
    expect(s.size).toBe(100);
    for (let i = 0; i < 250; i++) {
      s.received(9_000_000_000_000 + i, received(100_000 + i));
      s.finished(9_000_000_000_000 + i, finished(100_000 + i, { status: 'ok', is_error: false, size: 1 }));
    }
    expect(s.size).toBe(100);
    expect(s.rows.dropped).toBe(650);
    // A finish whose row was evicted does not resurrect stale index entries.
    expect(s.rows.toArray().every((r) => r.outcome !== 'running')).toBe(true);
  });

  it('records a cancelled call as the audit log does, and not as failed', () => {
    const s = new LiveStore();
    s.reset({ ...snapshot(), recent_calls: [] });
    const failed0 = s.callsFailed;
    s.received(1, received(9, 'shell_exec'));
    s.finished(2, finished(9, { status: 'cancelled', reason: 'client_disconnected' }, 'shell_exec', 5));
    expect(s.row(9)).toMatchObject({ outcome: 'cancelled', error_kind: 'cancelled', error_message: 'The client disconnected' });
    expect(s.callsFailed).toBe(failed0);
  });

  it('keeps the retries of a call for its detail view', () => {
    const s = new LiveStore();
    s.retried({ type: 'call_retry', call_id: 77, attempt: 1, kind: 'timeout', backoff: 200_000 });
    s.retried({ type: 'call_retry', call_id: 77, attempt: 2, kind: 'connection', backoff: 400_000 });
    expect(s.retriesOf(77).map((r) => [r.attempt, r.kind])).toEqual([
      [1, 'timeout'],
      [2, 'connection'],
    ]);
    expect(s.retriesOf(78)).toEqual([]);
  });

  it('shows the calls in flight at a snapshot as running, and finishes them', () => {
    const s = new LiveStore();
    s.reset({ ...demoSnapshot(10_000_000), recent_calls: [], in_flight: [{ call_id: 900, ts_ms: 9_999_000, tool: 'shell_exec', caller: 'cursor (pid 4)', session: 's', preview: 'ls' }] });
    expect(s.row(900)).toMatchObject({ outcome: 'running', tool: 'shell_exec', caller: 'cursor (pid 4)', preview: 'ls' });
    s.finished(10_000_000, finished(900, { status: 'ok', is_error: false, size: 2 }, 'shell_exec', 1500));
    expect(s.row(900)?.outcome).toBe('ok');
  });

  it('takes a reload’s newer state for a row it holds as running, without duplicating it', () => {
    const s = new LiveStore();
    const base = { ...demoSnapshot(10_000_000), recent_calls: [] };
    s.reset({ ...base, in_flight: [{ call_id: 900, ts_ms: 9_999_000, tool: 'shell_exec', caller: 'c', session: 's', preview: 'ls' }] });
    const done = { ...demoSnapshot(10_000_000).recent_calls[0]!, call_id: 900, ts_ms: 9_999_000, outcome: 'ok' as const };
    s.reset({ ...base, recent_calls: [done], in_flight: [] });
    expect(s.size).toBe(1);
    expect(s.row(900)?.outcome).toBe('ok');
  });
});
