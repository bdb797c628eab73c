// @ts-check
// A real `toolgate serve` per test file: its own temp HOME, XDG dirs, data
// dir, config file and file root; the agent socket and the one-time console
// link read from what `serve` prints.

import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { within } from './wait.mjs';

const run = promisify(execFile);

/** The repository root. */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../fixtures');
export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

/** The binary under test: `TOOLGATE_BIN`, else `<repo>/target/debug/toolgate`. */
export function toolgateBin() {
  return process.env.TOOLGATE_BIN ?? join(REPO, 'target/debug/toolgate');
}

/**
 * What is missing to run the end-to-end tests, or `null`.
 * @returns {string | null}
 */
export function missing() {
  const bin = toolgateBin();
  if (!existsSync(bin)) {
    return `the toolgate binary is not at ${bin}: run \`npm --prefix ui run build\` then \`cargo build -p toolgate --bin toolgate\`, or set TOOLGATE_BIN`;
  }
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM}: install Debian's \`chromium\` package (or set CHROMIUM_BIN)`;
  return null;
}

/**
 * The `skip` option for a test file: a missing binary or browser fails the
 * run under CI=true, and is a loud skip elsewhere.
 * @returns {string | false}
 */
export function skipUnlessReady() {
  const why = missing();
  if (!why) return false;
  if (process.env.CI === 'true') throw new Error(`end-to-end tests cannot run: ${why}`);
  console.error(`\n*** end-to-end tests SKIPPED: ${why} ***\n`);
  return why;
}

/**
 * @typedef {object} StartOptions
 * @property {string} [config] the config file's TOML (`allowed_tools = ["*"]` is added when it sets no allowlist)
 * @property {Record<string, string>} [env] extra environment
 * @property {string[]} [args] extra `serve` arguments
 */

/** Daemons still running: killed if this process exits without stopping them. */
const LIVE = new Set();
process.on('exit', () => {
  for (const t of LIVE) t.proc?.kill('SIGKILL');
});

export class Toolgate {
  /** The `serve` process (set by {@link Toolgate.start}). */
  proc = /** @type {import('node:child_process').ChildProcess} */ (/** @type {unknown} */ (null));
  dir = '';
  home = '';
  root = '';
  dataDir = '';
  configFile = '';
  socket = '';
  /** A one-time login link, minted with `toolgate console --print` once the engine is up. */
  loginUrl = '';
  /** `http://127.0.0.1:PORT` */
  origin = '';
  stdout = '';
  stderr = '';
  /** @type {number | null} */
  exitCode = null;

  /**
   * Starts `toolgate serve` and waits for its console line.
   * @param {StartOptions} [opts]
   */
  static async start(opts = {}) {
    const t = new Toolgate();
    try {
      await t.#start(opts);
    } catch (e) {
      if (t.exitCode === null) t.proc?.kill('SIGKILL');
      LIVE.delete(t);
      if (t.dir && !process.env.E2E_KEEP) rmSync(t.dir, { recursive: true, force: true });
      throw e;
    }
    return t;
  }

  /** @param {StartOptions} opts */
  async #start({ config = '', env = {}, args = [] }) {
    const bin = toolgateBin();
    if (!existsSync(bin)) throw new Error(missing() ?? `no binary at ${bin}`);
    this.dir = mkdtempSync(join(tmpdir(), 'tg-e2e-'));
    this.home = join(this.dir, 'home');
    this.root = join(this.dir, 'root');
    this.dataDir = join(this.dir, 'data');
    const runtime = join(this.dir, 'run');
    for (const d of [this.home, this.root, this.dataDir, runtime, join(this.dir, 'config'), join(this.dir, 'share')]) {
      mkdirSync(d, { recursive: true });
    }
    chmodSync(runtime, 0o700);
    this.configFile = join(this.dir, 'config', 'config.toml');
    const allow = /^\s*allowed_tools\s*=/m.test(config) ? '' : 'allowed_tools = ["*"]\n';
    writeFileSync(this.configFile, `${allow}${config}\n`);
    this.env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.home,
      USER: process.env.USER ?? 'e2e',
      XDG_RUNTIME_DIR: runtime,
      XDG_DATA_HOME: join(this.dir, 'share'),
      XDG_CONFIG_HOME: join(this.dir, 'config'),
      TOOLGATE_LOG: process.env.TOOLGATE_LOG ?? 'warn',
      ...(process.env.CI ? { CI: process.env.CI } : {}),
      ...env,
    };
    await this.#launch(args);
    this.loginUrl = await this.freshLoginUrl();
  }

  /**
   * Spawns `toolgate serve` on this daemon's dirs and waits for its console
   * line.
   * @param {string[]} args extra `serve` arguments
   */
  async #launch(args) {
    const bin = toolgateBin();
    const ui = process.env.TOOLGATE_UI_DIR ? ['--ui-dir', process.env.TOOLGATE_UI_DIR] : [];
    this.stdout = '';
    this.exitCode = null;
    this.proc = spawn(bin, [...this.#globals(), 'serve', '--http-port', '0', ...ui, ...args], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    LIVE.add(this);
    this.proc.stdout?.setEncoding('utf8');
    this.proc.stderr?.setEncoding('utf8');
    this.proc.stderr?.on('data', (d) => {
      this.stderr += d;
      if (process.env.E2E_VERBOSE) process.stderr.write(`[toolgate] ${d}`);
    });
    const exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? 128 : 1);
        LIVE.delete(this);
        resolve(undefined);
      }),
    );
    this.exited = exited;
    await within(
      'toolgate serve to print its console link',
      new Promise((resolve, reject) => {
        this.proc.stdout?.on('data', (d) => {
          this.stdout += d;
          const sock = /serving MCP on unix:(\S+)/.exec(this.stdout);
          // serve prints the console's origin; a login link only to a
          // terminal (a link is a credential), so one is minted below.
          const con = /^console: (\S+)/m.exec(this.stdout);
          if (sock?.[1] && con?.[1]) {
            this.socket = sock[1];
            this.origin = new URL(con[1]).origin;
            resolve(undefined);
          }
        });
        void exited.then(() =>
          reject(new Error(`toolgate serve exited with ${this.exitCode} before it was ready:\n${this.stderr}${this.stdout}`)),
        );
      }),
      30_000,
    );
  }

  /** Stops the daemon with SIGTERM and waits for it to exit, keeping its dirs for {@link Toolgate.restart}. */
  async halt() {
    if (this.exitCode !== null || !this.proc) return;
    this.proc.kill('SIGTERM');
    await within('toolgate serve to exit after SIGTERM', this.exited, 10_000);
  }

  /**
   * Starts `toolgate serve` again on the same HOME, data dir, config and
   * sockets, after {@link Toolgate.halt}; `origin` is where it listens now.
   * @param {string[]} [args] extra `serve` arguments
   */
  async restart(args = []) {
    if (this.exitCode === null) throw new Error('restart() needs the daemon stopped first (halt())');
    await this.#launch(args);
  }

  /** @type {Record<string, string>} */
  env = {};
  /** @type {Promise<unknown>} */
  exited = Promise.resolve();

  #globals() {
    return ['--config', this.configFile, '--data-dir', this.dataDir, '--root', this.root];
  }

  /**
   * Runs a `toolgate` CLI command against this daemon.
   * @param {string[]} args
   * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
   */
  async cli(args) {
    try {
      const { stdout, stderr } = await run(toolgateBin(), [...this.#globals(), ...args], { env: this.env, timeout: 20_000 });
      return { code: 0, stdout, stderr };
    } catch (e) {
      const err = /** @type {{ code?: number, stdout?: string, stderr?: string }} */ (e);
      return { code: typeof err.code === 'number' ? err.code : 1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' };
    }
  }

  /**
   * A CLI command with `--json`, parsed; throws on a non-zero exit.
   * @param {string[]} args
   */
  async cliJson(args) {
    const r = await this.cli([...args, '--json']);
    if (r.code !== 0) throw new Error(`toolgate ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  /** A fresh one-time console link (`toolgate console --print`). */
  async freshLoginUrl() {
    const r = await this.cli(['console', '--print']);
    const url = /http:\/\/\S+\/login\?t=\S+/.exec(r.stdout)?.[0];
    if (!url) throw new Error(`toolgate console --print gave no link (${r.code}): ${r.stdout}${r.stderr}`);
    return url;
  }

  /** @param {string} rel a path under the file root */
  rootPath(rel) {
    return join(this.root, rel);
  }

  /** Stops the daemon (SIGTERM; it promises to exit within 5 s) and removes its dir. */
  async stop() {
    if (this.exitCode === null && this.proc) {
      this.proc.kill('SIGTERM');
      try {
        await within('toolgate serve to exit after SIGTERM', this.exited, 10_000);
      } catch (e) {
        this.proc.kill('SIGKILL');
        await this.exited;
        throw e;
      }
    }
    if (!process.env.E2E_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * An `[[servers]]` entry running the Node fixture MCP server.
 * @param {string} name
 * @param {string} [extra] more keys for the entry
 */
export function fixtureServer(name, extra = '') {
  return `
[[servers]]
name = ${JSON.stringify(name)}
transport = "stdio"
command = ${JSON.stringify(process.execPath)}
args = [${JSON.stringify(join(FIXTURES, 'upstream.mjs'))}]
${extra}
`;
}
