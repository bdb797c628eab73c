import { describe, expect, it } from 'vitest';
import { barScale, barSegments, segments, stageTimes } from './stages';
import { jsonTokens } from './json';

describe('stage times', () => {
  const stages: [import('./api/types').StageName, number][] = [
    ['execute', 200],
    ['timeout', 205],
    ['policy', 240],
    ['allowlist', 250],
  ];

  it('orders outermost first with self times', () => {
    expect(stageTimes(stages)).toEqual([
      { stage: 'allowlist', inclusive: 250, self: 10 },
      { stage: 'policy', inclusive: 240, self: 35 },
      { stage: 'timeout', inclusive: 205, self: 5 },
      { stage: 'execute', inclusive: 200, self: 200 },
    ]);
  });

  it('splits the total into tool, approval wait, retries and checks', () => {
    expect(segments(stages)).toEqual([
      { kind: 'gate', us: 10 },
      { kind: 'wait', us: 35 },
      { kind: 'retry', us: 5 },
      { kind: 'tool', us: 200 },
    ]);
    expect(segments([])).toEqual([]);
  });

  it('folds tiny waits and retries into the checks for small bars', () => {
    expect(barSegments(stages)).toEqual([
      { kind: 'gate', us: 50 },
      { kind: 'tool', us: 200 },
    ]);
    const waited: [import('./api/types').StageName, number][] = [
      ['execute', 1_000],
      ['policy', 9_000_000],
      ['allowlist', 9_000_010],
    ];
    expect(barSegments(waited).map((s) => s.kind)).toEqual(['gate', 'wait', 'tool']);
  });

  it('scales bars on a log scale', () => {
    expect(barScale(1)).toBeCloseTo(0.04);
    expect(barScale(60_000_000)).toBe(1);
    expect(barScale(1_000)).toBeLessThan(barScale(1_000_000));
  });
});

describe('json tokens', () => {
  it('tokenises and marks redacted values', () => {
    const t = jsonTokens({ a: 1, token: '[redacted]', ok: true, n: null, s: 'x' });
    expect(t.map((x) => x.text).join('')).toBe(JSON.stringify({ a: 1, token: '[redacted]', ok: true, n: null, s: 'x' }, null, 2));
    expect(t.find((x) => x.kind === 'redacted')?.text).toBe('"[redacted]"');
    expect(t.filter((x) => x.kind === 'key').map((x) => x.text)).toEqual(['"a"', '"token"', '"ok"', '"n"', '"s"']);
  });
});
