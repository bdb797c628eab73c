/**
 * How a core tool reads in the Tools view: the pill in its row and detail,
 * and the pin button. These are the console's labels around the engine's
 * facts (`ToolSummary.core`: the reason, whether a person pinned it); the
 * engine's sentence about why (`words`) is shown as it is.
 */
import type { CoreReason, CoreView } from './api/types';
import type { Look } from './format';

const REASON_WORD: Record<CoreReason['kind'], string> = {
  builtin: 'built-in',
  config: 'config',
  pinned: 'pinned',
};

/** The pill: "Core · pinned", "Core · built-in", "Core · config" (the engine's sentence in its title); null when the tool may be deferred. */
export function corePill(core: CoreView | null): { look: Look; title: string } | null {
  if (!core) return null;
  const pinnedHere = core.reason.kind === 'pinned';
  return {
    look: { tone: pinnedHere ? 'info' : 'muted', icon: pinnedHere ? 'pin' : 'lock', word: `Core · ${REASON_WORD[core.reason.kind]}` },
    title: core.words.replaceAll('`', ''),
  };
}

/** What the pin button does for this tool: pin, unpin, or nothing (core by a rule a pin cannot change). */
export type PinAction = { pinned: boolean; word: string; title: string } | null;

export function pinAction(core: CoreView | null): PinAction {
  if (core?.pinned) return { pinned: false, word: 'Unpin', title: 'Take back the pin: it may be deferred again (p)' };
  if (core) return null;
  return { pinned: true, word: 'Pin as core', title: 'Never defer it: list it directly to every agent (p)' };
}
