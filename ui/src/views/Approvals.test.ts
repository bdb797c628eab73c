import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import Approvals from './Approvals.svelte';
import { controller } from '../lib/controller.svelte';
import { emptySnapshot, snapshot, teamView } from '../dev/fixtures';
import { fakeEngine, testStore, wire } from '../test/harness';
import type { ApprovalDetail, DecidedView, TeamOutcome } from '../lib/api/types';

const NOW = Date.now();

function engine() {
  const snap = snapshot(NOW);
  return fakeEngine((c) => {
    const m = /^\/api\/approvals\/(\d+)$/.exec(c.path);
    if (m) {
      const request = [...snap.pending, ...snap.recent_approvals].find((r) => r.id === Number(m[1]));
      return { request, caller_recent: snap.recent_calls.slice(0, 3) } satisfies Partial<ApprovalDetail>;
    }
    if (c.path.endsWith('/approve') || c.path.endsWith('/deny')) return { request: snap.pending[0], rule: null, decided_by: 'console' } satisfies Partial<DecidedView>;
    return {};
  });
}

describe('Approvals', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['performance', 'Date', 'setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('says so when nothing waits', () => {
    fakeEngine();
    const t = testStore();
    t.store.reset(emptySnapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    expect(screen.getByText('No calls waiting.')).toBeInTheDocument();
    expect(screen.getByText('Calls that need a person appear here and as a notification.')).toBeInTheDocument();
  });

  it('lists waiting requests soonest first with risk words, and shows the selected one in words', async () => {
    engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    const waiting = screen.getByRole('listbox', { name: 'Waiting approval requests' });
    const options = within(waiting).getAllByRole('option');
    expect(options.map((o) => o.getAttribute('data-id'))).toEqual(['41', '42', '43']);
    expect(within(options[0] as HTMLElement).getByText('Critical')).toBeInTheDocument();
    expect(options[0]).toHaveAttribute('aria-selected', 'true');
    const detail = screen.getByRole('region', { name: 'Request detail' });
    expect(within(detail).getByText(/cannot be undone/)).toBeInTheDocument();
    expect(within(detail).getByText('default:shell-rm-recursive')).toBeInTheDocument();
    expect(within(detail).getAllByRole('timer')[0]).toHaveAccessibleName(/Denied automatically in/);
    // Arguments arrive from GET /api/approvals/41.
    await waitFor(() => expect(within(detail).getByRole('region', { name: 'Arguments of request 41' })).toHaveTextContent('rm -rf build/'));
  });

  it('each card shows its arguments in one line, and so do the caller\'s recent calls', async () => {
    engine();
    const t = testStore();
    const snap = snapshot(NOW);
    t.store.reset(snap, 'initial');
    render(Approvals, { context: t.context });
    const waiting = screen.getByRole('listbox', { name: 'Waiting approval requests' });
    const first = within(waiting).getAllByRole('option')[0] as HTMLElement;
    const preview = snap.pending[0]?.preview ?? '';
    expect(preview).not.toBe('');
    const line = within(first).getByText(preview);
    expect(line).toHaveAttribute('title', preview);
    expect(within(first).getByRole('button')).toHaveAccessibleName(new RegExp(`: ${preview.slice(0, 10)}`));
    const detail = screen.getByRole('region', { name: 'Request detail' });
    const recent = snap.recent_calls[0]?.preview ?? '';
    await waitFor(() => expect(within(detail).getAllByTitle(recent).length).toBeGreaterThan(0));
    expect(within(detail).getByRole('columnheader', { name: 'Arguments' })).toBeInTheDocument();
  });

  it('approves once with a click', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    await fireEvent.click(screen.getByRole('button', { name: /Approve once/ }));
    await waitFor(() => expect(calls.some((c) => c.method === 'POST' && c.path === '/api/approvals/41/approve')).toBe(true));
    // Exactly ApproveInput: "once" is an empty body (the engine refuses unknown fields).
    expect(calls.find((c) => c.path === '/api/approvals/41/approve')?.body).toEqual({});
  });

  it('holds the a key for 400 ms after the selection changes', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    await act(() => controller.dispatch({ type: 'move', delta: 1 }));
    expect(screen.getAllByRole('option')[1]).toHaveAttribute('aria-selected', 'true');
    await act(() => controller.dispatch({ type: 'approve' }));
    expect(calls.filter((c) => c.path.endsWith('/approve'))).toEqual([]);
    expect(screen.getByText(/Held a moment/)).toBeInTheDocument();
    vi.advanceTimersByTime(400);
    await act(() => controller.dispatch({ type: 'approve' }));
    await waitFor(() => expect(calls.filter((c) => c.path.endsWith('/approve')).map((c) => c.path)).toEqual(['/api/approvals/42/approve']));
  });

  it('denies with a reason: d focuses the box, Enter sends', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    vi.advanceTimersByTime(500);
    await act(() => controller.dispatch({ type: 'deny' }));
    const box = screen.getByLabelText('Reason for the agent (optional)');
    await waitFor(() => expect(box).toHaveFocus());
    await fireEvent.input(box, { target: { value: 'open a branch first' } });
    await fireEvent.keyDown(box, { key: 'Enter' });
    await waitFor(() =>
      expect(calls.find((c) => c.path === '/api/approvals/41/deny')?.body).toEqual({ reason: 'open a branch first' }),
    );
  });

  it('Esc in the reason box cancels without sending', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    await fireEvent.click(screen.getByRole('button', { name: /^Deny d$/ }));
    const box = screen.getByLabelText('Reason for the agent (optional)');
    await fireEvent.keyDown(box, { key: 'Escape' });
    expect(screen.queryByLabelText('Reason for the agent (optional)')).toBeNull();
    expect(calls.some((c) => c.path.endsWith('/deny'))).toBe(false);
  });

  it('greys out a request that ended elsewhere, keeps it selected, and never lets it be decided', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    await act(() => {
      t.store.push({ seq: 1, ts_ms: NOW, event: wire({ type: 'approval_decided', id: 41, tool: 'shell_exec', status: 'cancelled', by: 'caller', reason: 'the waiting call ended before a decision', ended: { cause: 'Cancelled — the waiting call ended before a decision', short: 'The agent left' } }) });
      t.frame();
    });
    const waiting = screen.getByRole('listbox', { name: 'Waiting approval requests' });
    expect(within(waiting).queryByText('shell_exec')).toBeNull();
    const recent = screen.getByRole('listbox', { name: 'Recently closed requests' });
    const moved = within(recent).getAllByRole('option')[0] as HTMLElement;
    expect(moved).toHaveAttribute('data-id', '41');
    expect(moved).toHaveAttribute('aria-selected', 'true');
    expect(moved).toHaveTextContent('The agent left');
    const detail = screen.getByRole('region', { name: 'Request detail' });
    expect(within(detail).getByText(/Cancelled — the waiting call ended before a decision/)).toBeInTheDocument();
    expect(within(detail).getByText(/can no longer be decided/)).toBeInTheDocument();
    for (const name of [/Approve once/, /Approve & always/, /^Deny d$/, /Deny & always/]) {
      expect(screen.getByRole('button', { name })).toBeDisabled();
    }
    vi.advanceTimersByTime(500);
    await act(() => controller.dispatch({ type: 'approve' }));
    expect(calls.some((c) => c.path.endsWith('/approve'))).toBe(false);
  });

  it('while the engine is lost, waiting requests are unknown and neither buttons nor keys decide', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    t.store.status({ kind: 'live' });
    render(Approvals, { context: t.context });
    expect(screen.getByRole('button', { name: /Approve once/ })).toBeEnabled();
    await act(() => t.store.status({ kind: 'retrying', attempt: 1, retry_at_ms: NOW + 500, since_ms: NOW, reason: 'Nothing answers at its address.' }));
    const detail = screen.getByRole('region', { name: 'Request detail' });
    expect(within(detail).queryByRole('timer')).toBeNull();
    expect(screen.getAllByTestId('unknown-state').map((e) => e.textContent)).toContain('Unknown: the console lost the engine');
    const waiting = screen.getByRole('listbox', { name: 'Waiting approval requests' });
    expect(within(waiting).queryAllByRole('timer')).toHaveLength(0);
    for (const name of [/Approve once/, /Approve & always/, /^Deny d$/, /Deny & always/]) {
      const b = screen.getByRole('button', { name });
      expect(b).toBeDisabled();
      expect(b.title).toMatch(/^The console lost the engine: this request may have been decided, cancelled or timed out meanwhile/);
    }
    expect(screen.getByTestId('offline-reason')).toHaveTextContent('Approve and Deny come back when it answers again.');
    vi.advanceTimersByTime(500);
    await act(() => controller.dispatch({ type: 'approve' }));
    await act(() => controller.dispatch({ type: 'deny' }));
    expect(screen.queryByLabelText('Reason for the agent (optional)')).toBeNull();
    expect(calls.filter((c) => c.method === 'POST')).toEqual([]);
    // Back live: the countdowns and the buttons return.
    await act(() => t.store.status({ kind: 'live' }));
    expect(screen.getByRole('button', { name: /Approve once/ })).toBeEnabled();
    expect(screen.queryByTestId('offline-reason')).toBeNull();
  });

  it('a new request does not move the selection, and holds decisions for 400 ms', async () => {
    const calls = engine();
    const t = testStore();
    t.store.reset(snapshot(NOW), 'initial');
    render(Approvals, { context: t.context });
    vi.advanceTimersByTime(500);
    await act(() => {
      t.store.push({
        seq: 1,
        ts_ms: NOW,
        event: { type: 'approval_requested', id: 60, call_id: 9, tool: 'fs_write', preview: '~/notes.md (12 bytes)', risk: 'high', rule: 'r', reason: 'why', caller: { via: 'socket', pid: 4, uid: 1000, exe: '/usr/bin/node', bridge_pid: null, client_name: 'c', agent_id: null, through_tool_call: false, text: 'socket c pid 4' }, expires_ms: NOW + 1_000 },
      });
      t.frame();
    });
    const options = within(screen.getByRole('listbox', { name: 'Waiting approval requests' })).getAllByRole('option');
    expect(options[0]).toHaveAttribute('data-id', '60');
    expect(options[1]).toHaveAttribute('aria-selected', 'true');
    await act(() => controller.dispatch({ type: 'approve' }));
    expect(calls.some((c) => c.path.endsWith('/approve'))).toBe(false);
  });

  describe('with a team', () => {
    const teamEngine = () => {
      const snap = snapshot(NOW);
      return fakeEngine((c) => {
        if (c.path.startsWith('/api/team/')) {
          return { took_effect: true, status: 'approved', decided_by: 'team alice on laptop', words: 'Approved by alice on laptop' } satisfies TeamOutcome;
        }
        const m = /^\/api\/approvals\/(\d+)$/.exec(c.path);
        const request = m ? snap.pending.find((r) => r.id === Number(m[1])) : undefined;
        return { request, caller_recent: [] } satisfies Partial<ApprovalDetail>;
      });
    };

    it("lists other engines' requests with their engine, and how a closed one ended in the engine's words", () => {
      teamEngine();
      const t = testStore();
      t.store.reset({ ...emptySnapshot(NOW), team: teamView(NOW) }, 'initial');
      render(Approvals, { context: t.context });
      const waiting = screen.getByRole('listbox', { name: 'Waiting requests of other engines' });
      const rows = within(waiting).getAllByRole('option');
      expect(rows.map((o) => o.getAttribute('data-team'))).toEqual([`${'b'.repeat(32)}/7`, `${'c'.repeat(32)}/3`]);
      expect(within(rows[0] as HTMLElement).getByText('bob on build-box')).toBeInTheDocument();
      expect(within(rows[0] as HTMLElement).getByRole('button')).toHaveAccessibleName(/on bob on build-box$/);
      const recent = screen.getByRole('listbox', { name: 'Recently closed requests of other engines' });
      expect(within(recent).getByText(/By dave on desk/)).toBeInTheDocument();
      // Nothing local waits: the first team request is selected, and says where it was raised.
      expect(rows[0]).toHaveAttribute('aria-selected', 'true');
      expect(screen.getByTestId('team-detail-engine')).toHaveTextContent('Raised on bob on build-box');
      expect(screen.getByTestId('team-link')).toHaveTextContent('Team online');
      expect(screen.getByTestId('team-link')).toHaveTextContent('2 other engines online');
      // "Always" is made where a request was raised: its key is not offered here.
      expect(document.querySelector('.keys')).not.toHaveTextContent('always');
    });

    it('approves with a click through the raising engine, and `a` does the same', async () => {
      const calls = teamEngine();
      const t = testStore();
      t.store.reset({ ...emptySnapshot(NOW), team: teamView(NOW) }, 'initial');
      render(Approvals, { context: t.context });
      await fireEvent.click(screen.getByRole('button', { name: /Approve once/ }));
      const path = `/api/team/${'b'.repeat(32)}/7/approve`;
      await waitFor(() => expect(calls.find((c) => c.method === 'POST' && c.path === path)?.body).toEqual({}));
      await waitFor(() => expect(screen.getByText(/Approved #7 shell_exec of bob on build-box/)).toBeInTheDocument());
    });

    it('shows why a person cannot decide a request, and neither buttons nor keys act on it', async () => {
      const calls = teamEngine();
      const t = testStore();
      t.store.reset({ ...emptySnapshot(NOW), team: teamView(NOW) }, 'initial');
      render(Approvals, { context: t.context });
      await act(() => controller.dispatch({ type: 'move', delta: 1 }));
      const why = 'Only carol may decide requests from runner on ci-3; this engine runs as alice.';
      expect(screen.getByTestId('cannot-decide')).toHaveTextContent(why);
      const approve = screen.getByRole('button', { name: /Approve once/ });
      expect(approve).toBeDisabled();
      expect(approve).toHaveAttribute('title', why);
      expect(screen.getByRole('button', { name: /^Deny d$/ })).toBeDisabled();
      vi.advanceTimersByTime(500);
      await act(() => controller.dispatch({ type: 'approve' }));
      await act(() => controller.dispatch({ type: 'deny' }));
      expect(calls.filter((c) => c.path.startsWith('/api/team/'))).toEqual([]);
    });

    it('a decision someone else made first is said in the engine\'s words, not as a failure', async () => {
      fakeEngine(() => ({ took_effect: false, status: 'denied', decided_by: 'team dave on desk', words: 'It was already denied by dave on desk.' }) satisfies TeamOutcome);
      const t = testStore();
      t.store.reset({ ...emptySnapshot(NOW), team: teamView(NOW) }, 'initial');
      render(Approvals, { context: t.context });
      await fireEvent.click(screen.getByRole('button', { name: /Approve once/ }));
      await waitFor(() => expect(screen.getByRole('alert')).toHaveTextContent('It was already denied by dave on desk.'));
    });

    it('filters the inbox by engine', async () => {
      teamEngine();
      const t = testStore();
      t.store.reset({ ...snapshot(NOW), team: teamView(NOW) }, 'initial');
      render(Approvals, { context: t.context });
      const filter = screen.getByRole('combobox', { name: 'Show requests of' });
      await fireEvent.change(filter, { target: { value: 'c'.repeat(32) } });
      expect(screen.queryByRole('listbox', { name: 'Waiting approval requests' })).toBeNull();
      const rows = within(screen.getByRole('listbox', { name: 'Waiting requests of other engines' })).getAllByRole('option');
      expect(rows.map((o) => o.getAttribute('data-team'))).toEqual([`${'c'.repeat(32)}/3`]);
      await fireEvent.change(filter, { target: { value: 'me' } });
      expect(screen.queryByRole('listbox', { name: 'Waiting requests of other engines' })).toBeNull();
      expect(screen.getByRole('listbox', { name: 'Waiting approval requests' })).toBeInTheDocument();
    });
  });
});
