import { describe, expect, it } from 'vitest';
import { api, ApiError, approveInput, denyInput, errorFrom } from './client';
import { fakeEngine } from '../../test/harness';

const json = (body: unknown, status: number) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

describe('decision bodies', () => {
  it('are exactly ApproveInput and DenyInput, whatever object the caller holds', () => {
    const wide = { always: { scope: 'tool', ttl_s: 3600, words: 'extra' }, reason: 'x', mine: true };
    expect(approveInput(wide)).toEqual({ always: { scope: 'tool', ttl_s: 3600 } });
    expect(denyInput(wide)).toEqual({ reason: 'x', always: { scope: 'tool', ttl_s: 3600 } });
    expect(approveInput({})).toEqual({});
    expect(denyInput({ reason: '   ' })).toEqual({});
    expect(denyInput({ always: { scope: 'caller' } })).toEqual({ always: { scope: 'caller' } });
  });

  it('leave the page exactly so', async () => {
    const calls = fakeEngine(() => ({ request: {}, rule: null, decided_by: 'console' }));
    await api.approve(3, { always: { scope: 'tool', extra: 1 } as never });
    await api.deny(3, { reason: ' no ' });
    await api.approve(4);
    expect(calls.map((c) => [c.path, c.body])).toEqual([
      ['/api/approvals/3/approve', { always: { scope: 'tool' } }],
      ['/api/approvals/3/deny', { reason: 'no' }],
      ['/api/approvals/4/approve', {}],
    ]);
  });
});

describe('errors', () => {
  it('reads the engine error body, with every field problem of a policy edit', async () => {
    const e = await errorFrom(
      json(
        {
          error: {
            code: 'invalid',
            message: 'the edit is invalid: rules[0].regex: bad regex',
            field: 'rules[0].regex',
            errors: [{ field: 'rules[0].regex', message: 'bad regex' }, { message: 'file problem' }],
          },
        },
        422,
      ),
    );
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ code: 'invalid', status: 422, field: 'rules[0].regex' });
    expect(e.errors).toEqual([{ field: 'rules[0].regex', message: 'bad regex' }, { message: 'file problem' }]);
  });

  it('knows bad_request and stale, and words a foreign answer', async () => {
    expect((await errorFrom(json({ error: { code: 'bad_request', message: 'not JSON' } }, 400))).code).toBe('bad_request');
    const stale = await errorFrom(json({ error: { code: 'stale', message: 'already decided' } }, 409));
    expect(stale.isStale).toBe(true);
    expect(stale.field).toBeUndefined();
    const proxy = await errorFrom(new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }));
    expect(proxy).toMatchObject({ code: 'internal', message: 'The engine answered 502 Bad Gateway.' });
    const out = await errorFrom(new Response('', { status: 401 }));
    expect(out.message).toMatch(/toolgate console/);
  });

  it('builds the export URL from the filters only, never the page cursor', () => {
    expect(api.auditExportUrl({ tool: 'fs_*', outcome: 'error', before: 10, limit: 50 }, 'csv')).toBe(
      '/api/audit/export?tool=fs_*&outcome=error&format=csv',
    );
  });
});

describe('tool search and deferral', () => {
  it('asks for the words, and sends exactly DeferralBody', async () => {
    const calls = fakeEngine(() => []);
    await api.searchTools('open a bug report');
    await api.searchTools('x', 10);
    await api.chooseDeferral('claude code', 'off');
    await api.chooseDeferral('claude-code', null);
    expect(calls.map((c) => [c.method, c.path, c.body])).toEqual([
      ['GET', '/api/tools/search?q=open%20a%20bug%20report', undefined],
      ['GET', '/api/tools/search?q=x&limit=10', undefined],
      ['PUT', '/api/clients/claude%20code/deferral', { mode: 'off' }],
      ['PUT', '/api/clients/claude-code/deferral', { mode: null }],
    ]);
  });

  it('rejects an aborted request with the abort, not as an engine that is gone', async () => {
    const ctl = new AbortController();
    fakeEngine(() => {
      ctl.abort();
      throw new DOMException('aborted', 'AbortError');
    });
    await expect(api.searchTools('x', undefined, ctl.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });
});
