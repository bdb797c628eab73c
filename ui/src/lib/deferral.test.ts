import { describe, expect, it } from 'vitest';
import { deferredPill, deferredSentence, listWords, modeOrigin, presenceLook } from './deferral';

describe('deferral words', () => {
  it('joins names as a sentence does', () => {
    expect(listWords([])).toBe('');
    expect(listWords(['a'])).toBe('a');
    expect(listWords(['a', 'b'])).toBe('a and b');
    expect(listWords(['a', 'b', 'c'])).toBe('a, b and c');
  });

  it('names one client in the pill, counts several and names them in its title', () => {
    expect(deferredPill([])).toBeNull();
    const one = deferredPill(['claude-code']);
    expect(one?.look.word).toBe('Deferred for claude-code');
    expect(one?.look.icon).toBe('search');
    expect(one?.title).toBe('Not in the tools list of claude-code: reached through tool_search');
    const two = deferredPill(['claude-code', 'cursor']);
    expect(two?.look.word).toBe('Deferred for 2 clients');
    expect(two?.title).toContain('claude-code and cursor');
  });

  it('says who reaches the tool only through the bridge, in one sentence', () => {
    expect(deferredSentence([])).toBeNull();
    expect(deferredSentence(['claude-code'])).toBe(
      'claude-code does not see this tool in its tools list: it finds it with tool_search and calls it through tool_call.',
    );
    expect(deferredSentence(['a', 'b', 'c'])).toMatch(/^a, b and c do not see this tool in their tools lists: they /);
  });

  it('says whether a client is here and where its mode comes from, with a word besides the colour', () => {
    expect(presenceLook({ connected: true })).toMatchObject({ word: 'Connected', icon: 'plug' });
    expect(presenceLook({ connected: false })).toMatchObject({ word: 'Not connected', icon: 'wifi-off' });
    expect(modeOrigin({ chosen: 'off' })).toBe('Chosen here, over the config');
    expect(modeOrigin({ chosen: null })).toBe('From the config');
  });
});
