import { describe, expect, it } from 'vitest';
import { connectPlan } from '../../dev/fixtures';
import { api } from '../../lib/api/client';
import type { ConnectApplied } from '../../lib/api/types';
import { fakeEngine } from '../../test/harness';
import { Review } from './review.svelte';

const refusal = (status: number, code: string, message: string) =>
  new Response(JSON.stringify({ error: { code, message } }), { status, headers: { 'Content-Type': 'application/json' } });

function review() {
  const applied: ConnectApplied[] = [];
  let behind = 0;
  const r = new Review(api, { applied: (a) => applied.push(a), behind: () => behind++ });
  return { r, applied, behind: () => behind };
}

describe('a connect review', () => {
  it('asks for the plan, then applies exactly the plan shown and closes', async () => {
    const plan = connectPlan('claude-desktop', 'connect');
    const calls = fakeEngine((c) => (c.path === '/api/connect/plan' ? plan : { plan, backups: ['/h/c.json.bak'], warnings: [] }));
    const { r, applied } = review();
    await r.start({ client: 'claude-desktop', name: 'Claude Desktop', action: 'connect' });
    expect(calls[0]).toMatchObject({ method: 'POST', path: '/api/connect/plan', body: { client: 'claude-desktop', action: 'connect' } });
    expect(r.plan).toEqual(plan);
    await r.apply();
    expect(calls[1]).toMatchObject({ method: 'POST', path: '/api/connect/apply' });
    expect(calls[1]?.body).toEqual({ plan });
    expect(r.open).toBe(false);
    expect(applied.map((a) => a.backups)).toEqual([['/h/c.json.bak']]);
  });

  it('a plan overtaken by a file change is a conflict: nothing applied, the new plan on request', async () => {
    const plan = connectPlan('claude-desktop', 'connect');
    let planned = 0;
    fakeEngine((c) => {
      if (c.path === '/api/connect/plan') return { ...plan, summary: [`plan ${++planned}`] };
      return refusal(409, 'conflict', '/h/c.json changed since the plan was shown; look at the new plan before applying');
    });
    const { r, applied } = review();
    await r.start({ client: 'claude-desktop', name: 'Claude Desktop', action: 'connect' });
    await r.apply();
    expect(r.conflict).toMatch(/changed since the plan was shown/);
    expect(r.open).toBe(true);
    expect(applied).toEqual([]);
    // Apply stays refused until the person looked at the new plan.
    await r.apply();
    expect(applied).toEqual([]);
    await r.replan();
    expect(r.conflict).toBeNull();
    expect(r.plan?.summary).toEqual(['plan 2']);
  });

  it("a client already connected elsewhere: the engine's line, no retry, and the list read again", async () => {
    fakeEngine(() => refusal(409, 'stale', 'Cursor is already connected to toolgate; run `toolgate disconnect cursor` first'));
    const { r, behind } = review();
    await r.start({ client: 'cursor', name: 'Cursor', action: 'connect' });
    expect(r.plan).toBeNull();
    expect(r.error).toBe('Cursor is already connected to toolgate; run `toolgate disconnect cursor` first');
    expect(r.retryable).toBe(false);
    expect(behind()).toBe(1);
  });

  it('drops a plan that arrives after the review was closed', async () => {
    let release: (r: Response) => void = () => {};
    const { setTransport } = await import('../../lib/api/client');
    setTransport({ request: () => new Promise<Response>((res) => (release = res)) });
    const { r } = review();
    const pending = r.start({ client: 'cursor', name: 'Cursor', action: 'connect' });
    r.close();
    release(new Response(JSON.stringify(connectPlan('cursor', 'connect')), { status: 200 }));
    await pending;
    expect(r.plan).toBeNull();
    expect(r.open).toBe(false);
  });
});
