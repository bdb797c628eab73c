import { act, fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import Tools from './Tools.svelte';
import { snapshot } from '../dev/fixtures';
import { fakeEngine, testStore } from '../test/harness';
import { setTransport } from '../lib/api/client';
import { controller } from '../lib/controller.svelte';
import type { Snapshot, ToolMatch } from '../lib/api/types';

const NOW = Date.now();

/** jsdom has no layout: give the list a height so the virtualiser draws rows. */
function withLayout() {
  const rect = vi.spyOn(HTMLElement.prototype, 'getBoundingClientRect').mockReturnValue(DOMRect.fromRect({ width: 400, height: 2000 }));
  const height = vi.spyOn(HTMLElement.prototype, 'offsetHeight', 'get').mockReturnValue(2000);
  const width = vi.spyOn(HTMLElement.prototype, 'offsetWidth', 'get').mockReturnValue(400);
  return () => [rect, height, width].forEach((s) => s.mockRestore());
}

const rows = () => [...document.querySelectorAll('li.trow-t')].map((li) => li.getAttribute('data-tool'));

function match(snap: Snapshot, name: string, hit: string): ToolMatch {
  const tool = snap.tools.find((t) => t.name === name)!;
  const at = tool.name.indexOf(hit);
  return {
    tool,
    name: [
      { text: tool.name.slice(0, at), hit: false },
      { text: hit, hit: true },
      { text: tool.name.slice(at + hit.length), hit: false },
    ],
    summary: [{ text: tool.summary, hit: false }],
    matched_in: [],
  };
}

describe('Tools search', () => {
  let restore: () => void;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'], shouldAdvanceTime: true });
    restore = withLayout();
  });
  afterEach(() => {
    restore();
    vi.useRealTimers();
  });

  it("asks the engine once the typing pauses, lists its answer in its order with the matched words marked, and keeps it while the next is on its way", async () => {
    const snap = snapshot(NOW);
    const names = snap.tools.map((t) => t.name);
    const [a, b, c] = [names[5]!, names[2]!, names[9]!];
    /** Answers held until released. */
    const held: ((r: Response) => void)[] = [];
    const calls: { path: string }[] = [];
    setTransport({
      request: (_method, path) => {
        calls.push({ path });
        if (!path.startsWith('/api/tools/search')) return Promise.resolve(new Response('{}', { status: 200 }));
        return new Promise<Response>((res) => held.push(res));
      },
    });
    const answer = (m: ToolMatch[]) => held.shift()?.(new Response(JSON.stringify(m), { status: 200 }));
    const t = testStore();
    t.store.reset(snap, 'initial');
    render(Tools, { context: t.context });
    await waitFor(() => expect(rows().length).toBeGreaterThan(3));
    const whole = rows();

    const box = screen.getByRole('searchbox', { name: 'Search tools' });
    await fireEvent.input(box, { target: { value: 'f' } });
    await fireEvent.input(box, { target: { value: 'fi' } });
    await fireEvent.input(box, { target: { value: 'file' } });
    await act(() => vi.advanceTimersByTimeAsync(200));
    const searches = () => calls.filter((x) => x.path.startsWith('/api/tools/search')).map((x) => x.path);
    expect(searches()).toEqual(['/api/tools/search?q=file&limit=200']);
    // In flight: the whole list stays.
    expect(rows()).toEqual(whole);
    expect(screen.getByText('Searching…')).toBeInTheDocument();

    await act(async () => answer([match(snap, a, a.slice(0, 2)), match(snap, b, b.slice(0, 2)), match(snap, c, c.slice(0, 2))]));
    await waitFor(() => expect(rows()).toEqual([a, b, c]));
    expect([...document.querySelectorAll('li.trow-t .tname mark')].map((m) => m.textContent)).toEqual([a, b, c].map((n) => n.slice(0, 2)));
    expect(screen.getByText('3 matches, best first')).toBeInTheDocument();

    // The next words: the last answer stays until theirs arrives.
    await fireEvent.input(box, { target: { value: 'files' } });
    await act(() => vi.advanceTimersByTimeAsync(200));
    expect(searches()).toHaveLength(2);
    expect(rows()).toEqual([a, b, c]);
    await act(async () => answer([match(snap, c, c.slice(0, 1))]));
    await waitFor(() => expect(rows()).toEqual([c]));

    // Emptied: the whole list, nothing asked.
    await fireEvent.input(box, { target: { value: '' } });
    await waitFor(() => expect(rows()).toEqual(whole));
    await act(() => vi.advanceTimersByTimeAsync(200));
    expect(searches()).toHaveLength(2);
    expect(document.querySelectorAll('li.trow-t mark')).toHaveLength(0);
  });

  it("shows a failed search as the engine's error, with a retry", async () => {
    const snap = snapshot(NOW);
    let fail = true;
    fakeEngine((call) => {
      if (!call.path.startsWith('/api/tools/search')) return {};
      if (fail) return new Response(JSON.stringify({ error: { code: 'bad_request', message: 'search takes `q`' } }), { status: 400 });
      return [match(snap, snap.tools[0]!.name, snap.tools[0]!.name.slice(0, 2))];
    });
    const t = testStore();
    t.store.reset(snap, 'initial');
    render(Tools, { context: t.context });
    await fireEvent.input(screen.getByRole('searchbox', { name: 'Search tools' }), { target: { value: 'x' } });
    await act(() => vi.advanceTimersByTimeAsync(200));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('search takes q');
    expect(rows()).toEqual([]);
    expect(screen.queryByText('No tools match')).toBeNull();
    fail = false;
    await fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    await act(() => vi.advanceTimersByTimeAsync(200));
    await waitFor(() => expect(rows()).toEqual([snap.tools[0]!.name]));
    expect(screen.queryByRole('alert')).toBeNull();
  });
});

describe('Pin as core', () => {
  let restore: () => void;
  beforeEach(() => (restore = withLayout()));
  afterEach(() => restore());

  it("pins the open tool from its detail, by click and by p, and shows the engine's answer", async () => {
    const snap = snapshot(NOW);
    const row = snap.tools.find((t) => t.source !== 'builtin' && t.state === 'active' && t.core === null)!;
    const words = 'Pinned as core by a person: every agent that may see it has it in its tools list.';
    let pinned = false;
    const calls = fakeEngine((c) => {
      if (c.method === 'PUT' && c.path === `/api/tools/${row.name}/core`) {
        pinned = (c.body as { pinned: boolean }).pinned;
        const core = pinned ? { reason: { kind: 'pinned' }, pinned: true, words } : null;
        return { tool: row.name, pinned, changed: true, summary: { ...row, core, deferred_for: [] }, clients: snap.clients };
      }
      if (c.path === `/api/tools/${row.name}`) return { summary: row, description: 'd', input_schema: {}, output_schema: null, guards: [], pin: null };
      return {};
    });
    const t = testStore();
    t.store.reset(snap, 'initial');
    render(Tools, { context: t.context });
    const li = await waitFor(() => {
      const el = document.querySelector(`li.trow-t[data-tool="${row.name}"]`);
      if (!el) throw new Error('row');
      return el;
    });
    await fireEvent.click(li.querySelector('button')!);

    await fireEvent.click(await screen.findByRole('button', { name: /^Pin as core/ }));
    await screen.findByRole('button', { name: /^Unpin/ });
    expect(calls.filter((c) => c.method === 'PUT').map((c) => c.body)).toEqual([{ pinned: true }]);
    expect(document.querySelector('[data-core-note]')).toHaveTextContent(words);
    expect(li.querySelector('[data-side="core"]')).toHaveTextContent('Core · pinned');

    // p takes it back (keys reach the view through the controller).
    await act(() => {
      expect(controller.dispatch({ type: 'toggleCore' })).toBe(true);
    });
    await screen.findByRole('button', { name: /^Pin as core/ });
    expect(pinned).toBe(false);
    expect(document.querySelector('[data-core-note]')).toBeNull();
    expect(li.querySelector('[data-side="core"]')).toBeNull();
  });
});
