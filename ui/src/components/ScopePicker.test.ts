import { fireEvent, render, screen, waitFor, within } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import ScopePicker from './ScopePicker.svelte';
import { fakeEngine } from '../test/harness';
import type { ScopeOffer, ScopePreview } from '../lib/api/types';
import type { ApprovalItem } from '../lib/stores/approvals.svelte';

const ITEM = {
  id: 7,
  call_id: 70,
  tool: 'shell_exec',
  preview: 'ls -la',
  risk: 'high',
  rule: 'r',
  reason: 'why',
  caller: 'socket agent-alpha pid 4',
  created_ms: 0,
  expires_ms: 1,
  status: 'pending',
  decided_ms: null,
  decided_by: null,
  decision_reason: null,
  rule_id: null,
  ended: null,
  mine: false,
  request: null,
} satisfies ApprovalItem;

const OFFER: ScopeOffer = {
  args: [{ pointer: '/command', kind: 'regex', pattern: '^ls(?: +[a-z-]+)* *$', ticked: true, words: 'the command runs `ls` with any plain arguments' }],
  exact: false,
  caller: true,
  narrowest: 'tool,/command:re=^ls(?: +[a-z-]+)* *$,caller',
  ttl_s: 86_400,
};

function engine() {
  return fakeEngine((c) => {
    const b = c.body as { scope: string; ttl_s?: number };
    const narrow = b.scope === OFFER.narrowest && b.ttl_s === 86_400;
    return {
      text: b.scope,
      covers_request: true,
      words: 'Every call of `shell_exec`.',
      problem: null,
      also_allows: narrow ? null : 'Also allows the same call from any caller.',
    } satisfies ScopePreview;
  });
}

describe('ScopePicker', () => {
  it('opens at the engine’s narrowest scope, and says what unticking also allows', async () => {
    const calls = engine();
    render(ScopePicker, { open: true, item: ITEM, offer: OFFER, mode: 'allow', onclose: () => {}, onconfirm: async () => {} });
    const dialog = screen.getByRole('dialog', { hidden: true });
    const command = within(dialog).getByRole('checkbox', { name: /the command runs ls with any plain arguments/, hidden: true });
    const caller = within(dialog).getByRole('checkbox', { name: /Only this caller/, hidden: true });
    expect(command).toBeChecked();
    expect(caller).toBeChecked();
    expect(within(dialog).getByRole('combobox', { name: /Expires after/, hidden: true })).toHaveDisplayValue('1 day');
    await waitFor(() => expect(calls.at(-1)?.body).toEqual({ scope: OFFER.narrowest, ttl_s: 86_400 }));
    await within(dialog).findByText('Includes this request');
    expect(within(dialog).queryByRole('note', { hidden: true })).toBeNull();
    expect(dialog).not.toHaveTextContent('refused by the engine');

    await fireEvent.click(caller);
    await waitFor(() => expect(calls.at(-1)?.body).toEqual({ scope: 'tool,/command:re=^ls(?: +[a-z-]+)* *$', ttl_s: 86_400 }));
    expect(await within(dialog).findByRole('note', { hidden: true })).toHaveTextContent('Also allows the same call from any caller.');
  });

  it('says why a caller cannot be chosen when the engine could not name its program', () => {
    engine();
    render(ScopePicker, { open: true, item: ITEM, offer: { ...OFFER, caller: false, narrowest: 'tool,args', exact: true, args: [] }, mode: 'deny', onclose: () => {}, onconfirm: async () => {} });
    const dialog = screen.getByRole('dialog', { hidden: true });
    expect(within(dialog).getByRole('checkbox', { name: /Only this caller/, hidden: true })).toBeDisabled();
    expect(dialog).toHaveTextContent('The system did not say which program this caller runs');
    expect(within(dialog).getByRole('checkbox', { name: /exactly these arguments/, hidden: true })).toBeChecked();
  });
});
