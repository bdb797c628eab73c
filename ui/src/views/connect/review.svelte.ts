/**
 * The state of one review: the plan asked of the engine for a client and
 * an action, then its apply. Answers to an older question (the person
 * closed the review, or asked again) are dropped; an apply that finished
 * after the review was closed is still reported, since it changed files.
 */
import { ApiError } from '../../lib/api/client';
import type { ClientId, ConnectAction, ConnectApplied, ConnectPlan } from '../../lib/api/types';

/** Whose plan, for what. */
export interface Target {
  client: ClientId;
  /** The engine's display name. */
  name: string;
  action: ConnectAction;
}

/** The two calls a review makes (the console API's, or a test's). */
export interface ReviewApi {
  connectPlan(client: ClientId, action: ConnectAction): Promise<ConnectPlan>;
  connectApply(plan: ConnectPlan): Promise<ConnectApplied>;
}

export interface ReviewHooks {
  /** The plan was carried out. */
  applied(a: ConnectApplied): void;
  /** The engine says the list on screen is behind (already, or no longer, connected): read it again. */
  behind(): void;
}

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : 'The engine did not answer.';
}

export class Review {
  open = $state(false);
  target = $state<Target | null>(null);
  plan = $state<ConnectPlan | null>(null);
  /** The engine's line when planning or applying failed. */
  error = $state<string | null>(null);
  /** Whether asking again could help (not when the engine said the request makes no sense now). */
  retryable = $state(true);
  /** The engine's line when the files changed since the plan was shown; nothing was written. */
  conflict = $state<string | null>(null);
  busy = $state(false);
  private gen = 0;

  constructor(
    private readonly api: ReviewApi,
    private readonly hooks: ReviewHooks,
  ) {}

  /** Opens the review of `t` and asks the engine for its plan. */
  start(t: Target): Promise<void> {
    this.target = t;
    this.open = true;
    this.busy = false;
    return this.replan();
  }

  /** Asks for the plan again (after a conflict, or a failure). */
  async replan(): Promise<void> {
    const t = this.target;
    if (!t) return;
    const gen = ++this.gen;
    this.plan = null;
    this.error = null;
    this.conflict = null;
    this.retryable = true;
    try {
      const plan = await this.api.connectPlan(t.client, t.action);
      if (gen === this.gen) this.plan = plan;
    } catch (e) {
      if (gen !== this.gen) return;
      this.error = message(e);
      const code = e instanceof ApiError ? e.code : null;
      this.retryable = code !== 'stale' && code !== 'invalid';
      if (code === 'stale') this.hooks.behind();
    }
  }

  /** Carries out the plan on screen. */
  async apply(): Promise<void> {
    const plan = this.plan;
    if (!plan || this.busy || this.conflict) return;
    const gen = this.gen;
    this.busy = true;
    this.error = null;
    try {
      const applied = await this.api.connectApply(plan);
      if (gen === this.gen) this.close();
      this.hooks.applied(applied);
    } catch (e) {
      if (gen !== this.gen) return;
      if (e instanceof ApiError && e.isConflict) this.conflict = e.message;
      else this.error = message(e);
      if (e instanceof ApiError && e.isStale) this.hooks.behind();
    } finally {
      if (gen === this.gen) this.busy = false;
    }
  }

  close(): void {
    this.gen++;
    this.open = false;
    this.busy = false;
  }
}
