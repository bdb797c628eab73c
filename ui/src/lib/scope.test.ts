import { describe, expect, it } from 'vitest';
import type { ScopeOffer } from './api/types';
import { argClause, hasBareComma, initialChoice, scopeProblems, scopeText, TTL_CHOICES, ttlIndex, type ScopeChoice } from './scope';

const OFFER: ScopeOffer = {
  args: [
    { pointer: '/command', kind: 'regex', pattern: '^ls(?: +[A-Za-z0-9_./=:@%+~*?-]+)* *$', ticked: true, words: 'the command runs `ls` with any plain arguments' },
    { pointer: '/cwd', kind: 'path', pattern: '/home/u/proj', ticked: true, words: 'the working directory is `/home/u/proj`' },
    { pointer: '/note', kind: 'glob', pattern: 'hello', ticked: false, words: 'the note is exactly `hello`' },
  ],
  exact: false,
  caller: true,
  narrowest: 'tool,/command:re=^ls(?: +[A-Za-z0-9_./=:@%+~*?-]+)* *$,/cwd:path=/home/u/proj,caller',
  ttl_s: 86_400,
};

describe('the starting choice', () => {
  it('is the engine’s narrowest scope, spelled back exactly', () => {
    const c = initialChoice(OFFER);
    expect(c.caller).toBe(true);
    expect(c.args.map((a) => a.enabled)).toEqual([true, true, false]);
    expect(scopeText(c)).toBe(OFFER.narrowest);
    expect(scopeProblems(c)).toEqual([]);
  });

  it('falls back to exact arguments when the engine says so, and leaves out a caller it cannot name', () => {
    const c = initialChoice({ ...OFFER, args: [], exact: true, caller: false, narrowest: 'tool,args' });
    expect(scopeText(c)).toBe('tool,args');
  });

  it('starts at the engine’s expiry', () => {
    expect(TTL_CHOICES[ttlIndex(86_400)]?.label).toBe('1 day');
    expect(TTL_CHOICES[ttlIndex(3_600)]?.label).toBe('1 hour');
    expect(TTL_CHOICES[ttlIndex(10)]?.label).toBe('1 hour');
  });
});

describe('scopeText', () => {
  it('adds ticked argument clauses, exact args and caller, in the engine syntax', () => {
    const c: ScopeChoice = {
      tool: 'this',
      args: [
        { pointer: '/command', kind: 'glob', pattern: 'git status*', enabled: true, words: '', offered: '' },
        { pointer: '/cwd', kind: 'path', pattern: '~/proj/**', enabled: true, words: '', offered: '' },
        { pointer: '/env', kind: 'regex', pattern: '^CI=', enabled: false, words: '', offered: '' },
      ],
      exact: false,
      caller: true,
    };
    expect(scopeText(c)).toBe('tool,/command=git status*,/cwd:path=~/proj/**,caller');
    expect(scopeText({ ...c, tool: { glob: 'fs_*' }, caller: false, exact: true })).toBe('tool=fs_*,/command=git status*,/cwd:path=~/proj/**,args');
    expect(scopeText({ ...c, tool: { glob: '  ' } })).toMatch(/^tool=\*/);
  });

  it('writes each pattern kind', () => {
    expect(argClause({ pointer: '/p', kind: 'glob', pattern: 'x*' })).toBe('/p=x*');
    expect(argClause({ pointer: '/p', kind: 'path', pattern: '~/a/**' })).toBe('/p:path=~/a/**');
    expect(argClause({ pointer: '/p', kind: 'regex', pattern: '^a' })).toBe('/p:re=^a');
  });
});

describe('problems found before asking the engine', () => {
  it('flags bare commas, empty patterns and bad regexes, in words', () => {
    const arg = (pointer: string, kind: ScopeChoice['args'][number]['kind'], pattern: string, enabled = true) => ({ pointer, kind, pattern, enabled, words: '', offered: pattern });
    const c: ScopeChoice = {
      tool: { glob: '' },
      args: [arg('/a', 'glob', 'x,y'), arg('/c', 'regex', '('), arg('/d', 'glob', ''), arg('/e', 'glob', '', false)],
      exact: false,
      caller: false,
    };
    const p = scopeProblems(c);
    expect(p).toHaveLength(4);
    expect(p[1]).toBe('The pattern for “a” has a comma outside {} or []; write ? for it.');
    expect(hasBareComma('{a,b}')).toBe(false);
    expect(hasBareComma('[,]')).toBe(false);
    expect(hasBareComma('a,b')).toBe(true);
  });
});
