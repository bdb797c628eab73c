/**
 * Small notes in the corner: one per key (e.g. one per approval request id),
 * gone after a while or when dismissed.
 */
import type { Tone } from './format';

export interface Toast {
  key: string;
  tone: Tone;
  title: string;
  body?: string;
  action?: { label: string; href: string };
}

class Toasts {
  items = $state<Toast[]>([]);
  private seen = new Set<string>();

  show(t: Toast, ms = 6_000): void {
    if (this.seen.has(t.key)) return;
    this.seen.add(t.key);
    this.items = [...this.items.slice(-3), t];
    setTimeout(() => this.dismiss(t.key), ms);
  }

  dismiss(key: string): void {
    this.items = this.items.filter((t) => t.key !== key);
  }
}

export const toasts = new Toasts();
