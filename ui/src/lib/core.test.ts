import { describe, expect, it } from 'vitest';
import type { CoreView } from './api/types';
import { corePill, pinAction } from './core';

const view = (reason: CoreView['reason'], pinned: boolean): CoreView => ({ reason, pinned, words: `Why, with \`code\`.` });

describe('core tools', () => {
  it('names the reason in the pill, in words, and keeps the engine sentence for its title', () => {
    expect(corePill(null)).toBeNull();
    expect(corePill(view({ kind: 'pinned' }, true))).toEqual({
      look: { tone: 'info', icon: 'pin', word: 'Core · pinned' },
      title: 'Why, with code.',
    });
    expect(corePill(view({ kind: 'builtin' }, false))?.look.word).toBe('Core · built-in');
    expect(corePill(view({ kind: 'config', glob: 'github__get_*' }, false))?.look.word).toBe('Core · config');
  });

  it('offers a pin for a deferrable tool, an unpin for a pinned one, nothing for one core by a rule', () => {
    expect(pinAction(null)).toMatchObject({ pinned: true, word: 'Pin as core' });
    expect(pinAction(view({ kind: 'pinned' }, true))).toMatchObject({ pinned: false, word: 'Unpin' });
    expect(pinAction(view({ kind: 'config', glob: 'x*' }, true))).toMatchObject({ pinned: false, word: 'Unpin' });
    expect(pinAction(view({ kind: 'builtin' }, false))).toBeNull();
    expect(pinAction(view({ kind: 'config', glob: 'x*' }, false))).toBeNull();
  });
});
