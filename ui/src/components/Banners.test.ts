import { render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import Banners from './Banners.svelte';
import { snapshot } from '../dev/fixtures';
import { fakeEngine, testStore } from '../test/harness';
import type { BarrierStatus } from '../lib/api/types';
import { clock } from '../lib/clock.svelte';
import { LOST_HINT_MS } from '../lib/stream';

function shown(barrier: BarrierStatus) {
  fakeEngine();
  const t = testStore();
  t.store.reset({ ...snapshot(), barrier }, 'initial');
  render(Banners, { context: t.context });
}

describe('the barrier banner', () => {
  it('is absent while the barrier holds fully', () => {
    shown(snapshot().barrier);
    expect(screen.queryByTestId('barrier-banner')).toBeNull();
  });

  it("says in the engine's words what is missing when the barrier is off", () => {
    shown({
      level: 'off',
      landlock_abi: null,
      seccomp: false,
      summary: 'Barrier off: this machine cannot confine governed processes, so shell-like tools are refused',
      gaps: ["Landlock is not available: governed processes can read toolgate's credentials and write its files"],
      refuses_shell: true,
    });
    const banner = screen.getByTestId('barrier-banner');
    expect(banner).toHaveClass('danger');
    expect(banner).toHaveTextContent('shell-like tools are refused');
    expect(banner).toHaveTextContent('Landlock is not available');
    expect(banner).toHaveTextContent('toolgate doctor');
  });

  it('warns, less loudly, when it holds partly', () => {
    shown({
      level: 'partial',
      landlock_abi: 4,
      seccomp: true,
      summary: "Barrier partly on (Landlock ABI 4): toolgate's files and control plane are out of reach; see what is missing",
      gaps: ['Landlock ABI 4 does not scope signals'],
      refuses_shell: false,
    });
    expect(screen.getByTestId('barrier-banner')).toHaveClass('warn');
  });
});

describe('the connection banner', () => {
  function offline(since_ms: number) {
    fakeEngine();
    const t = testStore();
    t.store.reset(snapshot(), 'initial');
    const now = clock.now;
    t.store.status({ kind: 'retrying', attempt: 3, retry_at_ms: now + 2_000, since_ms, reason: 'Nothing answers at its address.' });
    render(Banners, { context: t.context });
  }

  it('says it retries soon, and nothing about ports while the loss is fresh', () => {
    offline(clock.now - 5_000);
    expect(screen.getByRole('alert')).toHaveTextContent("Can't reach the toolgate engine. Nothing answers at its address. Retrying in 2 s.");
    expect(screen.queryByTestId('lost-hint')).toBeNull();
  });

  it('names the command to run, as code, once tries have failed for a while', () => {
    offline(clock.now - LOST_HINT_MS - 5_000);
    const hint = screen.getByTestId('lost-hint');
    expect(hint).toHaveTextContent('No answer for 35 s. If the engine was restarted on another port, run toolgate console to open the console where it runs now');
    expect(hint.querySelector('code')?.textContent).toBe('toolgate console');
    expect(hint.textContent).not.toContain('`');
  });
});
