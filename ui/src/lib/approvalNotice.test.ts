import { describe, expect, it } from 'vitest';
import { APPROVAL_NOTE, APPROVAL_NOTE_MS, ApprovalNotice, noteFor, type Waiting } from './approvalNotice';
import type { Toast } from './toasts.svelte';

function waiting(id: number, tool = 'shell_exec', extra: Partial<Waiting> = {}): Waiting {
  return { id, tool, risk: 'high', caller: 'socket claude-code', reason: '`shell_exec` runs commands', expires_ms: 1_000 + id, ...extra };
}

function sink() {
  const shown: { toast: Toast | null; ms: number | undefined; onclose?: () => void } = { toast: null, ms: undefined };
  let upserts = 0;
  return {
    shown,
    get upserts() {
      return upserts;
    },
    upsert(t: Toast, ms: number | undefined, onclose?: () => void) {
      upserts++;
      shown.toast = t;
      shown.ms = ms;
      if (onclose) shown.onclose = onclose;
    },
    remove(key: string) {
      if (shown.toast?.key === key) shown.toast = null;
    },
  };
}

const link = (id: number | null) => `#/approvals${id === null ? '' : `?id=${id}`}`;

describe('the approval note', () => {
  it('is never raised while Approvals is showing', () => {
    const s = sink();
    const n = new ApprovalNotice(s, link);
    const pending = [1, 2, 3, 4].map((i) => waiting(i));
    for (const p of pending) {
      n.arrived(p.id, true, true);
      n.sync(pending, true);
    }
    expect(s.upserts).toBe(0);
    expect(s.shown.toast).toBeNull();
  });

  it('is one note for four requests, updated in place, that closes when they end', () => {
    const s = sink();
    const n = new ApprovalNotice(s, link);
    let pending: Waiting[] = [];
    for (const [i, tool] of [[1, 'shell_exec'], [2, 'shell_exec'], [3, 'write_file'], [4, 'shell_exec']] as const) {
      pending = [...pending, waiting(i, tool, { caller: i === 3 ? 'socket cursor' : 'socket claude-code' })];
      n.arrived(i, false, true);
      n.sync(pending, false);
    }
    expect(s.shown.toast).toMatchObject({
      key: APPROVAL_NOTE,
      title: '4 calls need a decision',
      body: '`shell_exec` ×3, `write_file` · from 2 callers',
      action: { label: 'Review', href: '#/approvals?id=1' },
    });
    expect(s.shown.ms).toBe(APPROVAL_NOTE_MS);
    // One ends elsewhere: the count follows, the time left is not renewed.
    pending = pending.filter((p) => p.id !== 1);
    n.sync(pending, false);
    expect(s.shown.toast?.title).toBe('3 calls need a decision');
    expect(s.shown.toast?.action?.href).toBe('#/approvals?id=2');
    expect(s.shown.ms).toBeUndefined();
    pending = pending.filter((p) => p.id === 3);
    n.sync(pending, false);
    expect(s.shown.toast).toMatchObject({ title: 'write_file needs a decision', body: 'socket cursor · `shell_exec` runs commands', action: { href: '#/approvals?id=3' } });
    n.sync([], false);
    expect(s.shown.toast).toBeNull();
    expect(n.size).toBe(0);
  });

  it('closes on going to Approvals, and the next arrival starts afresh', () => {
    const s = sink();
    const n = new ApprovalNotice(s, link);
    const pending = [waiting(1), waiting(2)];
    n.arrived(1, false, true);
    n.arrived(2, false, true);
    n.sync(pending, false);
    expect(s.shown.toast?.title).toBe('2 calls need a decision');
    n.sync(pending, true);
    expect(s.shown.toast).toBeNull();
    n.sync(pending, false);
    expect(s.shown.toast).toBeNull();
    n.arrived(3, false, true);
    n.sync([...pending, waiting(3, 'fs_write')], false);
    expect(s.shown.toast?.title).toBe('fs_write needs a decision');
  });

  it('is about nothing once dismissed', () => {
    const s = sink();
    const n = new ApprovalNotice(s, link);
    n.arrived(1, false, true);
    n.sync([waiting(1)], false);
    s.shown.onclose?.();
    expect(n.size).toBe(0);
  });

  it('stays quiet with notifications off', () => {
    const s = sink();
    const n = new ApprovalNotice(s, link);
    n.arrived(1, false, false);
    n.sync([waiting(1)], false);
    expect(s.shown.toast).toBeNull();
  });

  it('takes the tone of the worst risk and names at most three tools', () => {
    const t = noteFor(
      [waiting(1, 'a'), waiting(2, 'b', { risk: 'critical' }), waiting(3, 'c'), waiting(4, 'd'), waiting(5, 'e')],
      link,
    );
    expect(t.tone).toBe('danger');
    expect(t.body).toBe('`a`, `b`, `c`, 2 more · from socket claude-code');
  });
});
