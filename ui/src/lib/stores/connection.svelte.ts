/**
 * The connection to the engine and what the snapshot says about the engine
 * itself: whether the stream is live, whether the page holds data yet, why
 * it last reloaded, the engine's identity and its barrier.
 */
import type { BarrierStatus, EngineInfo, Snapshot } from '../api/types';
import type { ConnStatus, ResetReason } from '../stream';

export interface ReloadNote {
  at_ms: number;
  why: ResetReason;
}

export class ConnectionStore {
  conn = $state<ConnStatus>({ kind: 'connecting' });
  loaded = $state(false);
  reloaded = $state<ReloadNote | null>(null);
  /** Data is being shown but the stream is not live: grey it and say so. */
  stale = $derived(this.loaded && this.conn.kind !== 'live');
  engine = $state<EngineInfo | null>(null);
  /** What keeps governed processes away from toolgate on this machine. */
  barrier = $state<BarrierStatus | null>(null);

  status(s: ConnStatus): void {
    this.conn = s;
  }

  reset(snap: Snapshot, why: ResetReason, now: number): void {
    this.engine = snap.engine;
    this.barrier = snap.barrier;
    this.loaded = true;
    this.reloaded = why === 'initial' ? null : { at_ms: now, why };
  }

  dismissReload(): void {
    this.reloaded = null;
  }
}
