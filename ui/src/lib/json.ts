/**
 * JSON as coloured tokens for display (no HTML strings: the view renders
 * spans, so nothing from a tool's output is ever parsed as markup).
 */
import type { Content } from './api/types';

export type TokenKind = 'key' | 'str' | 'num' | 'bool' | 'null' | 'punct' | 'redacted' | 'ws';

export interface Token {
  text: string;
  kind: TokenKind;
}

const RE = /("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false)|(null)|([{}[\],:])|(\s+)/g;

/** Pretty-printed JSON of `v`, tokenised. */
export function jsonTokens(v: unknown, indent = 2): Token[] {
  let text: string;
  try {
    text = JSON.stringify(v, null, indent) ?? 'undefined';
  } catch {
    return [{ text: String(v), kind: 'str' }];
  }
  const out: Token[] = [];
  RE.lastIndex = 0;
  let last = 0;
  for (let m = RE.exec(text); m; m = RE.exec(text)) {
    if (m.index > last) out.push({ text: text.slice(last, m.index), kind: 'punct' });
    last = RE.lastIndex;
    if (m[1] !== undefined) {
      if (m[2] !== undefined) {
        out.push({ text: m[1], kind: 'key' });
        out.push({ text: m[2], kind: 'punct' });
      } else out.push({ text: m[1], kind: m[1] === '"[redacted]"' ? 'redacted' : 'str' });
    } else if (m[3] !== undefined) out.push({ text: m[3], kind: 'num' });
    else if (m[4] !== undefined) out.push({ text: m[4], kind: 'bool' });
    else if (m[5] !== undefined) out.push({ text: m[5], kind: 'null' });
    else if (m[6] !== undefined) out.push({ text: m[6], kind: 'punct' });
    else out.push({ text: m[7] ?? '', kind: 'ws' });
  }
  if (last < text.length) out.push({ text: text.slice(last), kind: 'punct' });
  return out;
}

/** The text of output parts (for the raw / as-seen diff). */
export function partsText(parts: readonly Content[]): string {
  return parts
    .map((p) => {
      switch (p.type) {
        case 'text':
          return p.text;
        case 'json':
          return pretty(p.value);
        case 'resource':
          return `[resource ${p.uri}]\n${p.text ?? ''}`;
        default:
          return `[${p.type} ${p.mime_type}]`;
      }
    })
    .join('\n');
}

export function pretty(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

/**
 * An MCP client config as people write it: `command` before `args` in each
 * server (the engine's JSON sorts keys), two-space indent.
 */
export function mcpConfigText(config: unknown): string {
  return JSON.stringify(
    config,
    (_key: string, v: unknown) => {
      if (v === null || typeof v !== 'object' || Array.isArray(v) || !('command' in v)) return v;
      const { command, ...rest } = v as Record<string, unknown>;
      return { command, ...rest };
    },
    2,
  );
}
