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
 * - While the console has lost the engine, nothing is known about a waiting
 *   request (it may have been decided, cancelled or timed out meanwhile):
 *   it shows as unknown and neither buttons nor keys act on it.
 */
import { soonest } from './countdown';
import type { ConnStatus } from './stream';

/** Why waiting requests cannot be decided from this window right now; null while the stream is live. */
export interface Offline {
  /** Where a countdown would be: what is known of the request. */
  state: string;
  /** Why it is unknown, short (under the detail's "Unknown"). */
  why: string;
  /** Beside the disabled buttons, and their tooltip. */
  reason: string;
}

/**
 * What the page says of waiting requests while the engine is lost or has
 * signed this browser out (shown data only). `connecting` with data shown is
 * the moment between a fresh snapshot and its stream opening: that data is
 * current.
 */
export function offline(conn: ConnStatus, loaded: boolean): Offline | null {
  if (!loaded || conn.kind === 'live' || conn.kind === 'connecting') return null;
  if (conn.kind === 'signed_out') {
    return {
      state: 'Unknown: this browser is signed out',
      why: 'this browser is signed out',
      reason: 'This browser is no longer signed in to the console, so it cannot decide. Run `toolgate console` for a fresh sign-in link.',
    };
  }
  return {
    state: 'Unknown: the console lost the engine',
    why: 'the console lost the engine',
    reason: 'The console lost the engine: this request may have been decided, cancelled or timed out meanwhile. Approve and Deny come back when it answers again.',
  };
}

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
