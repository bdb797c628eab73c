/**
 * Small notes in the corner: one per key (e.g. one breaker opening), gone
 * after a while or when dismissed. At most `MAX_TOASTS` at once: a corner
 * full of notes hides what the person works on.
 *
 * A note about something that can change (how many calls wait) is
 * `upsert`ed under one key: it is updated in place, not stacked, and its
 * owner closes it when its subject ended.
 *
 * Notes never cover a view's decision buttons: a view marks them with
 * `keepToastsAbove`, and the stack sits above them while they are shown.
 */
import type { Tone } from './format';

export interface Toast {
  key: string;
  tone: Tone;
  title: string;
  /** Text where `backticks` mark code. */
  body?: string;
  action?: { label: string; href: string };
}

/** Notes shown at once; the oldest goes first. */
export const MAX_TOASTS = 3;

/** Space kept free below the stack, above the corner it sits in (px). */
const GAP = 12;

export class Toasts {
  items = $state<Toast[]>([]);
  /** How far above the window's bottom the stack sits (px): clear of marked buttons. */
  bottom = $state(16);
  private seen = new Set<string>();
  private timers = new Map<string, ReturnType<typeof setTimeout>>();
  private closed = new Map<string, () => void>();

  /** Shows `t` once per key: a key shown before is not shown again. */
  show(t: Toast, ms = 6_000): void {
    if (this.seen.has(t.key)) return;
    this.seen.add(t.key);
    this.place(t, ms);
  }

  /**
   * Shows `t`, or updates the note of its key in place. `ms` restarts the
   * time it stays; `undefined` keeps the running one. `onclose` runs when
   * it goes by itself or is dismissed (not when its owner dismisses it).
   */
  upsert(t: Toast, ms: number | undefined, onclose?: () => void): void {
    if (onclose) this.closed.set(t.key, onclose);
    const i = this.items.findIndex((x) => x.key === t.key);
    if (i < 0) {
      this.place(t, ms ?? 6_000);
      return;
    }
    this.items[i] = t;
    if (ms !== undefined) this.arm(t.key, ms);
  }

  /** Whether a note of this key is shown. */
  has(key: string): boolean {
    return this.items.some((t) => t.key === key);
  }

  /** The person closed it, or it timed out: its owner hears of it. */
  dismiss(key: string): void {
    const onclose = this.closed.get(key);
    this.remove(key);
    onclose?.();
  }

  /** Its owner closes it (its subject ended): no callback. */
  remove(key: string): void {
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
    this.closed.delete(key);
    this.items = this.items.filter((t) => t.key !== key);
  }

  private place(t: Toast, ms: number): void {
    const kept = this.items.filter((x) => x.key !== t.key);
    for (const old of kept.slice(0, Math.max(0, kept.length - (MAX_TOASTS - 1)))) this.remove(old.key);
    this.items = [...this.items.filter((x) => x.key !== t.key), t];
    this.arm(t.key, ms);
  }

  private arm(key: string, ms: number): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => this.dismiss(key), ms),
    );
  }
}

export const toasts = new Toasts();

/**
 * Svelte action for a view's decision buttons: while the element is shown,
 * the toast stack sits above it, so no note covers them.
 */
export function keepToastsAbove(node: HTMLElement, target: Toasts = toasts): { destroy(): void } {
  const measure = () => {
    const top = node.getBoundingClientRect().top;
    const h = window.innerHeight || document.documentElement.clientHeight;
    target.bottom = top > 0 && top < h ? Math.max(16, h - top + GAP) : 16;
  };
  const ro = typeof ResizeObserver === 'function' ? new ResizeObserver(measure) : null;
  ro?.observe(node);
  window.addEventListener('resize', measure);
  measure();
  return {
    destroy() {
      ro?.disconnect();
      window.removeEventListener('resize', measure);
      target.bottom = 16;
    },
  };
}
