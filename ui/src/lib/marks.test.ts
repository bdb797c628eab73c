import { describe, expect, it } from 'vitest';
import { hits, segments } from './marks';

describe('marked runs', () => {
  it('joins neighbours of a kind and drops empty runs', () => {
    expect(
      segments(
        [
          { text: 'create', hit: true },
          { text: '', hit: false },
          { text: '_', hit: false },
          { text: 'issue', hit: true },
          { text: ' now', hit: false },
          { text: ' ok', hit: false },
        ],
        'create_issue now ok',
      ),
    ).toEqual([
      { text: 'create', hit: true },
      { text: '_', hit: false },
      { text: 'issue', hit: true },
      { text: ' now ok', hit: false },
    ]);
  });

  it('joins two hits in a row into one highlight', () => {
    expect(segments([{ text: 'bug', hit: true }, { text: 's', hit: true }], '')).toEqual([{ text: 'bugs', hit: true }]);
  });

  it('falls back to the plain text, and to nothing for an empty one', () => {
    expect(segments([], 'Open a new issue.')).toEqual([{ text: 'Open a new issue.', hit: false }]);
    expect(segments(undefined, 'x')).toEqual([{ text: 'x', hit: false }]);
    expect(segments([], '')).toEqual([]);
  });

  it('lists the highlighted words', () => {
    expect(hits([{ text: 'Open', hit: true }, { text: ' a new ', hit: false }, { text: 'issue', hit: true }, { text: '.', hit: false }])).toEqual(['Open', 'issue']);
  });

  it('does not change the runs it was given', () => {
    const runs = [{ text: 'a', hit: true }, { text: 'b', hit: true }];
    segments(runs, '');
    expect(runs).toEqual([{ text: 'a', hit: true }, { text: 'b', hit: true }]);
  });
});
