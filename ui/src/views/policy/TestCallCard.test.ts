import { fireEvent, render, screen } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import TestCallCard from './TestCallCard.svelte';

describe('Test a call', () => {
  it('starts from a real tool, and says why Test waits when the field names none', async () => {
    render(TestCallCard, { version: 3, toolNames: ['fs_read', 'shell_exec'] });
    const field = screen.getByRole('combobox', { name: 'Tool' });
    const test = screen.getByRole('button', { name: 'Test' });
    expect(field).toHaveValue('shell_exec');
    expect(test).toBeEnabled();
    expect(test).toHaveAccessibleDescription('Tests the running policy (v3), not unsaved edits.');

    await fireEvent.input(field, { target: { value: '' } });
    expect(test).toBeDisabled();
    expect(test).toHaveAccessibleDescription('Name a tool to test.');

    await fireEvent.input(field, { target: { value: 'no_such_tool' } });
    expect(test).toBeDisabled();
    expect(test).toHaveAccessibleDescription('No tool is called “no_such_tool”: pick one from the list.');

    await fireEvent.input(field, { target: { value: ' fs_read ' } });
    expect(test).toBeEnabled();
  });
});
