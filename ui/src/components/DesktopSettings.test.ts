import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import DesktopSettings from './DesktopSettings.svelte';
import Settings from '../views/Settings.svelte';
import { desktopHost, type DesktopSettings as Values, type TauriInternals } from '../host/tauri';
import { fakeEngine, testStore } from '../test/harness';
import { router } from '../lib/router.svelte';

/** A desktop shell behind a fake __TAURI_INTERNALS__, with a switch to refuse changes. */
function shell(initial: Values = { notifications: true, start_at_login: false }) {
  const state = { ...initial };
  const sent: unknown[] = [];
  const ctl = { refuse: null as string | null, failLoad: false };
  const internals: TauriInternals = {
    invoke: async (cmd, args) => {
      if (cmd === 'get_desktop_settings') {
        if (ctl.failLoad) throw 'desktop settings /x/desktop.json are unreadable (expected value); fix or delete the file to get the defaults';
        return { ...state };
      }
      if (cmd === 'set_desktop_settings') {
        sent.push(args);
        if (ctl.refuse) throw ctl.refuse;
        Object.assign(state, (args as { patch: Partial<Values> }).patch);
        return { ...state };
      }
      throw `unknown command ${cmd}`;
    },
  };
  const host = desktopHost({ __TAURI_INTERNALS__: internals });
  if (!host) throw new Error('no host');
  return { host, state, sent, ctl };
}

describe('DesktopSettings', () => {
  it('shows both switches as the app has them, and saves a change at once', async () => {
    const s = shell();
    render(DesktopSettings, { host: s.host });
    const login = await screen.findByRole('switch', { name: 'Start at login' });
    const notify = screen.getByRole('switch', { name: 'Notify when a call waits for approval' });
    expect(login).not.toBeChecked();
    expect(notify).toBeChecked();
    await fireEvent.click(login);
    await waitFor(() => expect(s.state.start_at_login).toBe(true));
    expect(s.sent).toEqual([{ patch: { start_at_login: true } }]);
    await waitFor(() => expect(login).toBeChecked());
    expect(login).toBeEnabled();
  });

  it('flips back and says why, with what to do, when the app refuses', async () => {
    const s = shell();
    s.ctl.refuse = 'could not register the login item: org.freedesktop.portal.Background is not available';
    render(DesktopSettings, { host: s.host });
    const login = await screen.findByRole('switch', { name: 'Start at login' });
    await fireEvent.click(login);
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent(
      '“Start at login” was not changed: could not register the login item: org.freedesktop.portal.Background is not available. Nothing was saved',
    );
    expect(alert).toHaveTextContent(/Nothing was saved; fix what this names and switch it again/);
    expect(login).not.toBeChecked();
    expect(s.state.start_at_login).toBe(false);
    // A later success clears the note.
    s.ctl.refuse = null;
    await fireEvent.click(login);
    await waitFor(() => expect(screen.queryByRole('alert')).toBeNull());
    expect(login).toBeChecked();
  });

  it('says when the settings cannot be read, and tries again', async () => {
    const s = shell();
    s.ctl.failLoad = true;
    render(DesktopSettings, { host: s.host });
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent(/fix or delete the file to get the defaults/);
    s.ctl.failLoad = false;
    await fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    expect(await screen.findByRole('switch', { name: 'Start at login' })).toBeInTheDocument();
  });
});

describe('Settings view', () => {
  function open(host: ReturnType<typeof shell>['host'] | null) {
    fakeEngine();
    const t = testStore();
    router.route = { view: 'settings', params: new URLSearchParams('tab=desktop') };
    return render(Settings, { context: t.context, props: { host } });
  }

  it('has no Desktop section in a browser, even when the URL asks for it', () => {
    open(null);
    expect(screen.queryByRole('tab', { name: 'Desktop' })).toBeNull();
    expect(screen.getByRole('tab', { name: 'Appearance' })).toHaveAttribute('aria-selected', 'true');
  });

  it('shows the Desktop section inside the desktop app', async () => {
    open(shell().host);
    expect(screen.getByRole('tab', { name: 'Desktop' })).toHaveAttribute('aria-selected', 'true');
    expect(await screen.findByRole('switch', { name: 'Start at login' })).toBeInTheDocument();
  });
});
