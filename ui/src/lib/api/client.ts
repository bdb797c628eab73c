/**
 * The console API over HTTP: JSON in, JSON out, the session cookie sent
 * same-origin, and every failure turned into one typed {@link ApiError}
 * whose message says what to do.
 *
 * The transport is swappable (`setTransport`) so the dev-only demo can answer
 * from fixtures; production code never calls it.
 */
import type {
  AlwaysInput,
  ApiErrorCode,
  Applied,
  ApprovalDetail,
  ApproveInput,
  AuditPage,
  AuditQuery,
  CallDetail,
  ClientId,
  ClientView,
  ConnectAction,
  ConnectApplied,
  ConnectApplyBody,
  ConnectClients,
  ConnectInfo,
  ConnectPlan,
  ConnectPlanBody,
  CorePinBody,
  CorePinned,
  DeferMode,
  DeferralBody,
  EngineHealth,
  DecidedView,
  DenyInput,
  ErrorEnvelope,
  ExportFormat,
  FieldError,
  PinDiff,
  PinRecord,
  PolicyDoc,
  TeamCall,
  TeamCallsQuery,
  TeamOutcome,
  TeamView,
  PolicyPut,
  PolicyTestInput,
  PolicyTestResult,
  PolicyView,
  RememberedRule,
  ResetResult,
  RuleView,
  ScopeInput,
  ScopePreview,
  ServerStatus,
  Slice,
  SliceView,
  Snapshot,
  StderrPage,
  ToolDetail,
  ToolMatch,
  Validation,
} from './types';

/** A failed API call. `code` is the server's, or `network` when nothing answered. */
export class ApiError extends Error {
  readonly code: ApiErrorCode | 'network';
  readonly status: number;
  readonly field: string | undefined;
  /** Every field problem of a refused policy edit (the first one is `field`). */
  readonly errors: FieldError[];

  constructor(code: ApiErrorCode | 'network', status: number, message: string, field?: string, errors: FieldError[] = []) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.field = field;
    this.errors = errors;
  }

  /** The approval ended under us (409). */
  get isStale(): boolean {
    return this.code === 'stale';
  }

  /** An edit was based on an older revision than the one in force (409); nothing was saved. */
  get isConflict(): boolean {
    return this.code === 'conflict';
  }
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** How requests leave the page. */
export interface Transport {
  /** `signal` aborts a request whose answer is no longer wanted (a stale search). */
  request(method: Method, path: string, body?: unknown, signal?: AbortSignal): Promise<Response>;
}

const fetchTransport: Transport = {
  request(method, path, body, signal) {
    const init: RequestInit = {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' },
    };
    if (body !== undefined) init.body = JSON.stringify(body);
    if (signal) init.signal = signal;
    return fetch(path, init);
  },
};

let transport: Transport = fetchTransport;

/** Replaces the transport (dev demo and tests only). */
export function setTransport(t: Transport): void {
  transport = t;
}

const CODES: readonly string[] = ['bad_request', 'unauthorized', 'forbidden', 'not_found', 'stale', 'conflict', 'invalid', 'unavailable', 'internal'];

function codeForStatus(status: number): ApiErrorCode {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 409:
      return 'stale';
    case 400:
      return 'bad_request';
    case 422:
      return 'invalid';
    case 503:
      return 'unavailable';
    default:
      return 'internal';
  }
}

/** Reads an error answer into an ApiError; tolerates bodies that are not ours (a proxy's HTML page). */
export async function errorFrom(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  const e = (body as Partial<ErrorEnvelope> | null)?.error;
  if (e && typeof e.message === 'string') {
    const code = CODES.includes(e.code) ? (e.code as ApiErrorCode) : codeForStatus(res.status);
    const errors = Array.isArray(e.errors) ? e.errors : [];
    return new ApiError(code, res.status, e.message, e.field ?? undefined, errors);
  }
  const code = codeForStatus(res.status);
  const fallback =
    code === 'unauthorized'
      ? 'This console session has ended. Run `toolgate console` for a fresh link.'
      : `The engine answered ${res.status} ${res.statusText || ''}`.trim() + '.';
  return new ApiError(code, res.status, fallback);
}

/**
 * A request that reached nothing: the engine stopped, or a restarted one took
 * another port (it keeps its port unless something else holds it). Says what
 * to run for either.
 */
export const NOTHING_ANSWERS =
  'Nothing answers at this address: the engine stopped, or it now runs on another port. Start it with `toolgate serve`, or run `toolgate console` to open the console where it runs.';

/** One JSON request. An aborted one rejects with the signal's reason, never as "nothing answers". */
export async function request<T>(method: Method, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await transport.request(method, path, body, signal);
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new ApiError('network', 0, NOTHING_ANSWERS);
  }
  if (!res.ok) throw await errorFrom(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

const enc = encodeURIComponent;

/** Query string from defined values only. */
export function query(params: object): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    parts.push(`${enc(k)}=${enc(String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/**
 * The `always` part, rebuilt field by field: a caller holding a wider object
 * (a form's state) cannot leak extra keys into the body.
 */
function alwaysInput(a: AlwaysInput): AlwaysInput {
  return a.ttl_s === undefined ? { scope: a.scope } : { scope: a.scope, ttl_s: a.ttl_s };
}

/** Exactly ApproveInput's fields. */
export function approveInput(b: ApproveInput): ApproveInput {
  return b.always ? { always: alwaysInput(b.always) } : {};
}

/** Exactly DenyInput's fields; an empty reason is no reason. */
export function denyInput(b: DenyInput): DenyInput {
  const out: DenyInput = {};
  const reason = b.reason?.trim();
  if (reason) out.reason = reason;
  if (b.always) out.always = alwaysInput(b.always);
  return out;
}

/** Every endpoint of docs/architecture/console-api.md, HTTP API, typed. */
export const api = {
  snapshot: () => request<Snapshot>('GET', '/api/snapshot'),
  call: (callId: number) => request<CallDetail>('GET', `/api/calls/${callId}`),
  audit: (q: AuditQuery) => request<AuditPage>('GET', `/api/audit${query(q)}`),
  auditExportUrl: (q: AuditQuery, format: ExportFormat) => {
    const { before: _b, limit: _l, ...filters } = q;
    return `/api/audit/export${query({ ...filters, format })}`;
  },
  approval: (id: number) => request<ApprovalDetail>('GET', `/api/approvals/${id}`),
  /** The body is exactly ApproveInput: the engine refuses unknown fields (422). */
  approve: (id: number, body: ApproveInput = {}) =>
    request<DecidedView>('POST', `/api/approvals/${id}/approve`, approveInput(body)),
  /** The body is exactly DenyInput: the engine refuses unknown fields (422). */
  deny: (id: number, body: DenyInput = {}) => request<DecidedView>('POST', `/api/approvals/${id}/deny`, denyInput(body)),
  /** `ttl_s` absent = until revoked, as in the decision's `always`. */
  previewScope: (id: number, scope: string, ttl_s: number | undefined) =>
    request<ScopePreview>('POST', `/api/approvals/${id}/scope`, (ttl_s === undefined ? { scope } : { scope, ttl_s }) satisfies ScopeInput),
  team: () => request<TeamView>('GET', '/api/team'),
  /** The team's audit log on the team database, newest first. */
  teamCalls: (q: TeamCallsQuery) => request<TeamCall[]>('GET', `/api/team/calls${query(q)}`),
  /** Sent to the engine that raised the request, which decides it; a request decided first elsewhere answers `took_effect: false`. */
  teamApprove: (engine: string, id: number) => request<TeamOutcome>('POST', `/api/team/${enc(engine)}/${id}/approve`, {} satisfies ApproveInput),
  teamDeny: (engine: string, id: number, reason?: string) =>
    request<TeamOutcome>('POST', `/api/team/${enc(engine)}/${id}/deny`, denyInput(reason === undefined ? {} : { reason })),
  rules: () => request<RuleView[]>('GET', '/api/rules'),
  revokeRule: (id: number) => request<RememberedRule>('DELETE', `/api/rules/${id}`),
  resetBreaker: (tool: string) => request<ResetResult>('POST', `/api/breakers/${enc(tool)}/reset`),
  restartServer: (name: string) => request<ServerStatus>('POST', `/api/servers/${enc(name)}/restart`),
  stderr: (name: string, after?: number) =>
    request<StderrPage>('GET', `/api/servers/${enc(name)}/stderr${query({ after })}`),
  pin: (tool: string) => request<PinDiff>('GET', `/api/pins/${enc(tool)}`),
  approvePin: (tool: string) => request<PinRecord>('POST', `/api/pins/${enc(tool)}/approve`),
  tool: (name: string) => request<ToolDetail>('GET', `/api/tools/${enc(name)}`),
  /** Tools ranked by the index agents' `tool_search` uses, best first, their matched words marked. */
  searchTools: (q: string, limit?: number, signal?: AbortSignal) =>
    request<ToolMatch[]>('GET', `/api/tools/search${query({ q, limit })}`, undefined, signal),
  /** A person's deferral for one agent client (`null`: follow the config again); what it is listed now. */
  chooseDeferral: (client: string, mode: DeferMode | null) =>
    request<ClientView>('PUT', `/api/clients/${enc(client)}/deferral`, { mode } satisfies DeferralBody),
  /** A person pins a tool as core (never deferred, for every agent) or unpins it; the tool's row and every client's plan now. */
  pinCore: (tool: string, pinned: boolean) =>
    request<CorePinned>('PUT', `/api/tools/${enc(tool)}/core`, { pinned } satisfies CorePinBody),
  policy: () => request<PolicyView>('GET', '/api/policy'),
  validatePolicy: (doc: PolicyDoc) => request<Validation>('POST', '/api/policy/validate', doc),
  putPolicy: (body: PolicyPut) => request<Applied>('PUT', '/api/policy', body),
  testPolicy: (body: PolicyTestInput) => request<PolicyTestResult>('POST', '/api/policy/test', body),
  connect: () => request<ConnectInfo>('GET', '/api/connect'),
  /** Every MCP client the engine knows, found on this machine or not, with its files, servers and hooks; the HOME looked in. */
  clients: () => request<ConnectClients>('GET', '/api/connect/clients'),
  /** What an action on a client would change, one diff per file; writes nothing. */
  connectPlan: (client: ClientId, action: ConnectAction) =>
    request<ConnectPlan>('POST', '/api/connect/plan', { client, action } satisfies ConnectPlanBody),
  /** Carries out the plan as shown; `conflict` (409) when a file changed since, and nothing is written. */
  connectApply: (plan: ConnectPlan) => request<ConnectApplied>('POST', '/api/connect/apply', { plan } satisfies ConnectApplyBody),
  health: () => request<EngineHealth>('GET', '/api/health'),
  slice: (slice: Slice) => request<SliceView>('GET', `/api/state/${slice}`),
};

export type Api = typeof api;
