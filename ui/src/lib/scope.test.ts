import { describe, expect, it } from 'vitest';
import { argClause, commandPrefix, hasBareComma, initialChoice, literalGlob, pointerOf, scopeProblems, scopeText, suggestArgs, type ScopeChoice } from './scope';

describe('scopeText', () => {
  it('starts as "this tool" (prefilled with the tool)', () => {
    expect(scopeText(initialChoice({ command: 'ls' }))).toBe('tool');
  });

  it('adds ticked argument clauses, exact args and caller, in the engine syntax', () => {
    const c: ScopeChoice = {
      tool: 'this',
      args: [
        { pointer: '/command', kind: 'glob', pattern: 'git status*', enabled: true },
        { pointer: '/cwd', kind: 'path', pattern: '~/proj/**', enabled: true },
        { pointer: '/env', kind: 'regex', pattern: '^CI=', enabled: false },
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

describe('suggestions from the request arguments', () => {
  it('a path → everything under its directory; a command → same program and subcommand; a URL → same origin', () => {
    const s = suggestArgs({
      path: '~/proj/src/main.rs',
      command: 'git status --short',
      url: 'https://api.github.com/repos/x/y?page=2',
      title: 'hello, world',
      token: '[redacted]',
      n: 3,
    });
    expect(s).toEqual([
      { pointer: '/path', kind: 'path', pattern: '~/proj/src/**', enabled: false },
      { pointer: '/command', kind: 'glob', pattern: 'git status*', enabled: false },
      { pointer: '/url', kind: 'glob', pattern: 'https://api.github.com/*', enabled: false },
      { pointer: '/title', kind: 'glob', pattern: 'hello? world', enabled: false },
    ]);
  });

  it('handles odd argument shapes', () => {
    expect(suggestArgs(null)).toEqual([]);
    expect(suggestArgs(['a'])).toEqual([]);
    expect(suggestArgs({ 'a/b': '/etc/hosts' })[0]?.pointer).toBe('/a~1b');
  });

  it('builds command prefixes', () => {
    expect(commandPrefix('ls -la')).toBe('ls *');
    expect(commandPrefix('make')).toBe('make*');
    expect(commandPrefix('npm test -- --watch')).toBe('npm test*');
    // Shell operators: only the exact command, never a prefix.
    expect(commandPrefix('rm -rf build/ && cargo build')).toBe('rm -rf build/ && cargo build');
    expect(commandPrefix('cat a | sh')).toBe('cat a | sh');
    expect(commandPrefix('echo $(id)')).toBe('echo $(id)');
  });

  it('escapes glob metacharacters and pointer characters', () => {
    expect(literalGlob('a*b?[c]{d}')).toBe('a[*]b[?][[]c[]][{]d[}]');
    expect(pointerOf('a~b/c')).toBe('/a~0b~1c');
  });
});

describe('problems found before asking the engine', () => {
  it('flags bare commas, empty patterns, bad regexes and pointers', () => {
    const c: ScopeChoice = {
      tool: { glob: '' },
      args: [
        { pointer: '/a', kind: 'glob', pattern: 'x,y', enabled: true },
        { pointer: 'b', kind: 'glob', pattern: 'ok', enabled: true },
        { pointer: '/c', kind: 'regex', pattern: '(', enabled: true },
        { pointer: '/d', kind: 'glob', pattern: '', enabled: true },
        { pointer: '/e', kind: 'glob', pattern: '', enabled: false },
      ],
      exact: false,
      caller: false,
    };
    const p = scopeProblems(c);
    expect(p).toHaveLength(5);
    expect(hasBareComma('{a,b}')).toBe(false);
    expect(hasBareComma('[,]')).toBe(false);
    expect(hasBareComma('a,b')).toBe(true);
    expect(scopeProblems(initialChoice({}))).toEqual([]);
  });
});
