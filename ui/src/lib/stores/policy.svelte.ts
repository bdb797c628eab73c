/**
 * The policy in force, as the snapshot and the `policy` slice summarise it,
 * and a counter that moves whenever a remembered rule changes (the Policy
 * view reads the rules again when it does).
 */
import type { PolicySummary, Snapshot } from '../api/types';

export class PolicyStore {
  summary = $state<PolicySummary | null>(null);
  /** Remembered rules changed since the Policy view last loaded them. */
  rulesVersion = $state(0);

  reset(snap: Snapshot): void {
    this.summary = snap.policy;
    // A snapshot may follow missed rule changes.
    this.rulesVersion++;
  }

  set(summary: PolicySummary): void {
    this.summary = summary;
  }

  reloaded(version: number): void {
    if (this.summary) this.summary.version = version;
  }

  rulesChanged(): void {
    this.rulesVersion++;
  }
}
