import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it, vi } from 'vitest';
import ClientCard from './ClientCard.svelte';
import { fakeEngine } from '../../test/harness';
import type { ClientView } from '../../lib/api/types';

const view = (over: Partial<ClientView> = {}): ClientView => ({
  client: 'claude-code',
  connected: true,
  mode: 'on',
  chosen: null,
  window: 200_000,
  threshold: 20_000,
  deferring: true,
  listed: ['fs_read', 'tool_search', 'tool_describe', 'tool_call'],
  listed_tokens: 1_524,
  deferred: ['create_issue', 'send_email'],
  deferred_tokens: 41_250,
  words: 'Deferral is on: 2 tools are behind tool_search (their schemas take about 41,250 tokens, 20% of the 200,000-token window).',
  ...over,
});

describe('ClientCard', () => {
  it("shows the engine's sentence as is, the figures with thousands, and the mode in force", () => {
    fakeEngine();
    render(ClientCard, { client: view(), onchanged: () => {} });
    const card = screen.getByRole('article', { name: 'Agent claude-code' });
    expect(within(card).getByText(view().words)).toBeInTheDocument();
    expect(within(card).getByText('Connected')).toBeInTheDocument();
    expect(card).toHaveTextContent('4 tools · 1,524 tokens');
    expect(card).toHaveTextContent('2 tools · 41,250 tokens');
    expect(card).toHaveTextContent('200,000 tokens');
    const group = within(card).getByRole('group', { name: 'Deferral for claude-code' });
    expect(within(group).getByRole('button', { name: 'On' })).toHaveAttribute('aria-pressed', 'true');
    expect(within(group).getByRole('button', { name: 'Off' })).toHaveAttribute('aria-pressed', 'false');
    expect(within(card).getByText('From the config')).toBeInTheDocument();
    expect(within(card).queryByRole('button', { name: 'Follow config' })).toBeNull();
  });

  it('switches through the engine and hands on its answer; Follow config sends null', async () => {
    const off = view({ mode: 'off', chosen: 'off', deferring: false, words: 'Deferral is off: all 2 tools are listed.' });
    const calls = fakeEngine(() => off);
    const onchanged = vi.fn();
    const r = render(ClientCard, { client: view(), onchanged });
    await fireEvent.click(screen.getByRole('button', { name: 'Off' }));
    await waitFor(() => expect(onchanged).toHaveBeenCalledWith(off));
    expect(calls).toEqual([{ method: 'PUT', path: '/api/clients/claude-code/deferral', body: { mode: 'off' } }]);

    await r.rerender({ client: off, onchanged });
    expect(screen.getByRole('button', { name: 'Off' })).toHaveAttribute('aria-pressed', 'true');
    expect(screen.getByText('Chosen here, over the config')).toBeInTheDocument();
    await fireEvent.click(screen.getByRole('button', { name: 'Follow config' }));
    await waitFor(() => expect(calls).toHaveLength(2));
    expect(calls[1]).toEqual({ method: 'PUT', path: '/api/clients/claude-code/deferral', body: { mode: null } });
  });

  it("shows the engine's refusal and keeps the mode as it was", async () => {
    fakeEngine(() => new Response(JSON.stringify({ error: { code: 'invalid', message: 'name a client' } }), { status: 422 }));
    const onchanged = vi.fn();
    render(ClientCard, { client: view(), onchanged });
    await fireEvent.click(screen.getByRole('button', { name: 'Auto' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('name a client');
    expect(onchanged).not.toHaveBeenCalled();
    expect(screen.getByRole('button', { name: 'On' })).toHaveAttribute('aria-pressed', 'true');
  });

  it('lists the tool names as sent, in order, and the deferred ones, on demand', async () => {
    fakeEngine();
    render(ClientCard, { client: view({ connected: false }), onchanged: () => {} });
    expect(screen.getByText('Not connected')).toBeInTheDocument();
    expect(screen.queryByRole('region', { name: 'Listed to claude-code' })).toBeNull();
    await fireEvent.click(screen.getByRole('button', { name: 'Show tool names' }));
    const listed = screen.getByRole('region', { name: 'Listed to claude-code' });
    expect(within(listed).getAllByRole('listitem').map((li) => li.textContent)).toEqual(view().listed);
    const deferred = screen.getByRole('region', { name: 'Deferred for claude-code' });
    expect(within(deferred).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['create_issue', 'send_email']);
    expect(screen.getByRole('button', { name: 'Hide tool names' })).toHaveAttribute('aria-expanded', 'true');
  });
});
