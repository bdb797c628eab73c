// @ts-check
// A real Postgres for a test file: Debian's `postgresql` binaries, a cluster
// made by `initdb` in a temp dir, listening on a private port and socket dir,
// with no system service involved (as `tests/common/postgres.rs` does for
// the Rust tests).
//
// `initdb` refuses to run as root; as root the cluster is made and run as
// the `postgres` user (through `setpriv`), in a dir that user owns.

import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BASE = '/usr/lib/postgresql';
const INSTALL = "install Debian's `postgresql` package (the test starts its own cluster)";

/**
 * The newest `/usr/lib/postgresql/<version>/bin` with an `initdb`, or null.
 * @returns {string | null}
 */
function binDir() {
  if (!existsSync(BASE)) return null;
  const versions = readdirSync(BASE)
    .map((v) => Number(v))
    .filter((v) => Number.isInteger(v) && existsSync(join(BASE, String(v), 'bin', 'initdb')))
    .sort((a, b) => b - a);
  return versions.length ? join(BASE, String(versions[0]), 'bin') : null;
}

/**
 * What is missing to start a Postgres, or null.
 * @returns {string | null}
 */
export function postgresMissing() {
  if (!binDir()) return `no Postgres server binaries under ${BASE}: ${INSTALL}`;
  if (process.getuid?.() === 0 && !postgresIds()) return `no \`postgres\` user to run Postgres as (this runs as root): ${INSTALL}`;
  return null;
}

/**
 * The `postgres` user's uid and gid, from `/etc/passwd`.
 * @returns {[number, number] | null}
 */
function postgresIds() {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const f = line?.split(':');
  return f && f[2] && f[3] ? [Number(f[2]), Number(f[3])] : null;
}

/** @returns {Promise<number>} a port nobody listens on now */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export class Postgres {
  dir = '';
  bin = '';
  port = 0;
  /** @type {[number, number] | null} */
  runAs = null;

  /** Makes and starts a fresh cluster; throws with what to install when it cannot. */
  static async start() {
    const why = postgresMissing();
    if (why) throw new Error(why);
    const pg = new Postgres();
    pg.bin = /** @type {string} */ (binDir());
    pg.dir = mkdtempSync(join(tmpdir(), 'tg-e2e-pg-'));
    pg.runAs = process.getuid?.() === 0 ? postgresIds() : null;
    if (pg.runAs) chownSync(pg.dir, pg.runAs[0], pg.runAs[1]);
    pg.port = await freePort();
    try {
      await pg.#run('initdb', ['-D', pg.#data(), '-U', 'postgres', '--auth=trust', '--no-sync']);
      await pg.startAgain();
    } catch (e) {
      rmSync(pg.dir, { recursive: true, force: true });
      throw e;
    }
    return pg;
  }

  /** The URL of database `postgres` as the superuser (trust auth, no password). */
  url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Starts the cluster (again, after {@link Postgres.kill}) on the same port. */
  async startAgain() {
    const opts = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await this.#run('pg_ctl', ['-D', this.#data(), '-o', opts, '-l', join(this.dir, 'log'), '-w', 'start']);
  }

  /** Stops the server at once, as a crash would (`-m immediate`: clients cut off). */
  async kill() {
    await this.#run('pg_ctl', ['-D', this.#data(), '-m', 'immediate', '-w', 'stop']);
  }

  /** Stops the server at once and removes its dir. */
  async stop() {
    if (!this.dir) return;
    if (existsSync(join(this.#data(), 'postmaster.pid'))) {
      await this.#run('pg_ctl', ['-D', this.#data(), '-m', 'immediate', '-w', 'stop']).catch(() => {});
    }
    if (!process.env.E2E_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }

  #data() {
    return join(this.dir, 'data');
  }

  /**
   * `tool` from the server's bin dir, as the user the cluster runs as.
   * @param {string} tool
   * @param {string[]} args
   */
  async #run(tool, args) {
    const program = join(this.bin, tool);
    const [cmd, argv] = this.runAs
      ? ['setpriv', [`--reuid=${this.runAs[0]}`, `--regid=${this.runAs[1]}`, '--clear-groups', program, ...args]]
      : [program, args];
    try {
      await run(cmd, argv, { cwd: this.dir, timeout: 60_000 });
    } catch (e) {
      const err = /** @type {{ stdout?: string, stderr?: string, message: string }} */ (e);
      throw new Error(`${tool} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    }
  }
}
