import { describe, expect, it } from 'vitest';
import { BreakersStore } from './breakers.svelte';
import { snapshot } from './test-support';

describe('BreakersStore', () => {
  it('follows transitions, with the probe time of an open breaker', () => {
    const s = new BreakersStore();
    s.reset(snapshot(), 0);
    s.transition(1_000, 'fs_read', 'open');
    s.transition(1_000, 'web__fetch', 'closed');
    expect(s.list.find((b) => b.tool === 'fs_read')?.state).toBe('open');
    expect(s.probeAt['fs_read']).toBe(31_000);
    expect(s.list.find((b) => b.tool === 'web__fetch')).toMatchObject({ state: 'closed', failures: 0 });
    expect(s.probeAt['web__fetch']).toBeUndefined();
    expect(s.open).toBe(1);
  });

  it('counts only tool failures, refusals and cancellations are neutral', () => {
    const s = new BreakersStore();
    s.reset(snapshot(), 0);
    const before = { ...s.list.find((b) => b.tool === 'shell_exec') };
    s.called(1, 'shell_exec', { status: 'err', kind: 'denied', message: 'no', counts_as_failure: false });
    s.called(1, 'shell_exec', { status: 'cancelled', reason: 'client_disconnected' });
    s.called(2, 'shell_exec', { status: 'err', kind: 'connection', message: 'reset', counts_as_failure: true });
    const after = s.list.find((b) => b.tool === 'shell_exec');
    expect(after?.failures).toBe((before.failures ?? 0) + 1);
    expect(after?.calls).toBe((before.calls ?? 0) + 1);
    expect(after?.last_error).toEqual({ kind: 'connection', message: 'reset', at_ms: 2 });
  });

  it("counts a hooked agent tool's calls, which its events name as people see it", () => {
    const s = new BreakersStore();
    s.reset(snapshot(), 0);
    s.transition(1_000, 'claude-code__Bash', 'closed', 'Claude Code · Bash');
    s.called(2_000, 'Claude Code · Bash', { status: 'err', kind: 'tool_failed', message: 'exit 1', counts_as_failure: true });
    const b = s.list.find((x) => x.tool === 'claude-code__Bash');
    expect(b).toMatchObject({ shown_as: 'Claude Code · Bash', failures: 1, calls: 1 });
    expect(s.list.find((x) => x.tool === 'Claude Code · Bash')).toBeUndefined();
  });
});
