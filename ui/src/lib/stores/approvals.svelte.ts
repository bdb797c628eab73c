/**
 * Approval requests: the ones waiting for a person (soonest deadline first)
 * and the recently closed ones, with who closed them and why.
 */
import type { ApprovalRequest, ApprovalStatus, Ended, EventOf, Risk, Snapshot } from '../api/types';

/** One approval request as the console lists it. */
export interface ApprovalItem {
  id: number;
  call_id: number;
  tool: string;
  /** The arguments in one line, as the engine previews them (secrets hidden). */
  preview: string;
  risk: Risk;
  rule: string;
  reason: string;
  caller: string;
  created_ms: number;
  expires_ms: number;
  status: ApprovalStatus;
  decided_ms: number | null;
  decided_by: string | null;
  decision_reason: string | null;
  rule_id: number | null;
  /** How it ended, in the engine's words (null while it waits). */
  ended: Ended | null;
  /** Decided from this window. */
  mine: boolean;
  /** The full request (arguments etc.) when known. */
  request: ApprovalRequest | null;
}

const RECENT_APPROVALS = 50;

function itemFromRequest(r: ApprovalRequest): ApprovalItem {
  return {
    id: r.id,
    call_id: r.call_id,
    tool: r.tool,
    preview: r.preview,
    risk: r.risk,
    rule: r.rule,
    reason: r.reason,
    caller: r.caller.text,
    created_ms: r.created_ms,
    expires_ms: r.expires_ms,
    status: r.status,
    decided_ms: r.decided_ms,
    decided_by: r.decided_by,
    decision_reason: r.decision_reason,
    rule_id: r.rule_id,
    ended: r.ended,
    mine: false,
    request: r,
  };
}

function bySoonest(a: ApprovalItem, b: ApprovalItem): number {
  return a.expires_ms - b.expires_ms || a.id - b.id;
}

export class ApprovalsStore {
  pending = $state<ApprovalItem[]>([]);
  /** Calls waiting for a person (their live rows say so rather than "running"). */
  waitingCalls = $derived(new Set(this.pending.map((p) => p.call_id)));
  recent = $state<ApprovalItem[]>([]);
  private readonly mine = new Set<number>();

  /** This window is deciding request `id` (so its end reads "by you"). */
  markMine(id: number): void {
    this.mine.add(id);
  }

  reset(snap: Snapshot): void {
    this.pending = snap.pending.map(itemFromRequest).sort(bySoonest);
    this.recent = snap.recent_approvals.map((r) => ({ ...itemFromRequest(r), mine: this.mine.has(r.id) }));
  }

  requested(ts_ms: number, e: EventOf<'approval_requested'>): void {
    if (this.pending.some((p) => p.id === e.id)) return;
    const item: ApprovalItem = {
      id: e.id,
      call_id: e.call_id,
      tool: e.tool,
      preview: e.preview,
      risk: e.risk,
      rule: e.rule,
      reason: e.reason,
      caller: e.caller.text,
      created_ms: ts_ms,
      expires_ms: e.expires_ms,
      status: 'pending',
      decided_ms: null,
      decided_by: null,
      decision_reason: null,
      rule_id: null,
      ended: null,
      mine: false,
      request: null,
    };
    this.pending = [...this.pending, item].sort(bySoonest);
  }

  decided(ts_ms: number, e: EventOf<'approval_decided'>): void {
    const i = this.pending.findIndex((p) => p.id === e.id);
    const base: ApprovalItem | undefined = i >= 0 ? this.pending[i] : this.recent.find((r) => r.id === e.id);
    const ended: ApprovalItem = {
      ...(base ?? {
        id: e.id,
        call_id: 0,
        tool: e.tool,
        preview: '',
        risk: 'medium' as Risk,
        rule: '',
        reason: '',
        caller: '',
        created_ms: ts_ms,
        expires_ms: ts_ms,
        request: null,
      }),
      status: e.status,
      decided_ms: ts_ms,
      decided_by: e.by ?? null,
      decision_reason: e.reason ?? null,
      rule_id: e.rule_id ?? null,
      ended: e.ended ?? null,
      mine: this.mine.has(e.id),
    } as ApprovalItem;
    if (i >= 0) this.pending = this.pending.filter((p) => p.id !== e.id);
    this.recent = [ended, ...this.recent.filter((r) => r.id !== e.id)].slice(0, RECENT_APPROVALS);
  }
}
