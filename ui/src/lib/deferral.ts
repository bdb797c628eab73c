/**
 * How deferral reads in the Tools view: which clients reach a tool only
 * through `tool_search`, and each client's switch. These are the console's
 * labels around the engine's facts (`deferred_for`, `ClientView`); the
 * engine's own sentence about a client's plan (`words`) is shown as is.
 */
import type { ClientView, DeferMode } from './api/types';
import type { Look } from './format';

/** "a", "a and b", "a, b and c". */
export function listWords(names: readonly string[]): string {
  if (names.length <= 1) return names[0] ?? '';
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/** A row's pill: "Deferred for claude-code", "Deferred for 2 clients" (the names in its title). */
export function deferredPill(clients: readonly string[]): { look: Look; title: string } | null {
  if (clients.length === 0) return null;
  const word = clients.length === 1 ? `Deferred for ${clients[0]}` : `Deferred for ${clients.length} clients`;
  return {
    look: { tone: 'muted', icon: 'search', word },
    title: `Not in the tools list of ${listWords(clients)}: reached through tool_search`,
  };
}

/** The detail panel's sentence naming the clients, or null when none defers it. */
export function deferredSentence(clients: readonly string[]): string | null {
  if (clients.length === 0) return null;
  const who = listWords(clients);
  return clients.length === 1
    ? `${who} does not see this tool in its tools list: it finds it with tool_search and calls it through tool_call.`
    : `${who} do not see this tool in their tools lists: they find it with tool_search and call it through tool_call.`;
}

/** The switch's choices, in order. */
export const MODES: readonly { mode: DeferMode; word: string; title: string }[] = [
  { mode: 'auto', word: 'Auto', title: 'Defer when the tools would take too much of its context window' },
  { mode: 'on', word: 'On', title: 'Always fold its deferrable tools behind tool_search' },
  { mode: 'off', word: 'Off', title: 'List every tool it may see' },
];

/** Whether a client is connected, as a pill. */
export function presenceLook(c: Pick<ClientView, 'connected'>): Look {
  return c.connected ? { tone: 'ok', icon: 'plug', word: 'Connected' } : { tone: 'muted', icon: 'wifi-off', word: 'Not connected' };
}

/** Where the mode in force comes from. */
export function modeOrigin(c: Pick<ClientView, 'chosen'>): string {
  return c.chosen ? 'Chosen here, over the config' : 'From the config';
}
