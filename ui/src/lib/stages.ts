/**
 * Stage timings of one call. The engine reports each stage's time
 * *including* the stages it wraps (the pipeline is an onion), in completion
 * order, innermost first. A person wants each stage's own time and where
 * the total went.
 */
import type { StageName } from './api/types';

/**
 * A stage as the engine reports it: a `StageName` in events, plain text in
 * audit rows and call details (so a newer engine's stage still shows).
 */
export type StageText = StageName | (string & {});

export interface StageTime {
  stage: StageText;
  /** Time inside the stage and everything it wraps, µs. */
  inclusive: number;
  /** The stage's own time, µs. */
  self: number;
}

/** Outermost first, with self times (inclusive minus the next inner stage's inclusive). */
export function stageTimes(stages: readonly [StageText, number][]): StageTime[] {
  const inner = [...stages].sort((a, b) => a[1] - b[1]);
  const out: StageTime[] = [];
  let prev = 0;
  for (const [stage, us] of inner) {
    out.push({ stage, inclusive: us, self: Math.max(0, us - prev) });
    prev = us;
  }
  return out.reverse();
}

export type SegmentKind = 'tool' | 'wait' | 'retry' | 'gate';

export interface Segment {
  kind: SegmentKind;
  us: number;
}

/** Where the time went, in four parts: the tool, waiting for a person, retries/timeouts, toolgate's own checks. */
export function segments(stages: readonly [StageText, number][]): Segment[] {
  const sum: Record<SegmentKind, number> = { tool: 0, wait: 0, retry: 0, gate: 0 };
  for (const t of stageTimes(stages)) {
    const kind: SegmentKind =
      t.stage === 'execute' ? 'tool' : t.stage === 'policy' ? 'wait' : t.stage === 'retry' || t.stage === 'timeout' ? 'retry' : 'gate';
    sum[kind] += t.self;
  }
  return (['gate', 'wait', 'retry', 'tool'] as SegmentKind[]).map((kind) => ({ kind, us: sum[kind] })).filter((s) => s.us > 0);
}

/**
 * Segments for a small bar: waiting and retries below a real share of the
 * call (1 ms or 5 %) fold into toolgate's checks, so microsecond slivers do
 * not paint warning colours on an ordinary call.
 */
export function barSegments(stages: readonly [StageText, number][]): Segment[] {
  const segs = segments(stages);
  const total = segs.reduce((a, s) => a + s.us, 0);
  const floor = Math.max(1_000, total * 0.05);
  let folded = 0;
  const kept = segs.filter((s) => {
    if ((s.kind === 'wait' || s.kind === 'retry') && s.us < floor) {
      folded += s.us;
      return false;
    }
    return true;
  });
  if (!folded) return kept;
  const gate = kept.find((s) => s.kind === 'gate');
  if (gate) gate.us += folded;
  else kept.unshift({ kind: 'gate', us: folded });
  return kept;
}

/** A bar length for a total time, 0–1 on a log scale from 10 µs to 60 s. */
export function barScale(us: number): number {
  if (us <= 10) return 0.04;
  const v = (Math.log10(us) - 1) / (Math.log10(60_000_000) - 1);
  return Math.min(1, Math.max(0.04, v));
}

const LABEL: Record<StageName, string> = {
  allowlist: 'Allowlist',
  hooks: 'Hooks',
  trust: 'Trust wrap',
  truncate: 'Truncate',
  loop_guard: 'Loop guard',
  validate: 'Validate',
  guards: 'Path / URL guard',
  policy: 'Policy & approval',
  breaker: 'Breaker',
  retry: 'Retry',
  timeout: 'Time limit',
  execute: 'Tool',
};

export function stageLabel(s: StageText): string {
  return Object.hasOwn(LABEL, s) ? LABEL[s as StageName] : s;
}
