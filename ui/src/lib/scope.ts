/**
 * The scope picker of "Approve & always…" / "Deny & always…": the choices
 * a person ticks, starting from the engine's offer (`ScopeOffer`: the
 * narrowest scope that covers the request, its argument conditions with
 * their words), and the SCOPE text those choices spell for the engine to
 * preview and bind (src/approval/scope.rs).
 *
 * The engine suggests the patterns and words; this module only joins the
 * ticked ones into clauses: `tool` (this tool) or `tool=GLOB`, argument
 * clauses `PTR=GLOB`, `PTR:path=GLOB`, `PTR:re=REGEX`, `args` (exactly
 * these arguments), `caller` (this caller). The engine splits clauses on
 * commas outside `{}`/`[]`, so a pattern a person edits must not carry a
 * bare comma.
 */
import type { PatternKind, ScopeOffer } from './api/types';

export interface ArgChoice {
  /** JSON pointer, e.g. `/command`. */
  pointer: string;
  kind: PatternKind;
  pattern: string;
  enabled: boolean;
  /** The engine's words for the offered pattern (`the command runs `ls` with …`). */
  words: string;
  /** The pattern as offered, to tell an edited one. */
  offered: string;
}

export interface ScopeChoice {
  /** `this` = the request's own tool; otherwise a tool-name glob. */
  tool: 'this' | { glob: string };
  args: ArgChoice[];
  /** Only these exact arguments. */
  exact: boolean;
  /** Only this caller. */
  caller: boolean;
}

/** One argument clause in SCOPE syntax. */
export function argClause(a: Pick<ArgChoice, 'pointer' | 'kind' | 'pattern'>): string {
  switch (a.kind) {
    case 'glob':
      return `${a.pointer}=${a.pattern}`;
    case 'path':
      return `${a.pointer}:path=${a.pattern}`;
    case 'regex':
      return `${a.pointer}:re=${a.pattern}`;
  }
}

/** The SCOPE text for a choice. */
export function scopeText(c: ScopeChoice): string {
  const clauses: string[] = [];
  clauses.push(c.tool === 'this' ? 'tool' : `tool=${c.tool.glob.trim() || '*'}`);
  for (const a of c.args) if (a.enabled && a.pattern.trim() !== '') clauses.push(argClause(a));
  if (c.exact) clauses.push('args');
  if (c.caller) clauses.push('caller');
  return clauses.join(',');
}

/** Problems the engine would reject, found before asking it. */
export function scopeProblems(c: ScopeChoice): string[] {
  const out: string[] = [];
  if (c.tool !== 'this' && c.tool.glob.trim() === '') out.push('Give a tool-name pattern, or choose “this tool”.');
  for (const a of c.args) {
    if (!a.enabled) continue;
    const name = a.pointer.replace(/^\//, '');
    if (a.pattern.trim() === '') out.push(`The pattern for “${name}” is empty.`);
    if (hasBareComma(a.pattern)) out.push(`The pattern for “${name}” has a comma outside {} or []; write ? for it.`);
    if (a.kind === 'regex') {
      try {
        new RegExp(a.pattern);
      } catch {
        out.push(`The pattern for “${name}” is not a valid regular expression.`);
      }
    }
  }
  return out;
}

/** Whether `p` has a comma outside `{}`/`[]` (what the engine's clause splitter would cut at). */
export function hasBareComma(p: string): boolean {
  let depth = 0;
  for (const ch of p) {
    if (ch === '{' || ch === '[') depth++;
    else if ((ch === '}' || ch === ']') && depth > 0) depth--;
    else if (ch === ',' && depth === 0) return true;
  }
  return false;
}

/** Expiry choices for a remembered rule. */
export const TTL_CHOICES: readonly { label: string; ttl_s: number | undefined }[] = [
  { label: '1 hour', ttl_s: 3_600 },
  { label: '1 day', ttl_s: 86_400 },
  { label: '7 days', ttl_s: 7 * 86_400 },
  { label: '30 days', ttl_s: 30 * 86_400 },
  { label: 'Until revoked', ttl_s: undefined },
];

/** The expiry choice for the engine's default (the nearest one not longer; the shortest if none). */
export function ttlIndex(ttl_s: number): number {
  let best = 0;
  TTL_CHOICES.forEach((c, i) => {
    if (c.ttl_s !== undefined && c.ttl_s <= ttl_s) best = i;
  });
  return best;
}

/** The picker's starting point: the engine's narrowest scope (its ticked conditions, exact arguments, this caller). */
export function initialChoice(offer: ScopeOffer): ScopeChoice {
  return {
    tool: 'this',
    args: offer.args.map((a) => ({ pointer: a.pointer, kind: a.kind, pattern: a.pattern, enabled: a.ticked, words: a.words, offered: a.pattern })),
    exact: offer.exact,
    caller: offer.caller,
  };
}
