import { describe, expect, it } from 'vitest';
import { PolicyDraft } from './draft.svelte';
import { policyView } from '../../dev/fixtures';
import { fakeEngine } from '../../test/harness';

const ok = { ok: true, diff: '', errors: [], warnings: [] };

describe('PolicyDraft', () => {
  it('a save based on an old version shows theirs against yours, then reviews mine over theirs', async () => {
    let current = policyView();
    const calls = fakeEngine((c) => {
      if (c.method === 'GET' && c.path === '/api/policy') return current;
      if (c.path === '/api/policy/validate') return ok;
      if (c.method === 'PUT') return new Response(JSON.stringify({ error: { code: 'conflict', message: 'The policy changed meanwhile.' } }), { status: 409 });
      return {};
    });
    const d = new PolicyDraft();
    await d.load();
    expect(d.dirty).toBe(false);
    d.doc?.denied_tools.push('fs_write');
    expect(d.dirty).toBe(true);
    // Someone else saves v5 meanwhile.
    current = { ...current, version: 5, doc: { ...current.doc, version: 5, preset: 'strict' } };
    expect(d.movedPast(5)).toBe(true);
    await d.review();
    expect(d.reviewing).toBe(true);
    await d.apply();
    expect(calls.find((c) => c.method === 'PUT')?.body).toMatchObject({ base_version: 4 });
    expect(d.conflict?.theirs.version).toBe(5);
    const changed = d.conflict?.lines.filter((l) => l.op !== 'same').map((l) => `${l.op} ${l.text.trim()}`);
    expect(changed).toEqual(expect.arrayContaining(['del "preset": "strict",', 'add "preset": "default",']));
    expect(d.doc?.denied_tools).toContain('fs_write');
    await d.keepMine();
    expect(d.conflict).toBeNull();
    expect(d.view?.version).toBe(5);
    expect(d.doc?.denied_tools).toContain('fs_write');
  });

  it('taking theirs drops the edit', async () => {
    fakeEngine(() => policyView());
    const d = new PolicyDraft();
    await d.load();
    d.doc?.denied_tools.push('fs_write');
    await d.takeTheirs();
    expect(d.dirty).toBe(false);
    expect(d.reviewing).toBe(false);
  });

  it('sends a blank optional text as not set', async () => {
    const calls = fakeEngine((c) => (c.path === '/api/policy/validate' ? ok : policyView()));
    const d = new PolicyDraft();
    await d.load();
    const rule = d.doc?.rules[0];
    if (rule) rule.reason = '  ';
    await d.review();
    const sent = calls.find((c) => c.path === '/api/policy/validate')?.body as { rules: { reason: string | null }[] };
    expect(sent.rules[0]?.reason).toBeNull();
  });
});
