import { describe, expect, it, vi } from 'vitest';
import { DesktopError, desktopHost, type TauriInternals } from './tauri';

function fake(answer: (cmd: string, args?: Record<string, unknown>) => unknown) {
  const calls: [string, Record<string, unknown> | undefined][] = [];
  const internals: TauriInternals = {
    invoke: vi.fn(async (cmd: string, args?: Record<string, unknown>) => {
      calls.push([cmd, args]);
      return answer(cmd, args);
    }),
  };
  return { calls, window: { __TAURI_INTERNALS__: internals } };
}

describe('desktopHost', () => {
  it('is null in a browser (no __TAURI_INTERNALS__)', () => {
    expect(desktopHost({})).toBeNull();
    expect(desktopHost(undefined)).toBeNull();
    expect(desktopHost(window)).toBeNull();
  });

  it('reads the settings with get_desktop_settings', async () => {
    const f = fake(() => ({ notifications: true, start_at_login: false }));
    const host = desktopHost(f.window);
    await expect(host?.getSettings()).resolves.toEqual({ notifications: true, start_at_login: false });
    expect(f.calls).toEqual([['get_desktop_settings', undefined]]);
  });

  it('sends set_desktop_settings {patch} with only the named fields', async () => {
    const f = fake((_cmd, args) => ({ notifications: true, start_at_login: (args?.['patch'] as { start_at_login?: boolean }).start_at_login ?? false }));
    const host = desktopHost(f.window);
    await expect(host?.setSettings({ start_at_login: true })).resolves.toEqual({ notifications: true, start_at_login: true });
    await host?.setSettings({ notifications: false, start_at_login: undefined });
    expect(f.calls).toEqual([
      ['set_desktop_settings', { patch: { start_at_login: true } }],
      ['set_desktop_settings', { patch: { notifications: false } }],
    ]);
  });

  it("turns the shell's rejection (a string) into a DesktopError with its words", async () => {
    const f = fake(() => {
      throw 'desktop settings /home/ada/.config/toolgate/desktop.json: Permission denied (os error 13)';
    });
    const e = await desktopHost(f.window)
      ?.setSettings({ notifications: false })
      .catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DesktopError);
    expect((e as Error).message).toBe('desktop settings /home/ada/.config/toolgate/desktop.json: Permission denied (os error 13)');
  });

  it('refuses an answer that is not the settings', async () => {
    const f = fake(() => ({ notifications: 'yes' }));
    await expect(desktopHost(f.window)?.getSettings()).rejects.toThrow(/does not understand/);
  });
});
