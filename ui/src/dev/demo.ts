/**
 * A pretend engine for `npm run dev:demo` / `build:demo`: answers the
 * console API from fixtures and plays a live event stream, so every view
 * can be looked at (and screenshotted) without `toolgate serve`.
 *
 * URL switches (query string): `?demo=empty` an engine with nothing yet,
 * `?demo=down` unreachable, `?demo=loading` a snapshot that never comes,
 * `?demo=static` no live events (stable screenshots), `?demo=reloaded`
 * shows the "fell behind" note.
 *
 * Dev-only: main.ts imports this behind `import.meta.env.MODE === 'demo'`.
 */
import { setTransport, type Method } from '../lib/api/client';
import type {
  ConnectApplyBody,
  ConnectPlanBody,
  Applied,
  ApprovalRequest,
  CallSummary,
  DecidedView,
  CorePinBody,
  CorePinned,
  CoreView,
  DeferralBody,
  FieldError,
  Marked,
  PolicyDoc,
  PolicyPut,
  PolicyTestInput,
  PolicyTestResult,
  RuleView,
  ScopePreview,
  ServerStatus,
  Snapshot,
  StderrPage,
  ToolMatch,
  Validation,
  WireEvent,
} from '../lib/api/types';
import { errorKind } from '../lib/format';
import type { EventSourceLike } from '../lib/stream';
import * as fx from './fixtures';

type Listener = (ev: { data: string }) => void;

class FakeEventSource implements EventSourceLike {
  onopen: ((ev: unknown) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  private listeners = new Map<string, Listener[]>();
  closed = false;

  constructor(readonly url: string) {}

  addEventListener(type: string, fn: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }

  emit(type: string, data: unknown): void {
    if (this.closed) return;
    for (const fn of this.listeners.get(type) ?? []) fn({ data: JSON.stringify(data) });
  }

  close(): void {
    this.closed = true;
  }
}

export interface Demo {
  open(url: string): EventSourceLike;
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

function err(status: number, code: string, message: string, field?: string, errors?: FieldError[]): Response {
  return json({ error: { code, message, ...(field ? { field } : {}), ...(errors?.length ? { errors } : {}) } }, status);
}

/**
 * Like the engine's `deny_unknown_fields`: a body with a key it does not
 * know is refused with 422, so a UI that sends extra fields fails here too.
 */
function unknownField(body: unknown, allowed: readonly string[], path = ''): string | null {
  if (!body || typeof body !== 'object') return null;
  for (const [k, v] of Object.entries(body)) {
    if (path === '' && k === 'always') {
      const inner = unknownField(v, ['scope', 'ttl_s'], 'always.');
      if (inner) return inner;
      continue;
    }
    if (!allowed.includes(k)) return `${path}${k}`;
  }
  return null;
}

export function install(): Demo {
  const mode = new URLSearchParams(location.search).get('demo') ?? 'live';
  const now = Date.now();
  const snap: Snapshot = mode === 'empty' ? fx.emptySnapshot(now) : fx.snapshot(now);
  let seq = snap.seq;
  const sources: FakeEventSource[] = [];
  const pending = new Map<number, ApprovalRequest>(snap.pending.map((p) => [p.id, p]));
  const calls = new Map<number, CallSummary>(snap.recent_calls.map((c) => [c.call_id, c]));
  let policy = fx.policyView();
  let rules = fx.rules(now);
  let nextApproval = 44;
  let callNo = 0;
  let connectClients = fx.connectClients();
  const r = fx.rng(99);

  // Events go out as the engine serialises them (fields that are None left out).
  const emit = (event: WireEvent, ts = Date.now()) => {
    const env = { seq: ++seq, ts_ms: ts, event };
    for (const s of sources) s.emit('message', env);
  };

  const finishApproval = (id: number, status: ApprovalRequest['status'], by: string, reason?: string) => {
    const p = pending.get(id);
    if (!p) return false;
    pending.delete(id);
    emit({ type: 'approval_decided', id, tool: p.tool, status, by, ...(reason ? { reason } : {}) });
    const c = fx.callAt(900 + id, Date.now(), r);
    emit({
      type: 'call_finished',
      call_id: p.call_id,
      tool: p.tool,
      elapsed: Date.now() - p.created_ms,
      outcome:
        status === 'approved'
          ? { status: 'ok', is_error: false, size: c.output_size }
          : status === 'timed_out'
            ? { status: 'err', kind: 'approval_timed_out', message: 'nobody approved the call in time', counts_as_failure: false }
            : { status: 'err', kind: 'denied', message: `a person denied the call${reason ? `: ${reason}` : ''}`, counts_as_failure: false },
    });
    return true;
  };

  const ruleView = (rule: RuleView['rule'], words: string): RuleView => ({ rule, active: true, hits: 0, last_used_ms: null, words, made_where: 'in the console' });

  // Agent clients' plans, changed by the deferral switch (demo only: the engine decides these).
  const clients = fx.CLIENTS.map((c) => ({ ...c }));
  const deferredFor = (tool: string) => clients.filter((c) => c.connected && c.deferred.includes(tool)).map((c) => c.client);
  // Tools pinned as core here (demo only: the engine keeps these and writes the words).
  const pins = new Set<string>();
  const withPin = <T extends { name: string; core: CoreView | null }>(t: T): T =>
    pins.has(t.name) && !t.core ? { ...t, core: { reason: { kind: 'pinned' }, pinned: true, words: 'Pinned as core by a person: every agent that may see it has it in its tools list, even one whose other tools are behind tool_search.' } } : t;

  const route = async (method: Method, path: string, body: unknown): Promise<Response> => {
    if (mode === 'down') throw new TypeError('Failed to fetch');
    const url = new URL(path, location.origin);
    const p = url.pathname;
    let m: RegExpExecArray | null;
    if (p === '/api/snapshot') {
      if (mode === 'loading') return new Promise<Response>(() => {});
      const fresh = mode === 'empty' ? fx.emptySnapshot(now) : fx.snapshot(now);
      const tools = fresh.tools.map((t) => withPin({ ...t, deferred_for: pins.has(t.name) ? [] : deferredFor(t.name) }));
      return json({ ...fresh, tools, clients: mode === 'empty' ? fresh.clients : clients, seq, pending: [...pending.values()] });
    }
    if ((m = /^\/api\/calls\/(\d+)$/.exec(p))) {
      const c = calls.get(Number(m[1])) ?? fx.callAt(Number(m[1]), Date.now(), r);
      return json(fx.callDetail(c));
    }
    if (p === '/api/audit') {
      const before = Number(url.searchParams.get('before') ?? Infinity);
      const tool = url.searchParams.get('tool');
      const outcome = url.searchParams.get('outcome');
      const caller = url.searchParams.get('caller');
      const all = fx.recentCalls(now, 1500).filter(
        (c) =>
          c.id < before &&
          (!tool || c.tool.includes(tool)) &&
          (!caller || c.caller.includes(caller)) &&
          (!outcome || c.outcome === outcome || (outcome === 'denied' && c.error_kind === 'denied')),
      );
      const limit = Number(url.searchParams.get('limit') ?? 100);
      const rows = all.slice(0, limit);
      // The detail of a row the audit page lists is that row's call.
      for (const c of rows) calls.set(c.call_id, c);
      return json({ rows, next_before: rows.length === limit ? (rows[rows.length - 1]?.id ?? null) : null });
    }
    if ((m = /^\/api\/approvals\/(\d+)$/.exec(p))) {
      const id = Number(m[1]);
      const req = pending.get(id) ?? snap.recent_approvals.find((x) => x.id === id);
      if (!req) return err(404, 'not_found', `No approval request #${id}.`);
      const recent = fx.recentCalls(now, 60).filter((c) => c.tool === req.tool || c.tool === 'fs_read').slice(0, 6);
      // Demo data: the engine makes the real offer from the request.
      const scope = req.status === 'pending' ? { args: [], exact: true, caller: true, narrowest: 'tool,args,caller', ttl_s: 86_400 } : null;
      return json({ request: req, caller_recent: recent, scope });
    }
    if ((m = /^\/api\/approvals\/(\d+)\/(approve|deny|scope)$/.exec(p))) {
      const id = Number(m[1]);
      const b = (body ?? {}) as { reason?: string; scope?: string; always?: { scope: string; ttl_s?: number } };
      const allowed = m[2] === 'approve' ? ['always'] : m[2] === 'deny' ? ['reason', 'always'] : ['scope', 'ttl_s'];
      const unknown = unknownField(body, allowed);
      if (unknown) return err(422, 'invalid', `unknown field \`${unknown.split('.').pop()}\`, expected one of ${allowed.join(', ')}`, unknown);
      const req = pending.get(id);
      if (m[2] === 'scope') {
        const scope = b.scope ?? '';
        const covers = !/tool=(?!\*|shell|fs|github|db|slack)/.test(scope);
        const preview: ScopePreview = {
          text: scope.replace(/^tool(?=,|$)/, `tool=${req?.tool ?? 'tool'}`).replace(/,caller(?=,|$)/, `,caller=[socket client ${req?.caller.client_name ?? '?'} exe ${req?.caller.exe ?? '?'} uid 1000]`),
          covers_request: covers,
          words: covers
            ? `Every call of \`${req?.tool ?? 'tool'}\`${scope.includes('/') ? ' whose arguments match the patterns' : ''}${scope.includes('caller') ? `, from ${req?.caller.client_name ?? 'this caller'}` : ''}.`
            : 'This scope does not cover the request being decided.',
          problem: covers ? null : 'the scope does not cover the request being decided; widen it or decide once',
          also_allows: covers && !scope.includes('caller') ? 'Also allows the same call from any caller.' : null,
        };
        return json(preview);
      }
      if (!req) return err(409, 'stale', `Approval request #${id} is already closed; nothing was changed.`);
      const status = m[2] === 'approve' ? 'approved' : 'denied';
      finishApproval(id, status, 'console', b.reason);
      let made: RuleView['rule'] | null = null;
      if (b.always) {
        made = {
          id: rules.length + 10,
          effect: status === 'approved' ? 'allow' : 'deny',
          scope: { tool: req.tool },
          scope_text: b.always.scope,
          reason: b.reason ?? null,
          created_ms: Date.now(),
          created_by: 'console',
          from_request: id,
          expires_ms: b.always.ttl_s ? Date.now() + b.always.ttl_s * 1000 : null,
          revoked_ms: null,
        };
        rules = [ruleView(made, `${status === 'approved' ? 'Allow' : 'Deny'} every call of \`${req.tool}\`, until revoked.`), ...rules];
        emit({ type: 'approval_rule_changed', rule_id: made.id, change: 'added', effect: made.effect, scope: made.scope_text });
      }
      const now_ms = Date.now();
      const decided: DecidedView = {
        request: { ...req, status, decided_ms: now_ms, decided_by: 'console', decision_reason: b.reason ?? null, rule_id: made?.id ?? null, waiting: false },
        rule: made,
        decided_by: 'console',
      };
      return json(decided);
    }
    if (p === '/api/rules') return json(rules);
    if ((m = /^\/api\/rules\/(\d+)$/.exec(p)) && method === 'DELETE') {
      const id = Number(m[1]);
      const v = rules.find((x) => x.rule.id === id);
      if (!v) return err(404, 'not_found', `No remembered rule #${id}.`);
      rules = rules.filter((x) => x.rule.id !== id);
      emit({ type: 'approval_rule_changed', rule_id: id, change: 'revoked', effect: v.rule.effect, scope: v.rule.scope_text });
      return json({ ...v.rule, revoked_ms: Date.now() });
    }
    if ((m = /^\/api\/breakers\/([^/]+)\/reset$/.exec(p))) {
      const tool = decodeURIComponent(m[1] ?? '');
      emit({ type: 'breaker_transition', tool, shown_as: null, from: 'open', to: 'closed' });
      return json({ reset: true });
    }
    if ((m = /^\/api\/servers\/([^/]+)\/restart$/.exec(p))) {
      const name = decodeURIComponent(m[1] ?? '');
      const s = snap.servers.find((x) => x.server === name);
      if (!s) return err(404, 'not_found', `No server named ${name}.`);
      emit({ type: 'server_status', server: name, state: 'restarting', tools: s.tools });
      setTimeout(() => emit({ type: 'server_status', server: name, state: 'ready', tools: s.tools }), 1500);
      const answer: ServerStatus = { ...s, state: 'restarting', restarts: s.restarts + 1 };
      return json(answer);
    }
    if ((m = /^\/api\/servers\/([^/]+)\/stderr$/.exec(p))) {
      const after = Number(url.searchParams.get('after') ?? 0);
      const n = after === 0 ? 40 : Math.floor(r() * 3);
      const page: StderrPage = { lines: fx.stderrLines(decodeURIComponent(m[1] ?? ''), after + 1, n), next: after + n, skipped: 0 };
      return json(page);
    }
    if ((m = /^\/api\/pins\/([^/]+)\/approve$/.exec(p))) {
      const tool = decodeURIComponent(m[1] ?? '');
      emit({ type: 'tool_registered', tool, source: 'mcp:web' });
      return json({ ...fx.pinDiff(now).pin, status: 'pinned' });
    }
    if ((m = /^\/api\/pins\/([^/]+)$/.exec(p))) return json(fx.pinDiff(now));
    if (p === '/api/tools/search') {
      // A stand-in for the engine's BM25 index: a tool matches when its name
      // or summary holds a word of the query, best with most words.
      const words = (url.searchParams.get('q') ?? '').toLowerCase().split(/\W+/).filter((w) => w.length > 2);
      if (words.length === 0) return err(400, 'bad_request', 'search takes `q` (the words) and an optional `limit`');
      const marked = (text: string): Marked[] =>
        text.split(/(\w+)/).filter(Boolean).map((part) => ({ text: part, hit: words.some((w) => part.toLowerCase().startsWith(w)) }));
      const found = fx.TOOLS.map((tool) => ({ tool: { ...tool, deferred_for: deferredFor(tool.name) }, name: marked(tool.name), summary: marked(tool.summary), matched_in: [] }))
        .map((x) => ({ x, n: [...x.name, ...x.summary].filter((r) => r.hit).length }))
        .filter((y) => y.n > 0)
        .sort((a, b) => b.n - a.n)
        .map((y) => y.x);
      return json(found satisfies ToolMatch[]);
    }
    if ((m = /^\/api\/clients\/([^/]+)\/deferral$/.exec(p)) && method === 'PUT') {
      const name = decodeURIComponent(m[1] ?? '');
      const mode = (body as DeferralBody).mode;
      const c = clients.find((x) => x.client === name);
      if (!c) return err(404, 'not_found', `No agent client named ${name}.`);
      const inForce = mode ?? 'auto';
      const deferrable = [...c.deferred, ...c.listed.filter((n) => !fx.TOOLS.some((t) => t.name === n && t.source === 'builtin') && !n.startsWith('tool_'))];
      const builtins = fx.TOOLS.filter((t) => t.source === 'builtin').map((t) => t.name);
      const deferring = inForce !== 'off';
      Object.assign(c, {
        mode: inForce,
        chosen: mode,
        deferring,
        listed: deferring ? [...builtins, 'tool_search', 'tool_describe', 'tool_call'] : [...builtins, ...deferrable],
        deferred: deferring ? deferrable : [],
        listed_tokens: deferring ? 2_140 : 2_140 + 23_870,
        deferred_tokens: deferring ? 23_870 : 0,
        words: deferring ? `Deferral is on: ${deferrable.length} tools are behind tool_search.` : `Deferral is off: all ${deferrable.length} tools are listed.`,
      });
      return json(c);
    }
    if ((m = /^\/api\/tools\/([^/]+)\/core$/.exec(p)) && method === 'PUT') {
      const name = decodeURIComponent(m[1] ?? '');
      const { pinned } = body as CorePinBody;
      const changed = pins.has(name) !== pinned;
      if (pinned) pins.add(name);
      else pins.delete(name);
      const t = fx.TOOLS.find((x) => x.name === name);
      const summary = t ? withPin({ ...t, deferred_for: pinned ? [] : deferredFor(name) }) : null;
      return json({ tool: name, pinned, changed, summary, clients } satisfies CorePinned);
    }
    if ((m = /^\/api\/tools\/([^/]+)$/.exec(p))) {
      const name = decodeURIComponent(m[1] ?? '');
      const t = fx.TOOLS.find((x) => x.name === name);
      if (!t) return err(404, 'not_found', `No tool named ${name}.`);
      return json(fx.toolDetail(t, now));
    }
    if (p === '/api/policy' && method === 'GET') return json(policy);
    if (p === '/api/policy/validate') return json(validate(policy.doc, body as PolicyDoc));
    if (p === '/api/policy' && method === 'PUT') {
      const put = body as PolicyPut;
      if (put.base_version !== policy.version) {
        return err(409, 'conflict', `the policy changed since this edit was started (version ${put.base_version} → ${policy.version}); nothing was saved`);
      }
      const v = validate(policy.doc, put.doc);
      if (!v.ok) return err(422, 'invalid', `the edit is invalid: ${v.errors.map((e) => e.message).join('; ')}`, v.errors[0]?.field, v.errors);
      policy = { ...policy, doc: { ...put.doc, version: policy.version + 1 }, version: policy.version + 1 };
      emit({ type: 'policy_reloaded', version: policy.version });
      const applied: Applied = { version: policy.version, diff: v.diff, warnings: v.warnings, restart_needed: policy.restart_needed };
      return json(applied);
    }
    if (p === '/api/policy/test') {
      const t = body as PolicyTestInput;
      const cmd = JSON.stringify(t.args ?? {});
      const answer = (verdict: PolicyTestResult['verdict'], rule: string, reason: string): Response =>
        json({ tool: t.tool, verdict, risk: verdict === 'ask' ? 'high' : 'low', rule, reason } satisfies PolicyTestResult);
      if (/rm\s+-r|rm\s+-f/.test(cmd)) return answer('ask', 'default:shell-rm-recursive', 'Deletes files recursively: `rm` with -r/-f can remove a whole tree.');
      if (policy.doc.denied_tools.some((g) => new RegExp(`^${g.replace(/\*/g, '.*')}$`).test(t.tool))) return answer('deny', 'allowlist', `hidden from agents: matches deny pattern`);
      return answer('allow', 'preset:default', 'Low risk runs without asking under the default preset.');
    }
    if (p === '/api/connect') return json(fx.connectInfo());
    if (p === '/api/connect/clients') return json({ home: '/home/ada', clients: connectClients });
    if (p === '/api/connect/plan') {
      const b = body as ConnectPlanBody;
      return json(fx.connectPlan(b.client, b.action));
    }
    if (p === '/api/connect/apply') {
      const plan = (body as ConnectApplyBody).plan;
      connectClients = connectClients.map((c) =>
        c.id !== plan.client
          ? c
          : plan.action === 'connect' || plan.action === 'disconnect'
            ? { ...c, connected: plan.action === 'connect', connected_at: plan.action === 'connect' ? '20261205T101500Z' : null }
            : { ...c, hooks: c.hooks && { ...c.hooks, installed: plan.action === 'install_hooks' } },
      );
      emit({ type: 'policy_reloaded', version: policy.version });
      return json({ plan, backups: plan.files.map((f) => `${f.path}.toolgate-20261205T101500Z.bak`), warnings: [] });
    }
    if (p === '/api/health')
      return json({
        process: { rss_bytes: 41_236 * 1024, peak_rss_bytes: 60_112 * 1024, threads: 9, open_fds: 37 },
        agent_connections: 3,
        control_connections: 0,
      });
    return err(404, 'not_found', `No such endpoint: ${method} ${p}`);
  };

  setTransport({
    request: async (method, path, body) => {
      await new Promise((res) => setTimeout(res, 120 + Math.random() * 200));
      return route(method, path, body);
    },
  });

  // --- the live stream
  const tick = () => {
    const n = Math.floor(r() * 4);
    for (let i = 0; i < n; i++) {
      const c = fx.callAt(20_000 + callNo++, Date.now(), r);
      calls.set(c.call_id, c);
      emit({ type: 'call_received', call_id: c.call_id, tool: c.tool, caller: c.caller, session: c.session, preview: c.preview });
      setTimeout(
        () =>
          emit({
            type: 'call_finished',
            call_id: c.call_id,
            tool: c.tool,
            elapsed: c.elapsed_us,
            outcome:
              c.outcome === 'error'
                ? { status: 'err', kind: errorKind(c.error_kind ?? '') ?? 'internal', message: c.error_message ?? '', counts_as_failure: fx.demoCounts(c.error_kind) }
                : { status: 'ok', is_error: c.outcome === 'tool_error', size: c.output_size },
          }),
        Math.min(3000, c.elapsed_us / 1000),
      );
    }
    for (const p of pending.values()) if (p.expires_ms <= Date.now()) finishApproval(p.id, 'timed_out', 'timeout');
  };
  const newApproval = () => {
    const id = nextApproval++;
    const req: ApprovalRequest = {
      ...(fx.pending(Date.now())[id % 3] as ApprovalRequest),
      id,
      call_id: 80_000 + id,
      created_ms: Date.now(),
      expires_ms: Date.now() + 60_000,
      args: { command: `npm run test -- --shard=${id % 4 + 1}/4`, cwd: '~/proj/web' },
      preview: `npm run test -- --shard=${id % 4 + 1}/4`,
      tool: 'shell_exec',
      risk: 'high',
      rule: 'default:name(shell_exec)',
      reason: 'Runs a shell command: anything the user can do.',
    };
    pending.set(id, req);
    emit({ type: 'call_received', call_id: req.call_id, tool: req.tool, caller: 'claude-desktop (pid 48213)', session: 's-3', preview: req.preview });
    emit({
      type: 'approval_requested',
      id,
      call_id: req.call_id,
      tool: req.tool,
      preview: req.preview,
      risk: req.risk,
      rule: req.rule,
      reason: req.reason,
      caller: req.caller,
      expires_ms: req.expires_ms,
    });
  };

  const burst = () => {
    // 10,000 calls at about 2,000 a second (scripts/burst.mjs measures the page meanwhile).
    let sent = 0;
    const t = setInterval(() => {
      for (let i = 0; i < 20 && sent < 10_000; i++, sent++) {
        const c = fx.callAt(100_000 + sent, Date.now(), r);
        emit({ type: 'call_received', call_id: c.call_id, tool: c.tool, caller: c.caller, session: c.session, preview: c.preview });
        emit({ type: 'call_finished', call_id: c.call_id, tool: c.tool, elapsed: c.elapsed_us, outcome: { status: 'ok', is_error: false, size: c.output_size } });
      }
      if (sent >= 10_000) clearInterval(t);
    }, 10);
  };


  if (mode === 'live' || mode === 'reloaded') {
    setInterval(tick, 350);
    setInterval(newApproval, 45_000);
  }

  return {
    open(url: string) {
      const s = new FakeEventSource(url);
      sources.push(s);
      setTimeout(() => {
        s.onopen?.({});
        // The pretend engine keeps no replay ring: start the burst once someone listens.
        if (mode === 'burst' && sources.length === 1) burst();
        if (mode === 'reloaded' && sources.length === 1) s.emit('reload', { seq });
      }, 50);
      return s;
    },
  };
}

function validate(before: PolicyDoc, doc: PolicyDoc): Validation {
  const errors: FieldError[] = [];
  doc.rules.forEach((rule, i) => {
    if (!rule.tool.trim()) errors.push({ field: `rules[${i}].tool`, message: 'Give a tool-name glob, e.g. shell_exec or github__*.' });
    if (!rule.risk && !rule.verdict) errors.push({ field: `rules[${i}]`, message: `policy.rules[${i}]: set either risk or verdict.` });
    if (rule.regex) {
      try {
        new RegExp(rule.regex);
      } catch {
        errors.push({ field: `rules[${i}].regex`, message: `policy.rules[${i}].regex: not a valid regular expression.` });
      }
    }
  });
  doc.denied_tools.forEach((g, i) => {
    if (!g.trim()) errors.push({ field: `denied_tools[${i}]`, message: 'An empty glob matches nothing; remove it.' });
  });
  const toml = (d: PolicyDoc) =>
    [
      ...(d.allowed_tools ? [`allowed_tools = ${JSON.stringify(d.allowed_tools)}`] : []),
      `denied_tools = ${JSON.stringify(d.denied_tools)}`,
      '',
      '[policy]',
      `preset = "${d.preset}"`,
      ...(d.ask_at ? [`ask_at = "${d.ask_at}"`] : []),
      ...(d.approval_timeout_s ? [`approval_timeout_s = ${d.approval_timeout_s}`] : []),
      ...d.rules.flatMap((r) => [
        '',
        '[[policy.rules]]',
        `tool = "${r.tool}"`,
        ...(r.arg ? [`arg = "${r.arg}"`] : []),
        ...(r.glob ? [`glob = "${r.glob}"`] : []),
        ...(r.path ? [`path = "${r.path}"`] : []),
        ...(r.regex ? [`regex = '${r.regex}'`] : []),
        ...(r.risk ? [`risk = "${r.risk}"`] : []),
        ...(r.verdict ? [`verdict = "${r.verdict}"`] : []),
        ...(r.timeout_s ? [`timeout_s = ${r.timeout_s}`] : []),
        ...(r.reason ? [`reason = "${r.reason}"`] : []),
      ]),
    ];
  const a = toml(before);
  const b = toml(doc);
  const lines: string[] = [];
  const max = Math.max(a.length, b.length);
  let changed = false;
  for (let i = 0; i < max; i++) {
    if (a[i] === b[i]) lines.push(` ${a[i] ?? ''}`);
    else {
      changed = true;
      if (a[i] !== undefined) lines.push(`-${a[i]}`);
      if (b[i] !== undefined) lines.push(`+${b[i]}`);
    }
  }
  const diff = changed ? ['--- config.toml (running)', '+++ config.toml (edited)', '@@ -1 +1 @@', ...lines].join('\n') : '';
  if (errors.length) return { ok: false, diff: '', errors, warnings: [] };
  const names = fx.TOOLS.map((t) => t.name);
  const globRe = (g: string) => new RegExp(`^${g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);
  const warnings = [...(doc.allowed_tools ?? []), ...doc.denied_tools].filter((g) => g.trim() && !names.some((n) => globRe(g).test(n)));
  return { ok: true, diff, errors, warnings };
}
