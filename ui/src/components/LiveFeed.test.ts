import { act, fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import LiveFeed from './LiveFeed.svelte';
import { emptySnapshot, envelopes, snapshot } from '../dev/fixtures';
import { fakeEngine, testStore } from '../test/harness';

describe('LiveFeed', () => {
  it('shows how to connect an agent when there are no calls', () => {
    fakeEngine();
    const t = testStore();
    t.store.reset(emptySnapshot(), 'initial');
    render(LiveFeed, { context: t.context });
    expect(screen.getByText('No calls yet — connect an agent')).toBeInTheDocument();
    expect(screen.getByText('/run/user/1000/toolgate/agent.sock')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Copy socket path' })).toBeInTheDocument();
  });

  it('following: new calls arrive without a pill', async () => {
    fakeEngine();
    const t = testStore();
    t.store.reset(snapshot(), 'initial');
    render(LiveFeed, { context: t.context, props: { compact: true } });
    await act(() => {
      for (const e of envelopes(0, 9e12, 5)) t.store.push(e);
      t.frame();
    });
    expect(screen.queryByRole('button', { name: /new calls/ })).toBeNull();
    expect(screen.getByRole('button', { name: 'Pause' })).toBeInTheDocument();
  });

  it('paused: counts what arrived in an "N new ↓" pill, and the pill follows again', async () => {
    fakeEngine();
    const t = testStore();
    t.store.reset(snapshot(), 'initial');
    render(LiveFeed, { context: t.context, props: { compact: true } });
    await fireEvent.click(screen.getByRole('button', { name: 'Pause' }));
    expect(screen.queryByRole('button', { name: /new calls/ })).toBeNull();
    await act(() => {
      for (const e of envelopes(0, 9e12, 3)) t.store.push(e);
      t.frame();
    });
    const pill = screen.getByRole('button', { name: '3 new calls, follow the feed' });
    expect(pill).toHaveTextContent('3 new');
    await act(() => {
      for (const e of envelopes(100, 9.1e12, 2, 5)) t.store.push(e);
      t.frame();
    });
    expect(screen.getByRole('button', { name: '5 new calls, follow the feed' })).toBeInTheDocument();
    await fireEvent.click(screen.getByRole('button', { name: '5 new calls, follow the feed' }));
    expect(screen.queryByRole('button', { name: /new calls/ })).toBeNull();
    expect(screen.getByRole('button', { name: 'Pause' })).toBeInTheDocument();
  });

  it('a filter counts only matching new rows', async () => {
    fakeEngine();
    const t = testStore();
    t.store.reset(snapshot(), 'initial');
    render(LiveFeed, { context: t.context, props: { compact: true, paused: true, filter: (r) => r.tool === 'nope' } });
    expect(screen.getByText('No calls match these filters')).toBeInTheDocument();
    await act(() => {
      for (const e of envelopes(0, 9e12, 4)) t.store.push(e);
      t.frame();
    });
    expect(screen.queryByRole('button', { name: /new calls/ })).toBeNull();
  });
});
