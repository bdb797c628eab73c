/**
 * The console API over HTTP: JSON in, JSON out, the session cookie sent
 * same-origin, and every failure turned into one typed {@link ApiError}
 * whose message says what to do.
 *
 * The transport is swappable (`setTransport`) so the dev-only demo can answer
 * from fixtures; production code never calls it.
 */
import type {
  ApiErrorBody,
  ApiErrorCode,
  ApprovalDetail,
  ApproveBody,
  AuditPage,
  AuditQuery,
  CallDetail,
  ConnectInfo,
  Decided,
  DenyBody,
  PinDiff,
  PinRecord,
  PolicyApplied,
  PolicyDoc,
  PolicyPut,
  PolicyTestBody,
  PolicyTestResult,
  PolicyValidation,
  PolicyView,
  RememberedRule,
  ScopePreview,
  ServerStatus,
  Snapshot,
  StderrPage,
  ToolDetail,
} from './types';

/** A failed API call. `code` is the server's, or `network` when nothing answered. */
export class ApiError extends Error {
  readonly code: ApiErrorCode | 'network';
  readonly status: number;
  readonly field: string | undefined;

  constructor(code: ApiErrorCode | 'network', status: number, message: string, field?: string) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.field = field;
  }

  /** The approval or policy moved on under us (409). */
  get isStale(): boolean {
    return this.code === 'stale';
  }
}

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** How requests leave the page. */
export interface Transport {
  request(method: Method, path: string, body?: unknown): Promise<Response>;
}

const fetchTransport: Transport = {
  request(method, path, body) {
    const init: RequestInit = {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { Accept: 'application/json' } : { Accept: 'application/json', 'Content-Type': 'application/json' },
    };
    if (body !== undefined) init.body = JSON.stringify(body);
    return fetch(path, init);
  },
};

let transport: Transport = fetchTransport;

/** Replaces the transport (dev demo and tests only). */
export function setTransport(t: Transport): void {
  transport = t;
}

const CODES: readonly string[] = ['unauthorized', 'forbidden', 'not_found', 'stale', 'invalid', 'unavailable', 'internal'];

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
    case 422:
    case 400:
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
  const e = (body as Partial<ApiErrorBody> | null)?.error;
  if (e && typeof e.message === 'string') {
    const code = CODES.includes(e.code as string) ? (e.code as ApiErrorCode) : codeForStatus(res.status);
    return new ApiError(code, res.status, e.message, e.field);
  }
  const code = codeForStatus(res.status);
  const fallback =
    code === 'unauthorized'
      ? 'This console session has ended. Run `toolgate console` for a fresh link.'
      : `The engine answered ${res.status} ${res.statusText || ''}`.trim() + '.';
  return new ApiError(code, res.status, fallback);
}

/** One JSON request. */
export async function request<T>(method: Method, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await transport.request(method, path, body);
  } catch {
    throw new ApiError('network', 0, 'Nothing answers at this address. Is `toolgate serve` running?');
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

/** Every endpoint of console-design.md, typed. */
export const api = {
  snapshot: () => request<Snapshot>('GET', '/api/snapshot'),
  call: (callId: number) => request<CallDetail>('GET', `/api/calls/${callId}`),
  audit: (q: AuditQuery) => request<AuditPage>('GET', `/api/audit${query(q)}`),
  auditExportUrl: (q: AuditQuery, format: 'jsonl' | 'csv') => {
    const { before: _b, limit: _l, ...filters } = q;
    return `/api/audit/export${query({ ...filters, format })}`;
  },
  approval: (id: number) => request<ApprovalDetail>('GET', `/api/approvals/${id}`),
  approve: (id: number, body: ApproveBody = {}) => request<Decided>('POST', `/api/approvals/${id}/approve`, body),
  deny: (id: number, body: DenyBody = {}) => request<Decided>('POST', `/api/approvals/${id}/deny`, body),
  previewScope: (id: number, scope: string) =>
    request<ScopePreview>('POST', `/api/approvals/${id}/scope`, { scope }),
  rules: () => request<RememberedRule[]>('GET', '/api/rules'),
  revokeRule: (id: number) => request<RememberedRule>('DELETE', `/api/rules/${id}`),
  resetBreaker: (tool: string) => request<{ reset: boolean }>('POST', `/api/breakers/${enc(tool)}/reset`),
  restartServer: (name: string) => request<ServerStatus>('POST', `/api/servers/${enc(name)}/restart`),
  stderr: (name: string, after?: number) =>
    request<StderrPage>('GET', `/api/servers/${enc(name)}/stderr${query({ after })}`),
  pin: (tool: string) => request<PinDiff>('GET', `/api/pins/${enc(tool)}`),
  approvePin: (tool: string) => request<PinRecord>('POST', `/api/pins/${enc(tool)}/approve`),
  tool: (name: string) => request<ToolDetail>('GET', `/api/tools/${enc(name)}`),
  policy: () => request<PolicyView>('GET', '/api/policy'),
  validatePolicy: (doc: PolicyDoc) => request<PolicyValidation>('POST', '/api/policy/validate', doc),
  putPolicy: (body: PolicyPut) => request<PolicyApplied>('PUT', '/api/policy', body),
  testPolicy: (body: PolicyTestBody) => request<PolicyTestResult>('POST', '/api/policy/test', body),
  connect: () => request<ConnectInfo>('GET', '/api/connect'),
};

export type Api = typeof api;
