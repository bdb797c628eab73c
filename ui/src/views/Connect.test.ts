import { act, fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import Connect from './Connect.svelte';
import { connectClients, connectPlan } from '../dev/fixtures';
import { controller } from '../lib/controller.svelte';
import { fakeEngine, testStore } from '../test/harness';
import type { ConnectApplyBody, ConnectPlanBody } from '../lib/api/types';

const rowIds = () => [...document.querySelectorAll('li.crow')].map((li) => li.getAttribute('data-client'));

describe('Connect view', () => {
  it('lists the clients found, folds the others with where toolgate looked, and reviews the diff before connecting', async () => {
    let clients = connectClients();
    const calls = fakeEngine((c) => {
      if (c.path === '/api/connect/clients') return { home: '/home/ada', clients };
      if (c.path === '/api/connect/plan') {
        const b = c.body as ConnectPlanBody;
        return connectPlan(b.client, b.action);
      }
      const plan = (c.body as ConnectApplyBody).plan;
      clients = clients.map((x) => (x.id === plan.client ? { ...x, connected: true, connected_at: '20261205T101500Z' } : x));
      return { plan, backups: ['/home/ada/.config/Claude/claude_desktop_config.json.bak'], warnings: [] };
    });
    const t = testStore();
    render(Connect, { context: t.context });
    await waitFor(() => expect(rowIds()).toEqual(['claude-desktop', 'claude-code', 'cursor']));
    // Cursor's one file does not parse: its row says so instead of "no servers".
    expect(document.querySelector('[data-client="cursor"] .l2')?.textContent).toBe('a file cannot be read · user');

    // The first client found is open: its file, its servers, "running".
    const detail = document.querySelector('[data-detail="claude-desktop"]')!;
    expect(detail.textContent).toContain('~/.config/Claude/claude_desktop_config.json');
    expect([...detail.querySelectorAll('[data-server]')].map((s) => s.getAttribute('data-server'))).toEqual(['filesystem', 'github']);
    expect(detail.textContent).toContain('Not connected');
    expect(detail.textContent).toContain('Running');

    // Not found: folded, then listed with the paths looked at.
    const fold = screen.getByRole('button', { name: /Not found on this machine/ });
    expect(fold.getAttribute('aria-expanded')).toBe('false');
    await fireEvent.click(fold);
    expect(rowIds()).toContain('zed');
    await fireEvent.click(document.querySelector('[data-client="zed"] button')!);
    const zed = document.querySelector('[data-detail="zed"]')!;
    expect(zed.textContent).toContain('toolgate looked for these files and found none');
    expect(zed.textContent).toContain('~/.config/zed/settings.json');
    expect(zed.querySelector('[data-action]')).toBeNull();
    await fireEvent.click(document.querySelector('[data-client="claude-desktop"] button')!);
    act(() => {
      controller.dispatch({ type: 'move', delta: 1 });
    });
    await waitFor(() => expect(document.querySelector('[data-detail="claude-code"]')).not.toBeNull());
    expect(document.querySelector('[data-server="toolgate"]')?.textContent).toContain("toolgate's bridge");
    // One file, two scopes: both shown.
    expect([...document.querySelectorAll('[data-detail="claude-code"] section.file')].map((f) => f.getAttribute('data-scope'))).toEqual(['user', 'local', 'project']);
    expect(document.querySelector('[data-server="sentry"]')?.textContent).toContain('Uses ${SENTRY_TOKEN}, which only the client can fill in.');

    // Enter on another control is that control's: it does not open a review.
    screen.getByRole('button', { name: /Check again/ }).focus();
    let opened = true;
    act(() => {
      opened = controller.dispatch({ type: 'open' });
    });
    expect(opened).toBe(false);
    (document.activeElement as HTMLElement | null)?.blur();

    // `c` on a connected client does nothing; back to Claude Desktop, `c` opens the review.
    let handled = true;
    act(() => {
      handled = controller.dispatch({ type: 'connectClient' });
    });
    expect(handled).toBe(false);
    act(() => {
      controller.dispatch({ type: 'move', delta: -1 });
    });
    act(() => {
      controller.dispatch({ type: 'connectClient' });
    });
    await waitFor(() => expect(document.querySelectorAll('section.file[data-role]').length).toBe(2));
    expect(calls.some((c) => c.path === '/api/connect/apply')).toBe(false);
    const client = document.querySelector('section.file[data-role="client"]')!;
    expect(client.querySelector('h3')?.textContent).toContain("Claude Desktop's MCP config");
    const lines = [...client.querySelectorAll('.d-line')];
    // The signs are kept in the text; each changed line carries its colour class too.
    const removed = lines.filter((l) => l.classList.contains('d-del')).map((l) => l.textContent);
    const added = lines.filter((l) => l.classList.contains('d-add')).map((l) => l.textContent);
    expect(removed.every((l) => l?.startsWith('-'))).toBe(true);
    expect(added.every((l) => l?.startsWith('+'))).toBe(true);
    expect(added.join('\n')).toContain('"args": ["mcp-bridge", "--client", "Claude Desktop"]');
    expect(removed.join('\n')).toContain('<secret>');
    // jsdom does not open a <dialog>: its content is there, but hidden from role queries.
    expect(document.querySelector('p.restart')?.textContent).toContain('Claude Desktop is running.');
    const apply = document.querySelector<HTMLButtonElement>('[data-apply]')!;
    expect(apply.textContent?.trim()).toBe('Apply');
    await fireEvent.click(apply);
    await waitFor(() => expect(document.querySelector('[data-outcome="claude-desktop"]')).not.toBeNull());
    expect(calls.filter((c) => c.path === '/api/connect/apply')).toHaveLength(1);
    expect(document.querySelector('[data-outcome="claude-desktop"]')?.textContent).toContain('Claude Desktop now goes through toolgate');
    // The list was read again: Claude Desktop shows connected.
    await waitFor(() => expect(document.querySelector('[data-detail="claude-desktop"] [data-state="connection"]')?.textContent).toContain('Connected'));
  });

  it("keeps what it found, greyed, when the engine stops answering, and says so", async () => {
    let up = true;
    fakeEngine((c) => (up || c.path !== '/api/connect/clients' ? { home: '/home/ada', clients: connectClients() } : new Response('nope', { status: 502 })));
    const t = testStore();
    render(Connect, { context: t.context });
    await waitFor(() => expect(rowIds().length).toBe(3));
    up = false;
    await fireEvent.click(screen.getByRole('button', { name: /Check again/ }));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('Could not read the clients again'));
    expect(rowIds().length).toBe(3);
    expect(document.querySelector('.split.stale-data')).not.toBeNull();
  });
});
