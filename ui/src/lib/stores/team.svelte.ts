/**
 * The team's queue (`[storage] url`): the link's state, the team's engines
 * and the other engines' approval requests, as the engine reports them.
 *
 * Read whole from the snapshot or the `team` slice, which the engine
 * announces on every change the link sees (a request raised or closed on
 * another machine, an engine coming or going, the database lost); there
 * are no per-request events to apply between reads. `null` while this
 * engine runs alone.
 */
import type { EngineIdentity, Snapshot, TeamRequest, TeamView } from '../api/types';

/** A team request's key: its engine and its id there (ids repeat across engines). */
export function teamKey(r: { engine: EngineIdentity; id: number }): string {
  return `${r.engine.id}/${r.id}`;
}

export class TeamStore {
  view = $state<TeamView | null>(null);
  /** Waiting requests of other engines, oldest first (the engine's order). */
  pending = $derived<TeamRequest[]>(this.view?.requests.filter((r) => r.status === 'pending') ?? []);
  /** Waiting requests the person here may decide (no `cannot_decide`). */
  decidable = $derived(this.pending.filter((r) => !r.cannot_decide).length);
  /** The last closed ones. */
  recent = $derived<TeamRequest[]>(this.view?.requests.filter((r) => r.status !== 'pending') ?? []);
  reset(snap: Snapshot): void {
    this.view = snap.team;
  }

  set(view: TeamView | null): void {
    this.view = view;
  }

  /** An engine as the engine names it (`user on host`), falling back to its id. */
  label(engine: EngineIdentity): string {
    return this.view?.labels[engine.id] ?? engine.id;
  }
}
