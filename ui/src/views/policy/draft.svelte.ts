/**
 * The Policy view's edit state, shared by its sections: the policy as the
 * engine last gave it (`view`, with its version), the draft a person edits
 * (`doc`), the review of a save, and the conflict when the policy moved on
 * while the draft was being edited.
 *
 * A save carries the version it was based on. The engine refuses a save
 * based on an old version (409); the draft then shows theirs against
 * yours, and the person either reloads theirs or reviews theirs-plus-mine
 * again before saving. Nothing is ever written over a newer policy unseen.
 */
import { api, ApiError } from '../../lib/api/client';
import type { FieldError, PolicyDoc, PolicyView, Validation } from '../../lib/api/types';
import { jsonDiff, type Line } from '../../lib/diff';
import { toasts } from '../../lib/toasts.svelte';

export interface ApplyError {
  message: string;
  /** The engine refused the save as based on an old version. */
  stale: boolean;
}

/** A save refused because the policy changed meanwhile: the newer policy and how this edit differs from it. */
export interface Conflict {
  theirs: PolicyView;
  lines: Line[];
}

/** Problems by the field they name (problems with the file as a whole have none and are listed in the review). */
function byField(errors: FieldError[]): Record<string, string> {
  return Object.fromEntries(errors.flatMap((e) => (e.field ? [[e.field, e.message]] : [])));
}

/** The doc as the engine should get it: a blank optional text is "not set", never `""`. */
export function outgoing(d: PolicyDoc): PolicyDoc {
  const blank = (v: string | null) => (v === null || v.trim() === '' ? null : v);
  const plain = $state.snapshot(d) as PolicyDoc;
  return {
    ...plain,
    rules: plain.rules.map((r) => ({
      ...r,
      tool: r.tool.trim(),
      arg: blank(r.arg),
      glob: blank(r.glob),
      path: blank(r.path),
      regex: blank(r.regex),
      reason: blank(r.reason),
    })),
  };
}

/** Without the version (it always differs): the policy as a person edits it. */
function content(d: PolicyDoc): Omit<PolicyDoc, 'version'> {
  const { version: _version, ...rest } = $state.snapshot(d) as PolicyDoc;
  return rest;
}

export class PolicyDraft {
  /** The policy as last read from the engine; `view.version` is what a save is based on. */
  view = $state<PolicyView | null>(null);
  /** The edited copy. */
  doc = $state<PolicyDoc | null>(null);
  loadError = $state<string | null>(null);
  validation = $state<Validation | null>(null);
  reviewing = $state(false);
  busy = $state(false);
  applyError = $state<ApplyError | null>(null);
  conflict = $state<Conflict | null>(null);
  fieldErrors = $state<Record<string, string>>({});
  dirty = $derived(!!this.view && !!this.doc && JSON.stringify(this.view.doc) !== JSON.stringify(this.doc));

  /** Reads the policy in force; the draft starts again from it. */
  async load(): Promise<void> {
    this.loadError = null;
    try {
      const v = await api.policy();
      this.view = v;
      this.doc = structuredClone(v.doc);
      this.fieldErrors = {};
      this.applyError = null;
      this.conflict = null;
    } catch (e) {
      this.loadError = e instanceof ApiError ? e.message : 'Could not load the policy.';
    }
  }

  /** The policy in force is newer than the one this draft started from. */
  movedPast(runningVersion: number | undefined): boolean {
    return !!this.view && runningVersion !== undefined && runningVersion > this.view.version;
  }

  /** Asks the engine to check the draft and opens the review. */
  async review(): Promise<void> {
    if (!this.doc) return;
    this.busy = true;
    this.applyError = null;
    try {
      const v = await api.validatePolicy(outgoing(this.doc));
      this.validation = v;
      this.fieldErrors = byField(v.errors);
      this.reviewing = true;
    } catch (e) {
      this.applyError = { message: e instanceof ApiError ? e.message : 'The engine could not check the policy.', stale: false };
    } finally {
      this.busy = false;
    }
  }

  /** Saves the reviewed draft, based on the version it started from. */
  async apply(): Promise<void> {
    if (!this.doc || !this.view || !this.validation?.ok) return;
    this.busy = true;
    try {
      const r = await api.putPolicy({ doc: outgoing(this.doc), base_version: this.view.version });
      this.reviewing = false;
      const unmatched = r.warnings.length ? ` Matching no tool yet: ${r.warnings.join(', ')}.` : '';
      toasts.show({
        key: `policy-${r.version}`,
        tone: r.warnings.length ? 'warn' : 'ok',
        title: `Policy v${r.version} applied`,
        body: `Running now and saved to the config file. No restart needed.${unmatched}`,
      });
      await this.load();
    } catch (e) {
      if (e instanceof ApiError && e.errors.length) this.fieldErrors = { ...this.fieldErrors, ...byField(e.errors) };
      else if (e instanceof ApiError && e.field) this.fieldErrors = { ...this.fieldErrors, [e.field]: e.message };
      this.applyError = { message: e instanceof ApiError ? e.message : 'The policy was not applied.', stale: e instanceof ApiError && e.isStale };
      if (e instanceof ApiError && e.isConflict) await this.showConflict();
    } finally {
      this.busy = false;
    }
  }

  private async showConflict(): Promise<void> {
    if (!this.doc) return;
    try {
      const theirs = await api.policy();
      this.conflict = { theirs, lines: jsonDiff(content(theirs.doc), content(outgoing(this.doc))) };
    } catch {
      this.conflict = null;
    }
  }

  /** Keep the newer policy; this edit is dropped. */
  async takeTheirs(): Promise<void> {
    this.reviewing = false;
    await this.load();
  }

  /** Save this edit over the newer policy, knowingly: reviewed again against the policy as it is now. */
  async keepMine(): Promise<void> {
    if (!this.conflict || !this.view) return;
    this.view = this.conflict.theirs;
    this.conflict = null;
    this.applyError = null;
    await this.review();
  }

  /** Back to the policy as last read. */
  discard(): void {
    if (this.view) this.doc = structuredClone($state.snapshot(this.view.doc) as PolicyDoc);
    this.fieldErrors = {};
  }
}
