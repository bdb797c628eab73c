/**
 * The Approvals inbox flow: where the selection goes, and when a key may act.
 *
 * - A decision made here moves the selection to the next waiting request,
 *   soonest deadline first (the hands stay on `a`/`d`/`j`/`k`).
 * - A request that arrives while no waiting request is selected is selected
 *   at once; one that arrives while the person reads a waiting request does
 *   not take the selection from them.
 * - A request that ended elsewhere stays selected (greyed, with its cause)
 *   until the person moves or a new request arrives: the selection does not
 *   jump under a reader.
 * - Keys act only on a waiting request.
 */
import { soonest } from './countdown';

export interface InboxItem {
  id: number;
  expires_ms: number;
  status: string;
}

/** Whether approve/deny may act on `item`. */
export function canAct(item: InboxItem | null | undefined): boolean {
  return !!item && item.status === 'pending';
}

/** The selection after this window decided `decided`: the soonest other waiting request, or null when none waits. */
export function afterDecision(pending: readonly InboxItem[], decided: number): number | null {
  return soonest(pending.filter((p) => p.id !== decided && p.status === 'pending'));
}

/** The selection after request `arrived` came in: it, unless a waiting request is selected (then unchanged). */
export function afterArrival(selected: InboxItem | null | undefined, arrived: number): number | null {
  return canAct(selected) ? (selected?.id ?? null) : arrived;
}
