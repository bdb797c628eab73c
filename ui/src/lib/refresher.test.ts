import { describe, expect, it } from 'vitest';
import type { Slice, SliceView } from './api/types';
import { Refresher } from './refresher';

/** A fetch whose answers the test releases by hand. */
function manual() {
  const waiting: { slice: Slice; resolve: (v: SliceView) => void; reject: (e: unknown) => void }[] = [];
  const fetch = (slice: Slice) =>
    new Promise<SliceView>((resolve, reject) => {
      waiting.push({ slice, resolve, reject });
    });
  return { fetch, waiting };
}

const policy = (revision: number, version = revision): SliceView => ({
  slice: 'policy',
  revision,
  policy: { version, preset: 'default', allowed_tools: null, denied_tools: [], rules_count: 0, remembered_count: 0, config_problem: null, restart_note: null },
});

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('Refresher', () => {
  it('reads a slice once per burst of announcements and again when the read was older', async () => {
    const { fetch, waiting } = manual();
    const applied: SliceView[] = [];
    const r = new Refresher(fetch, (v) => applied.push(v));
    r.announce('policy', 1);
    r.announce('policy', 2);
    r.announce('policy', 3);
    expect(waiting).toHaveLength(1);
    // The read started at revision 1: applied, and read again for 3.
    waiting.shift()?.resolve(policy(1));
    await settle();
    expect(applied.map((v) => v.revision)).toEqual([1]);
    expect(waiting).toHaveLength(1);
    waiting.shift()?.resolve(policy(3));
    await settle();
    expect(applied.map((v) => v.revision)).toEqual([1, 3]);
    expect(waiting).toHaveLength(0);
    // Already applied: nothing to read.
    r.announce('policy', 3);
    expect(waiting).toHaveLength(0);
  });

  it('keeps slices apart and drops a read that is older than one applied', async () => {
    const { fetch, waiting } = manual();
    const applied: string[] = [];
    const r = new Refresher(fetch, (v) => applied.push(`${v.slice}@${v.revision}`));
    r.announce('policy', 5);
    r.announce('servers', 1);
    expect(waiting.map((w) => w.slice)).toEqual(['policy', 'servers']);
    waiting.shift()?.resolve(policy(6));
    waiting.shift()?.resolve({ slice: 'servers', revision: 1, servers: [], plugins: [] });
    await settle();
    expect(applied).toEqual(['policy@6', 'servers@1']);
  });

  it('a failed read waits for the next announcement; a reset drops reads in flight', async () => {
    const { fetch, waiting } = manual();
    const applied: number[] = [];
    const r = new Refresher(fetch, (v) => applied.push(v.revision));
    r.announce('tools', 1);
    waiting.shift()?.reject(new Error('offline'));
    await settle();
    expect(r.busy).toBe(0);
    r.announce('tools', 2);
    expect(waiting).toHaveLength(1);
    r.reset();
    waiting.shift()?.resolve({ slice: 'tools', revision: 2, tools: [], quarantined: [], clients: [] });
    await settle();
    expect(applied).toEqual([]);
    r.announce('tools', 3);
    expect(waiting).toHaveLength(1);
  });
});
