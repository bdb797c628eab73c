/**
 * Diffs a person reads: a word diff of a tool description, a line diff of
 * JSON (schemas, outputs), a unified config diff from the engine, and the
 * injection markers in a description (matching the engine's
 * `upstream::inspect` flags) so they can be highlighted.
 */
import { diffJson, diffLines, diffWordsWithSpace } from 'diff';
import type { InjectionFlag } from './api/types';

export interface Part {
  text: string;
  op: 'same' | 'add' | 'del';
}

function parts(changes: { value: string; added?: boolean; removed?: boolean }[]): Part[] {
  return changes.map((c) => ({ text: c.value, op: c.added ? 'add' : c.removed ? 'del' : 'same' }));
}

/** Word diff of two texts (whitespace kept, so the result reads as the text). */
export function wordDiff(before: string, after: string): Part[] {
  return parts(diffWordsWithSpace(before, after));
}

/** A diff line: text and what happened to it. */
export interface Line {
  text: string;
  op: 'same' | 'add' | 'del';
}

function toLines(ps: Part[]): Line[] {
  const out: Line[] = [];
  for (const p of ps) {
    const lines = p.text.split('\n');
    if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
    for (const l of lines) out.push({ text: l, op: p.op });
  }
  return out;
}

/** Line diff of two JSON values, keys sorted so reordering is not a change. */
export function jsonDiff(before: unknown, after: unknown): Line[] {
  return toLines(parts(diffJson(sortKeys(before) as object, sortKeys(after) as object)));
}

/** Line diff of two texts. */
export function textDiff(before: string, after: string): Line[] {
  return toLines(parts(diffLines(before, after)));
}

/** Whether a diff changes anything. */
export function changed(d: readonly { op: string }[]): boolean {
  return d.some((p) => p.op !== 'same');
}

/** A value with every object's keys sorted (stable JSON for diffs). */
export function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as Record<string, unknown>).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

export interface UnifiedLine {
  text: string;
  kind: 'add' | 'del' | 'hunk' | 'meta' | 'same';
}

/** Classifies the lines of a unified diff (the engine's policy diff). */
export function unifiedLines(diff: string): UnifiedLine[] {
  if (!diff.trim()) return [];
  return diff
    .replace(/\n$/, '')
    .split('\n')
    .map((text) => {
      if (text.startsWith('+++') || text.startsWith('---')) return { text, kind: 'meta' as const };
      if (text.startsWith('@@')) return { text, kind: 'hunk' as const };
      if (text.startsWith('+')) return { text, kind: 'add' as const };
      if (text.startsWith('-')) return { text, kind: 'del' as const };
      return { text, kind: 'same' as const };
    });
}

// ---------------------------------------------------------------- injection markers

export interface Marker {
  start: number;
  end: number;
  flag: InjectionFlag;
}

const ZERO_WIDTH = /[\u200B-\u200D\u2060\uFEFF]/g;
const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F]/g;
const IMPORTANT_TAG = /<\/?\s*(important|system|instructions?|admin|secret)\b[^>]*>/gi;
const HTML_COMMENT = /<!--[\s\S]*?(-->|$)/g;
const OVERRIDE =
  /\b(ignore|disregard|forget|override)\b[^.\n]{0,40}?\b(previous|prior|above|earlier|all|your|system)\b[^.\n]{0,30}?\b(instructions?|rules|prompts?|guidelines|messages?)\b|\bdo not (tell|inform|mention)[^.\n]{0,30}\b(user|human)\b/gi;

const FLAG_WORDS: Record<InjectionFlag, string> = {
  important_tag: 'instruction tag',
  override_phrase: 'override phrase',
  zero_width: 'hidden zero-width character',
  bidi_control: 'text-direction control character',
  html_comment: 'hidden HTML comment',
};

export function flagWords(f: InjectionFlag): string {
  return FLAG_WORDS[f] ?? f;
}

/** Where the markers are in `text`, sorted, non-overlapping (first one wins). */
export function findMarkers(text: string): Marker[] {
  const found: Marker[] = [];
  const scan = (re: RegExp, flag: InjectionFlag) => {
    re.lastIndex = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      if (m[0].length === 0) {
        re.lastIndex++;
        continue;
      }
      found.push({ start: m.index, end: m.index + m[0].length, flag });
    }
  };
  scan(HTML_COMMENT, 'html_comment');
  scan(IMPORTANT_TAG, 'important_tag');
  scan(OVERRIDE, 'override_phrase');
  scan(ZERO_WIDTH, 'zero_width');
  scan(BIDI, 'bidi_control');
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: Marker[] = [];
  let end = -1;
  for (const m of found) {
    if (m.start >= end) {
      out.push(m);
      end = m.end;
    }
  }
  return out;
}

export interface Segment {
  text: string;
  flag: InjectionFlag | null;
}

/** Invisible characters spelled out so a person sees them (`⟦U+200B⟧`). */
export function reveal(text: string): string {
  return text.replace(/[\u200B-\u200D\u2060\uFEFF\u202A-\u202E\u2066-\u2069\u200E\u200F]/g, (c) => {
    return `⟦U+${c.codePointAt(0)?.toString(16).toUpperCase().padStart(4, '0')}⟧`;
  });
}

/** `text` cut into plain and marked segments, invisible characters revealed. */
export function markSegments(text: string): Segment[] {
  const out: Segment[] = [];
  let at = 0;
  for (const m of findMarkers(text)) {
    if (m.start > at) out.push({ text: reveal(text.slice(at, m.start)), flag: null });
    out.push({ text: reveal(text.slice(m.start, m.end)), flag: m.flag });
    at = m.end;
  }
  if (at < text.length) out.push({ text: reveal(text.slice(at)), flag: null });
  return out;
}

/** A word-diff part split further by markers, for rendering both at once. */
export interface MarkedPart extends Part {
  flag: InjectionFlag | null;
}

export function markedWordDiff(before: string, after: string): MarkedPart[] {
  // Markers are found in each whole text (a marker may span several diff
  // parts), then each part is cut at marker edges in the text it belongs to.
  const inBefore = findMarkers(before);
  const inAfter = findMarkers(after);
  const out: MarkedPart[] = [];
  let posB = 0;
  let posA = 0;
  for (const p of wordDiff(before, after)) {
    const markers = p.op === 'del' ? inBefore : inAfter;
    const start = p.op === 'del' ? posB : posA;
    const end = start + p.text.length;
    let at = start;
    for (const m of markers) {
      if (m.end <= at || m.start >= end) continue;
      const s = Math.max(m.start, at);
      const e = Math.min(m.end, end);
      if (s > at) out.push({ text: reveal(p.text.slice(at - start, s - start)), op: p.op, flag: null });
      out.push({ text: reveal(p.text.slice(s - start, e - start)), op: p.op, flag: m.flag });
      at = e;
    }
    if (at < end) out.push({ text: reveal(p.text.slice(at - start)), op: p.op, flag: null });
    if (p.op !== 'add') posB += p.text.length;
    if (p.op !== 'del') posA += p.text.length;
  }
  return out;
}
