/**
 * The engine's `Marked` runs (a name or summary cut at the words a search
 * matched) as what the list renders: adjacent runs of the same kind joined,
 * empty ones dropped, and the plain text when the engine sent no runs.
 */
import type { Marked } from './api/types';

export function segments(runs: readonly Marked[] | undefined, plain: string): Marked[] {
  const out: Marked[] = [];
  for (const r of runs ?? []) {
    if (!r.text) continue;
    const last = out[out.length - 1];
    if (last && last.hit === r.hit) last.text += r.text;
    else out.push({ text: r.text, hit: r.hit });
  }
  if (out.length === 0 && plain) out.push({ text: plain, hit: false });
  return out;
}

/** The matched words, as the person sees them highlighted. */
export function hits(runs: readonly Marked[]): string[] {
  return segments(runs, '').filter((r) => r.hit).map((r) => r.text);
}
