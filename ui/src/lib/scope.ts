/**
 * The scope picker of "Approve & always…" / "Deny & always…": builds the
 * SCOPE text the engine parses (src/approval/scope.rs) from what a person
 * ticks, and suggests argument patterns from the request's arguments.
 *
 * SCOPE syntax: comma-separated clauses; `tool` (this tool) or `tool=GLOB`;
 * `args` (exactly these arguments); `caller` (this caller);
 * `PTR=GLOB`, `PTR:path=GLOB`, `PTR:re=REGEX` for argument conditions.
 * The engine splits clauses on commas outside `{}`/`[]`, so a pattern must
 * not carry a bare comma; suggestions write `?` for one.
 */
import type { PatternKind } from './api/types';

export interface ArgChoice {
  /** JSON pointer, e.g. `/command`. */
  pointer: string;
  kind: PatternKind;
  pattern: string;
  enabled: boolean;
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
    if (!a.pointer.startsWith('/')) out.push(`Argument ${a.pointer}: a JSON pointer starts with “/”.`);
    if (a.pattern.trim() === '') out.push(`Argument ${a.pointer}: the pattern is empty.`);
    if (hasBareComma(a.pattern)) {
      out.push(`Argument ${a.pointer}: a comma outside {} or [] would end the clause; write ? for it.`);
    }
    if (a.kind === 'regex') {
      try {
        new RegExp(a.pattern);
      } catch {
        out.push(`Argument ${a.pointer}: not a valid regular expression.`);
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

/** JSON pointer of a top-level key (RFC 6901 escaping). */
export function pointerOf(key: string): string {
  return `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** A string as a glob matching only itself: metacharacters in brackets, commas as `?`. */
export function literalGlob(s: string): string {
  let out = '';
  for (const ch of s) {
    if (ch === ',') out += '?';
    else if ('*?[]{}'.includes(ch)) out += `[${ch}]`;
    else out += ch;
  }
  return out;
}

const PATH_KEYS = /^(path|file|filename|file_path|filepath|dir|directory|target|source|dest|destination|cwd|root)$/i;
const COMMAND_KEYS = /^(command|cmd|script|shell|commandline|command_line)$/i;
const URL_KEYS = /^(url|uri|href|endpoint)$/i;

/** The directory part of a path (`~/proj/src/a.rs` → `~/proj/src`). */
function dirname(p: string): string {
  const i = p.replace(/\/+$/, '').lastIndexOf('/');
  if (i <= 0) return i === 0 ? '/' : '.';
  return p.slice(0, i);
}

/**
 * Suggested argument clauses for a request's arguments, all unticked:
 * a path argument → everything under its directory; a command → the same
 * program and subcommand with anything after (`git status*`); a URL → the
 * same origin; any other string → exactly that value.
 */
export function suggestArgs(args: unknown): ArgChoice[] {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return [];
  const out: ArgChoice[] = [];
  for (const [key, value] of Object.entries(args as Record<string, unknown>)) {
    if (typeof value !== 'string' || value === '[redacted]') continue;
    const pointer = pointerOf(key);
    if (PATH_KEYS.test(key) || /^(~|\/|\.\.?\/)/.test(value)) {
      const dir = dirname(value);
      out.push({ pointer, kind: 'path', pattern: `${literalGlob(dir === '/' ? '' : dir)}/**`, enabled: false });
    } else if (COMMAND_KEYS.test(key)) {
      out.push({ pointer, kind: 'glob', pattern: commandPrefix(value), enabled: false });
    } else if (URL_KEYS.test(key) && /^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
      const origin = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]+)/i.exec(value)?.[1] ?? value;
      out.push({ pointer, kind: 'glob', pattern: `${literalGlob(origin)}/*`, enabled: false });
    } else {
      out.push({ pointer, kind: 'glob', pattern: literalGlob(value), enabled: false });
    }
  }
  return out;
}

/**
 * `git status --short` → `git status*`; `ls -la` → `ls *`; `make` → `make*`.
 * A command with shell operators (`&&`, `;`, `|`, `$(`, redirections) gets
 * its exact text instead: a prefix such as `rm *` would also cover
 * `rm -rf x && curl … | sh`, which nobody means to approve forever.
 */
export function commandPrefix(cmd: string): string {
  if (/[;&|`$<>\n]/.test(cmd)) return literalGlob(cmd.trim());
  const words = cmd.trim().split(/\s+/);
  const first = words[0] ?? '';
  const second = words[1];
  if (second && /^[A-Za-z][\w:-]*$/.test(second)) return `${literalGlob(`${first} ${second}`)}*`;
  if (second) return `${literalGlob(first)} *`;
  return `${literalGlob(first)}*`;
}

/** Expiry choices for a remembered rule. */
export const TTL_CHOICES: readonly { label: string; ttl_s: number | undefined }[] = [
  { label: '1 hour', ttl_s: 3_600 },
  { label: '1 day', ttl_s: 86_400 },
  { label: '7 days', ttl_s: 7 * 86_400 },
  { label: '30 days', ttl_s: 30 * 86_400 },
  { label: 'Until revoked', ttl_s: undefined },
];

/** The picker's starting point: this tool, nothing else ("prefilled with the tool", docs/architecture/console.md). */
export function initialChoice(args: unknown): ScopeChoice {
  return { tool: 'this', args: suggestArgs(args), exact: false, caller: false };
}
