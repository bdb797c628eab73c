import { render, screen, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import TeamLink from './TeamLink.svelte';
import { teamView } from '../dev/fixtures';
import type { TeamView } from '../lib/api/types';

function degraded(): TeamView {
  const v = teamView();
  return {
    ...v,
    status: {
      ...v.status,
      state: { state: 'degraded', since_ms: Date.now() - 30_000, error: 'connection refused' },
      engines: v.status.engines.map((e, i) => (i === 2 ? { ...e, online: false, seen_ago_ms: 60_000 } : e)),
    },
    summary: 'The team database is unreachable (connection refused); this engine decides only its own requests until it is back.',
  };
}

describe('TeamLink', () => {
  it('says the link is degraded in words with an icon, and the engine’s sentence on hover', () => {
    render(TeamLink, { props: { view: degraded(), compact: true } });
    const chip = screen.getByTestId('team-link');
    expect(chip).toHaveTextContent('Team degraded');
    // Who is online is not known while the database is away.
    expect(chip).not.toHaveTextContent('online');
    expect(chip).toHaveAttribute('title', degraded().summary);
    expect(chip.querySelector('svg')).not.toBeNull();
  });

  it('counts the other engines online while the link is up', () => {
    render(TeamLink, { props: { view: teamView(), compact: true } });
    expect(screen.getByTestId('team-link')).toHaveTextContent('Team online · 2 other engines online');
  });

  it('lists every engine with whether it is online, this one marked', () => {
    render(TeamLink, { props: { view: degraded() } });
    expect(screen.getByText(degraded().summary)).toBeInTheDocument();
    const items = within(screen.getByRole('list', { name: "The team's engines" })).getAllByRole('listitem');
    expect(items.map((li) => li.textContent?.replace(/\s+/g, ' ').trim())).toEqual([
      'alice on laptop (this engine) online',
      'bob on build-box online',
      'runner on ci-3 offline · last seen 1 min ago',
    ]);
  });
});
