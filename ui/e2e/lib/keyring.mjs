// @ts-check
// A private Secret Service for one test file: its own D-Bus session bus
// (dbus-run-session) with gnome-keyring-daemon unlocked by a fixed
// password, in a throwaway HOME (a stale login.keyring with another
// password makes the unlock fail silently). A daemon started with
// `env: { DBUS_SESSION_BUS_ADDRESS: keyring.bus }` stores its secrets
// there, never in the person's keychain. Needs Debian's gnome-keyring,
// dbus and dbus-x11 (as scripts/keyring-test does).

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { within } from './wait.mjs';

/**
 * The session runs this: unlock, wait until the default collection answers
 * on the bus (polled with a deadline, as scripts/keyring-test does), print
 * the bus address, then hold the session open until stdin closes.
 */
const SESSION = `
set -eu
printf toolgate-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.secrets \\
    /org/freedesktop/secrets/aliases/default \\
    org.freedesktop.DBus.Properties.Get string:org.freedesktop.Secret.Collection string:Locked >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -le 100 ] || { echo "the keyring never answered on the bus" >&2; exit 1; }
  sleep 0.1
done
echo "bus=$DBUS_SESSION_BUS_ADDRESS"
cat >/dev/null
`;

/** What is missing to run a private Secret Service, or `null`. */
export function keyringMissing() {
  for (const tool of ['dbus-run-session', 'gnome-keyring-daemon', 'dbus-send']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0) continue;
    const why = `${tool} is not installed (apt-get install gnome-keyring dbus dbus-x11)`;
    // Under CI a missing component fails the run; it never skips quietly.
    if (process.env.CI === 'true') throw new Error(`the keychain tests cannot run: ${why}`);
    console.error(`\n*** keychain tests SKIPPED: ${why} ***\n`);
    return why;
  }
  return null;
}

export class SecretService {
  /** The session bus address to give a daemon (`DBUS_SESSION_BUS_ADDRESS`). */
  bus = '';
  dir = '';
  proc = /** @type {import('node:child_process').ChildProcessWithoutNullStreams} */ (/** @type {unknown} */ (null));
  /** @type {Promise<unknown>} */
  exited = Promise.resolve();

  static async start() {
    const s = new SecretService();
    s.dir = mkdtempSync(join(tmpdir(), 'tg-keyring-'));
    const runtime = join(s.dir, 'run');
    mkdirSync(runtime);
    chmodSync(runtime, 0o700);
    s.proc = spawn('dbus-run-session', ['--', 'sh', '-c', SESSION], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: s.dir, XDG_RUNTIME_DIR: runtime },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    s.proc.stdout.setEncoding('utf8');
    s.proc.stderr.setEncoding('utf8');
    s.proc.stderr.on('data', (d) => (err += d));
    s.exited = new Promise((resolve) => s.proc.once('exit', resolve));
    s.bus = await within(
      'the private Secret Service to answer',
      new Promise((resolve, reject) => {
        s.proc.stdout.on('data', (d) => {
          out += d;
          const m = /^bus=(\S+)$/m.exec(out);
          if (m?.[1]) resolve(m[1]);
        });
        void s.exited.then(() => reject(new Error(`the private Secret Service ended before it answered:\n${err}${out}`)));
      }),
      20_000,
    );
    return s;
  }

  /** Ends the session: the bus goes, and the keyring daemon with it. */
  async stop() {
    this.proc.stdin.end();
    await within('the private Secret Service to end', this.exited, 10_000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
