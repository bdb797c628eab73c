/**
 * The one note that calls wait for a decision, while the person is on
 * another view.
 *
 * - No note while Approvals is showing: the list already shows them, and a
 *   note there would cover the buttons that decide them.
 * - One note for all: "3 calls need a decision", updated in place as more
 *   arrive or some end, never a stack of one per request.
 * - It is about the requests that arrived while the person was elsewhere;
 *   one that ends (decided elsewhere, cancelled, timed out) leaves it, and
 *   when none is left the note closes itself, so it never offers Review for
 *   something that is gone.
 * - Going to Approvals, dismissing it, or its running out settles it: the
 *   next arrival starts a fresh note.
 */
import type { Tone } from './format';
import { soonest } from './countdown';
import type { Toast } from './toasts.svelte';

/** The note's key: there is only ever one. */
export const APPROVAL_NOTE = 'approvals-waiting';

/** How long the note stays after a request arrives. */
export const APPROVAL_NOTE_MS = 10_000;

/** What the note reads of a waiting request. */
export interface Waiting {
  id: number;
  tool: string;
  risk: string;
  caller: string;
  reason: string;
  expires_ms: number;
}

/** Where the note goes: the toast stack. */
export interface NoteSink {
  upsert(t: Toast, ms: number | undefined, onclose?: () => void): void;
  remove(key: string): void;
}

function toneOf(risks: readonly string[]): Tone {
  if (risks.includes('critical')) return 'danger';
  if (risks.includes('high')) return 'high';
  return 'warn';
}

/** `shell_exec` ×3, `write_file`: each tool once, as code, most frequent first. */
function toolsPhrase(waiting: readonly Waiting[]): string {
  const counts = new Map<string, number>();
  for (const w of waiting) counts.set(w.tool, (counts.get(w.tool) ?? 0) + 1);
  const tools = [...counts].sort((a, b) => b[1] - a[1]);
  const shown = tools.slice(0, 3).map(([t, n]) => (n > 1 ? `\`${t}\` ×${n}` : `\`${t}\``));
  if (tools.length > 3) shown.push(`${tools.length - 3} more`);
  return shown.join(', ');
}

/** The note for `waiting` (not empty); `link` is the Review link for a request id. */
export function noteFor(waiting: readonly Waiting[], link: (id: number | null) => string): Toast {
  const tone = toneOf(waiting.map((w) => w.risk));
  const first = waiting[0];
  if (waiting.length === 1 && first) {
    return {
      key: APPROVAL_NOTE,
      tone,
      title: `${first.tool} needs a decision`,
      body: `${first.caller} · ${first.reason}`,
      action: { label: 'Review', href: link(first.id) },
    };
  }
  const callers = new Set(waiting.map((w) => w.caller));
  const from = callers.size === 1 ? (first?.caller ?? '') : `${callers.size} callers`;
  return {
    key: APPROVAL_NOTE,
    tone,
    title: `${waiting.length} calls need a decision`,
    body: `${toolsPhrase(waiting)} · from ${from}`,
    action: { label: 'Review', href: link(soonest(waiting)) },
  };
}

export class ApprovalNotice {
  /** The requests the note is about. */
  private ids = new Set<number>();
  /** A request arrived since the note was last shown: it stays its full time again. */
  private fresh = false;

  constructor(
    private readonly sink: NoteSink,
    private readonly link: (id: number | null) => string,
  ) {}

  /** A request arrived; it is announced unless Approvals is showing or notes are off. */
  arrived(id: number, onApprovals: boolean, enabled: boolean): void {
    if (onApprovals || !enabled) return;
    this.ids.add(id);
    this.fresh = true;
  }

  /** Brings the note in line with what waits now and where the person is. */
  sync(pending: readonly Waiting[], onApprovals: boolean): void {
    if (onApprovals) {
      this.settle();
      return;
    }
    const waiting = pending.filter((p) => this.ids.has(p.id));
    this.ids = new Set(waiting.map((w) => w.id));
    if (!waiting.length) {
      this.settle();
      return;
    }
    const ms = this.fresh ? APPROVAL_NOTE_MS : undefined;
    this.fresh = false;
    this.sink.upsert(noteFor(waiting, this.link), ms, () => this.ids.clear());
  }

  /** How many requests the note is about (tests, diagnostics). */
  get size(): number {
    return this.ids.size;
  }

  private settle(): void {
    this.ids.clear();
    this.fresh = false;
    this.sink.remove(APPROVAL_NOTE);
  }
}
