/**
 * How figures and states read on screen. Every state comes with a word and
 * an icon, never colour alone (docs/architecture/console.md, "Colours").
 */
import type {
  ApprovalStatus,
  BreakerState,
  Ended,
  CallOutcome,
  ErrorKind,
  Latency,
  Risk,
  ServerState,
  Trust,
} from './api/types';
import { APPROVAL_STATUS_LABEL, ERROR_KIND_LABEL, SERVER_DOWN_STATES } from './api/types';
import type { IconName } from './icons';

/** A colour token of the design system. */
export type Tone = 'ok' | 'warn' | 'high' | 'danger' | 'info' | 'changed' | 'muted';

/** What a state looks like: a tone, an icon and a word. */
export interface Look {
  tone: Tone;
  icon: IconName;
  word: string;
}

const nf0 = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
const nf1 = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

/** A duration in microseconds: `840 µs`, `12.4 ms`, `3.2 s`, `2 min 5 s`. */
export function duration(us: number): string {
  if (!Number.isFinite(us) || us < 0) return '—';
  if (us < 1_000) return `${nf0.format(us)} µs`;
  if (us < 1_000_000) {
    const ms = us / 1_000;
    return `${ms < 100 ? nf1.format(ms) : nf0.format(ms)} ms`;
  }
  const s = us / 1_000_000;
  if (s < 60) return `${s < 10 ? nf1.format(s) : nf0.format(s)} s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  if (m < 60) return rest ? `${m} min ${rest} s` : `${m} min`;
  const h = Math.floor(m / 60);
  const rm = m - h * 60;
  return rm ? `${h} h ${rm} min` : `${h} h`;
}

/** Milliseconds as a duration. */
export function durationMs(ms: number): string {
  return duration(ms * 1_000);
}

/** A countdown: `1:05`, `0:09`, `12:00`; `0:00` once past. */
export function countdown(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1_000));
  const m = Math.floor(total / 60);
  const s = total % 60;
  if (m >= 60) return `${Math.floor(m / 60)}:${String(m % 60).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
  return `${m}:${String(s).padStart(2, '0')}`;
}

/** Seconds left, in words: `12 s`, `2 min 5 s` (for "probe in 12 s", "retrying in 4 s"). */
export function secondsLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1_000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  const r = s % 60;
  return r ? `${m} min ${r} s` : `${m} min`;
}

/** A past time relative to now: `just now`, `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function relative(ts_ms: number, now_ms: number): string {
  const d = now_ms - ts_ms;
  if (d < 0) {
    const ahead = -d;
    if (ahead < 5_000) return 'just now';
    if (ahead < 3_600_000) return `in ${secondsLeft(ahead)}`;
    if (ahead < 86_400_000) return `in ${Math.round(ahead / 3_600_000)} h`;
    return `in ${Math.round(ahead / 86_400_000)} d`;
  }
  if (d < 5_000) return 'just now';
  if (d < 60_000) return `${Math.floor(d / 1_000)} s ago`;
  if (d < 3_600_000) return `${Math.floor(d / 60_000)} min ago`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)} h ago`;
  return `${Math.floor(d / 86_400_000)} d ago`;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** Clock time with seconds (`14:03:27`), local. */
export function clock(ts_ms: number): string {
  const d = new Date(ts_ms);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** Clock time with milliseconds (`14:03:27.042`) for the live feed. */
export function clockMs(ts_ms: number): string {
  return `${clock(ts_ms)}.${String(new Date(ts_ms).getMilliseconds()).padStart(3, '0')}`;
}

/** Date and time (`2026-05-04 14:03:27`), local. */
export function dateTime(ts_ms: number): string {
  const d = new Date(ts_ms);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${clock(ts_ms)}`;
}

/** Bytes: `0 B`, `512 B`, `1.5 KB`, `12 MB` (1 KB = 1024 B). */
export function bytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v < 10 ? nf1.format(v) : nf0.format(v)} ${units[u]}`;
}

/** A count with thousands separators. */
export function count(n: number): string {
  return nf0.format(n);
}

/** Estimated tokens: `1 token`, `41,250 tokens`. */
export function tokens(n: number): string {
  return plural(n, 'token');
}

/** A percentage, 0–100: `0%`, `4.2%`, `37%`. */
export function percent(p: number): string {
  if (!Number.isFinite(p)) return '—';
  return `${p > 0 && p < 10 ? nf1.format(p) : nf0.format(p)}%`;
}

/** "1 call" / "3 calls". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** One figure of a breaker tile's call-time line. */
export interface TimeFigure {
  label: string;
  value: string;
}

/**
 * A breaker tile's call times, said over the calls they come from: the
 * tool's last calls however old, not the tile's two-minute count (a quiet
 * tool has call times and "0 calls in 2 min"). Only the figures that many
 * calls can carry: a 90th or 99th percentile of a few calls is just the
 * slowest one.
 */
export function callTimes(lat: Latency): { over: string; figures: TimeFigure[]; words: string } {
  if (lat.calls <= 1) {
    const took = durationMs(lat.p50);
    return { over: 'Last call', figures: [{ label: 'took', value: took }], words: `its last call took ${took}` };
  }
  const over = `Last ${count(lat.calls)} calls`;
  const figures: TimeFigure[] = [{ label: 'median', value: durationMs(lat.p50) }];
  if (lat.calls >= 10) figures.push({ label: 'p90', value: durationMs(lat.p90) }, { label: 'p99', value: durationMs(lat.p99) });
  const spoken = figures.map((f) => `${{ median: 'median', p90: '90th percentile', p99: '99th percentile' }[f.label] ?? f.label} ${f.value}`);
  return { over, figures, words: `call time over its last ${count(lat.calls)} calls: ${spoken.join(', ')}` };
}

// ---------------------------------------------------------------- states

const RISK: Record<Risk, Look> = {
  low: { tone: 'info', icon: 'shield', word: 'Low' },
  medium: { tone: 'warn', icon: 'shield-alert', word: 'Medium' },
  high: { tone: 'high', icon: 'alert', word: 'High' },
  critical: { tone: 'danger', icon: 'octagon', word: 'Critical' },
};

export function riskLook(r: Risk): Look {
  return RISK[r];
}

const RISK_RANK: Record<Risk, number> = { low: 0, medium: 1, high: 2, critical: 3 };
export function riskRank(r: Risk): number {
  return RISK_RANK[r];
}

const BREAKER: Record<BreakerState, Look> = {
  closed: { tone: 'ok', icon: 'check-circle', word: 'Closed' },
  half_open: { tone: 'warn', icon: 'half', word: 'Half-open' },
  open: { tone: 'danger', icon: 'x-circle', word: 'Open' },
};

export function breakerLook(s: BreakerState): Look {
  return BREAKER[s];
}

const SERVER: Record<ServerState, Look> = {
  starting: { tone: 'info', icon: 'loader', word: 'Starting' },
  ready: { tone: 'ok', icon: 'check-circle', word: 'Ready' },
  restarting: { tone: 'warn', icon: 'refresh', word: 'Restarting' },
  failed: { tone: 'danger', icon: 'x-circle', word: 'Failed' },
  stopped: { tone: 'muted', icon: 'stop', word: 'Stopped' },
};

export function serverLook(s: ServerState): Look {
  return SERVER[s];
}

/** Whether a server counts as down, by the engine's rule (`ServerState::is_down`). */
export function serverDown(s: ServerState): boolean {
  return SERVER_DOWN_STATES.includes(s);
}

const TRUST: Record<Trust, Look> = {
  builtin: { tone: 'ok', icon: 'box', word: 'Built-in' },
  trusted: { tone: 'ok', icon: 'check', word: 'Trusted' },
  external: { tone: 'warn', icon: 'globe', word: 'External' },
  untrusted: { tone: 'danger', icon: 'alert', word: 'Untrusted' },
};

/**
 * Where a tool came from, as people say it: `built-in`, `plugin NAME`,
 * `server NAME` (an upstream MCP server), `agent ID` (`Source::label`).
 */
export function sourceWord(source: string): string {
  if (source === 'builtin') return 'built-in';
  const [kind, ...rest] = source.split(':');
  const name = rest.join(':');
  const word = kind === 'mcp' ? 'server' : kind;
  return name ? `${word} ${name}` : (word ?? source);
}

export function trustLook(t: Trust): Look {
  return TRUST[t];
}

// Tones and icons are the console's; the words are the engine's.
const APPROVAL: Record<ApprovalStatus, Omit<Look, 'word'>> = {
  pending: { tone: 'warn', icon: 'clock' },
  approved: { tone: 'ok', icon: 'check-circle' },
  denied: { tone: 'danger', icon: 'x-circle' },
  timed_out: { tone: 'high', icon: 'timer-off' },
  expired: { tone: 'muted', icon: 'slash' },
  cancelled: { tone: 'muted', icon: 'slash' },
};

export function approvalLook(s: ApprovalStatus): Look {
  return { ...APPROVAL[s], word: APPROVAL_STATUS_LABEL[s] };
}

/**
 * How a call ended, as a live row or the audit log says it (the engine's
 * `CallOutcome`, whose `unknown` covers a value newer than this UI), or
 * `running` (live only).
 */
export interface CallEnd {
  outcome: CallOutcome | 'running';
  /** The error class (absent when the engine did not know it). */
  error_kind?: ErrorKind | null | undefined;
}

const ERROR_LOOKS: Record<ErrorKind, Omit<Look, 'word'>> = {
  unknown_tool: { tone: 'danger', icon: 'help' },
  not_allowed: { tone: 'danger', icon: 'slash' },
  blocked: { tone: 'danger', icon: 'slash' },
  loop_detected: { tone: 'high', icon: 'repeat' },
  invalid_args: { tone: 'high', icon: 'braces' },
  guard_denied: { tone: 'danger', icon: 'shield-x' },
  policy_denied: { tone: 'danger', icon: 'shield-x' },
  needs_approval: { tone: 'warn', icon: 'user' },
  denied: { tone: 'danger', icon: 'user-x' },
  approval_timed_out: { tone: 'high', icon: 'timer-off' },
  breaker_open: { tone: 'danger', icon: 'zap-off' },
  timeout: { tone: 'high', icon: 'timer-off' },
  rate_limit: { tone: 'high', icon: 'gauge' },
  connection: { tone: 'danger', icon: 'plug' },
  upstream_5xx: { tone: 'danger', icon: 'server' },
  tool_failed: { tone: 'danger', icon: 'x-circle' },
  internal: { tone: 'danger', icon: 'bug' },
  cancelled: { tone: 'muted', icon: 'slash' },
};

/** The error class as `ErrorKind`, or null for a class newer than this UI. */
export function errorKind(k: string): ErrorKind | null {
  return Object.hasOwn(ERROR_LOOKS, k) ? (k as ErrorKind) : null;
}

/** An error class in a word; unknown (newer) classes read as themselves. */
export function errorLook(k: string): Look {
  const kind = errorKind(k);
  return kind ? { ...ERROR_LOOKS[kind], word: ERROR_KIND_LABEL[kind] } : { tone: 'danger', icon: 'x-circle', word: k.replaceAll('_', ' ') };
}

export function callLook(c: CallEnd, waiting = false): Look {
  switch (c.outcome) {
    case 'running':
      return waiting ? { tone: 'warn', icon: 'clock', word: 'Waiting' } : { tone: 'info', icon: 'loader', word: 'Running' };
    case 'ok':
      return { tone: 'ok', icon: 'check-circle', word: 'OK' };
    case 'tool_error':
      return { tone: 'danger', icon: 'x-circle', word: 'Tool error' };
    case 'cancelled':
      return { tone: 'muted', icon: 'slash', word: 'Cancelled' };
    case 'error':
    default:
      if (c.error_kind === 'cancelled') return errorLook('cancelled');
      return c.error_kind ? errorLook(c.error_kind) : { tone: 'danger', icon: 'x-circle', word: 'Error' };
  }
}

/** Error % → health on the Hystrix ramp (green → yellow → orange → red), with a word. */
export function healthLook(error_pct: number): Look {
  if (error_pct < 1) return { tone: 'ok', icon: 'check-circle', word: 'Healthy' };
  if (error_pct < 10) return { tone: 'warn', icon: 'alert', word: 'Degraded' };
  if (error_pct < 25) return { tone: 'high', icon: 'alert', word: 'Unhealthy' };
  return { tone: 'danger', icon: 'x-circle', word: 'Failing' };
}

/**
 * Why a request ended, in one sentence: the engine's words (`ended.cause`),
 * except that a decision this window made reads "by you".
 */
export function endedCause(ended: Ended | null, status: ApprovalStatus, reason: string | null | undefined, mine: boolean): string {
  if (mine && (status === 'approved' || status === 'denied')) {
    const why = reason ? ` — “${reason}”` : '';
    return `${status === 'approved' ? 'Approved' : 'Denied'} by you${why}`;
  }
  return ended?.cause ?? APPROVAL_STATUS_LABEL[status];
}

/** How a request ended, short enough for a list row (`ended.short`, or "By you"). */
export function endedShort(ended: Ended | null, status: ApprovalStatus, mine: boolean): string {
  if (mine && (status === 'approved' || status === 'denied')) return 'By you';
  return ended?.short ?? APPROVAL_STATUS_LABEL[status];
}

/** Short text for a JSON value (used in tables). */
export function preview(v: unknown, max = 80): string {
  let s: string;
  try {
    s = typeof v === 'string' ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  if (s === undefined) s = String(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}
