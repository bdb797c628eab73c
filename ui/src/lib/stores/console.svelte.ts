/**
 * Everything the console shows, kept live: loaded from a snapshot, then
 * changed by the event stream.
 *
 * Each domain has its own store (connection, approvals, live feed,
 * breakers, registry, servers, policy, team), and each store owns its state: it
 * is set whole by `reset(snapshot)` or a slice read, and changed by the
 * events that concern it. This class only composes them: it applies a
 * snapshot to every domain, routes each event to the domain that owns it,
 * and hands slice reads to the domain they replace.
 *
 * Envelopes are queued and applied together once per animation frame, so a
 * burst of a thousand calls costs one paint.
 *
 * Events carry no call content (docs/architecture/console.md, "Feeding it
 * live"): arguments and outputs are fetched when a row is opened; here we
 * keep what the stream says — who, which tool, how it ended, how long.
 */
import type { Envelope, Snapshot, SliceView } from '../api/types';
import { Refresher, type FetchSlice } from '../refresher';
import type { ConnStatus, ResetReason, StreamSink } from '../stream';
import { ApprovalsStore } from './approvals.svelte';
import { BreakersStore } from './breakers.svelte';
import { ConnectionStore } from './connection.svelte';
import { LiveStore } from './live.svelte';
import { PolicyStore } from './policy.svelte';
import { RegistryStore } from './registry.svelte';
import { ServersStore } from './servers.svelte';
import { TeamStore } from './team.svelte';

export type { ApprovalItem } from './approvals.svelte';
export type { ReloadNote } from './connection.svelte';
export { LIVE_CAPACITY, type LiveOutcome, type LiveRow, type Notice } from './live.svelte';

export type Scheduler = (flush: () => void) => void;

export interface StoreOptions {
  /** Live rows kept in the page. */
  capacity?: number;
  /** How a flush is scheduled; default: the next animation frame. */
  schedule?: Scheduler;
  now?: () => number;
  /** Reads a slice again when the stream says it changed; without it, `state_changed` is ignored. */
  fetchSlice?: FetchSlice;
}

const defaultSchedule: Scheduler = (fn) => {
  if (typeof requestAnimationFrame === 'function') requestAnimationFrame(() => fn());
  else setTimeout(fn, 16);
};

export class ConsoleStore implements StreamSink {
  readonly connection = new ConnectionStore();
  readonly approvals = new ApprovalsStore();
  readonly live: LiveStore;
  readonly breakers = new BreakersStore();
  readonly registry = new RegistryStore();
  readonly servers = new ServersStore();
  readonly policy = new PolicyStore();
  readonly team = new TeamStore();

  /** The header's four counters, each from the domain that owns it; `pending` counts the team's requests the person may decide too. */
  counters = $derived({
    pending: this.approvals.pending.length + this.team.decidable,
    open_breakers: this.breakers.open,
    quarantined: this.registry.quarantined.length,
    servers_down: this.servers.down,
  });

  private queue: Envelope[] = [];
  private scheduled = false;
  private readonly schedule: Scheduler;
  private readonly now: () => number;
  private readonly listeners = new Set<(env: Envelope) => void>();
  private readonly refresher: Refresher | null;

  constructor(opts: StoreOptions = {}) {
    this.live = new LiveStore(opts.capacity);
    this.schedule = opts.schedule ?? defaultSchedule;
    this.now = opts.now ?? (() => Date.now());
    this.refresher = opts.fetchSlice ? new Refresher(opts.fetchSlice, (v) => this.applySlice(v)) : null;
  }

  /** Some data is shown (a snapshot was applied). */
  get loaded(): boolean {
    return this.connection.loaded;
  }

  /** Data is shown but the stream is not live: grey it and say so. */
  get stale(): boolean {
    return this.connection.stale;
  }

  /** Called for every envelope applied, after it is applied (toasts, the decision guard). */
  onEvent(fn: (env: Envelope) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  // ------------------------------------------------------------ StreamSink

  status(s: ConnStatus): void {
    this.connection.status(s);
  }

  reset(snap: Snapshot, why: ResetReason): void {
    // Anything queued belongs to the world before this snapshot.
    this.queue = [];
    this.refresher?.reset();
    const now = this.now();
    this.approvals.reset(snap);
    this.breakers.reset(snap, now);
    this.registry.reset(snap);
    this.servers.reset(snap);
    this.policy.reset(snap);
    this.team.reset(snap);
    this.live.reset(snap);
    this.connection.reset(snap, why, now);
  }

  push(env: Envelope): void {
    this.queue.push(env);
    if (!this.scheduled) {
      this.scheduled = true;
      this.schedule(() => this.flush());
    }
  }

  /** Applies everything queued (one frame's worth). */
  flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    if (!batch.length) return;
    let liveChanged = false;
    for (const env of batch) liveChanged = this.apply(env) || liveChanged;
    if (liveChanged) this.live.touch();
    for (const env of batch) for (const fn of this.listeners) fn(env);
  }

  /** Envelopes waiting for the next frame (tests, diagnostics). */
  get queued(): number {
    return this.queue.length;
  }

  /** A slice read again after `state_changed`: it replaces the page's copy. */
  applySlice(v: SliceView): void {
    switch (v.slice) {
      case 'tools':
        this.registry.set(v.tools, v.quarantined, v.clients);
        break;
      case 'policy':
        this.policy.set(v.policy);
        break;
      case 'servers':
        this.servers.set(v.servers, v.plugins);
        break;
      case 'breakers':
        this.breakers.set(v.breakers, this.now());
        break;
      case 'team':
        this.team.set(v.team);
        break;
    }
  }

  /** A breaker was reset from this window: close it without waiting for the event. */
  breakerReset(tool: string): void {
    this.breakers.transition(this.now(), tool, 'closed');
  }

  /** Routes one envelope to the domain that owns it; true when the live feed changed. */
  private apply(env: Envelope): boolean {
    const { ts_ms, event: e } = env;
    switch (e.type) {
      case 'call_received':
        this.live.received(ts_ms, e);
        return true;
      case 'call_finished':
        this.live.finished(ts_ms, e);
        this.breakers.called(ts_ms, e.tool, e.outcome);
        return true;
      case 'call_retry':
        this.live.retried(e);
        return true;
      case 'call_stage':
        return false;
      case 'loop_guard':
        this.live.loopGuard(env.seq, ts_ms, e);
        return false;
      case 'approval_requested':
        this.approvals.requested(ts_ms, e);
        return false;
      case 'approval_decided':
        this.approvals.decided(ts_ms, e);
        return false;
      case 'approval_rule_changed':
        this.policy.rulesChanged();
        return false;
      case 'policy_reloaded':
        this.policy.reloaded(e.version);
        return false;
      case 'breaker_transition':
        this.breakers.transition(ts_ms, e.tool, e.to, e.shown_as);
        return false;
      case 'server_status':
        this.servers.status(e);
        return false;
      case 'tool_registered':
      case 'tool_replaced':
        this.registry.seen(e.tool, e.source);
        return false;
      case 'tool_unregistered':
        this.registry.unregistered(e.tool);
        return false;
      case 'tool_quarantined':
        this.registry.quarantine(ts_ms, e);
        return false;
      case 'state_changed':
        this.refresher?.announce(e.slice, e.revision);
        return false;
    }
  }
}
