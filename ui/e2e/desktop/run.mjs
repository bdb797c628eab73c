#!/usr/bin/env node
// @ts-check
// The desktop app end to end (a real window, a real agent), driven through
// tauri-driver's W3C WebDriver API with plain fetch. Run by
// scripts/desktop-e2e, which provides the display (Xvfb), a private D-Bus
// session with dunst, private dirs and these variables:
//
//   E2E_APP      the built toolgate-desktop     E2E_TOOLGATE  the built toolgate
//   E2E_DRIVER   tauri-driver                   E2E_NATIVE    WebKitWebDriver
//   E2E_TMP      a private scratch dir          E2E_SHOTS     where screenshots go
//   TOOLGATE_CONFIG / TOOLGATE_DATA_DIR / TOOLGATE_SOCKET, HOME, XDG_*: private
//
// 1. Engine in the app: the window shows the console ("engine in this app"
//    in its title); an agent (its own process, on the agent socket) sends a
//    risky call, the window's Approvals view shows it, the test approves it
//    there and the agent gets the result (the command ran); a second call
//    is denied there and the agent gets the denial (the command did not
//    run). Quit (SIGTERM, what the tray's Quit does) leaves no process,
//    socket, control socket or discovery file.
// 2. Attached: `toolgate serve` first; the app attaches ("attached to pid
//    N"); the same approve flow; ending the session leaves serve running and
//    answering; SIGTERM stops serve.
// Screenshots of a pending approval, light (phase 1) and dark (phase 2).
// Measured and printed, never asserted: launch to the console painted,
// idle memory of the app with its WebKit processes.
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session, until } from './webdriver.mjs';
import { alive, descendants, processes, treeRss } from './procs.mjs';

/** @param {string} k */
function env(k) {
  const v = process.env[k];
  if (!v) throw new Error(`desktop-e2e: ${k} is not set (run scripts/desktop-e2e)`);
  return v;
}

const APP = env('E2E_APP');
const TOOLGATE = env('E2E_TOOLGATE');
const DRIVER = env('E2E_DRIVER');
const NATIVE = env('E2E_NATIVE');
const TMP = env('E2E_TMP');
const SHOTS = env('E2E_SHOTS');
const SOCKET = env('TOOLGATE_SOCKET');
const DATA = env('TOOLGATE_DATA_DIR');
const WORK = join(TMP, 'work');
const AGENT = new URL('./agent.mjs', import.meta.url).pathname;
mkdirSync(WORK, { recursive: true });
mkdirSync(SHOTS, { recursive: true });

/** @param {string} msg */
const say = (msg) => console.log(`desktop-e2e: ${msg}`);

/** Processes this run started, ended on the way out whatever happens. */
/** @type {Set<import('node:child_process').ChildProcess>} */
const started = new Set();

/** @returns {Promise<number>} a free TCP port on 127.0.0.1 */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts tauri-driver on free ports with `extraEnv`; its output (and the
 * app's, which the native driver passes on) goes to `log`.
 * @param {string} log
 * @param {Record<string, string>} extraEnv
 */
async function startDriver(log, extraEnv) {
  const [port, nativePort] = [await freePort(), await freePort()];
  const fd = openSync(log, 'a');
  const child = spawn(DRIVER, ['--port', String(port), '--native-port', String(nativePort), '--native-driver', NATIVE], {
    env: { ...process.env, ...extraEnv },
    stdio: ['ignore', fd, fd],
    detached: true, // its own process group: WebKitWebDriver and the app with it
  });
  started.add(child);
  child.on('exit', () => started.delete(child));
  const base = `http://127.0.0.1:${port}`;
  await until(`tauri-driver to answer on ${base} (log ${log})`, 15_000, async () => {
    if (child.exitCode !== null) throw new Error(`tauri-driver exited with ${child.exitCode}: ${tail(log)}`);
    const r = await fetch(`${base}/status`, { signal: AbortSignal.timeout(2000) });
    return r.ok;
  });
  return { base, child };
}

/** @param {import('node:child_process').ChildProcess} child */
function killGroup(child, signal = 'SIGTERM') {
  if (child.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  }
}

/** @param {string} file @param {number} [lines] */
function tail(file, lines = 30) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * The app process the driver launched.
 * @param {import('node:child_process').ChildProcess} driver
 */
function findApp(driver) {
  return until('the app process under tauri-driver', 30_000, () => descendants(/** @type {number} */ (driver.pid)).find((p) => p.exe === APP));
}

/** @param {string} title @returns {string[]} X window ids whose name contains `title` */
function windowsNamed(title) {
  try {
    return execFileSync('xdotool', ['search', '--name', title], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return []; // xdotool exits 1 when nothing matches
  }
}

// Page-side helpers. Controls are found by role and accessible name (the
// aria-label, else the visible text), never by class: the UI is reworked
// in parallel.
const CONTROLS = `
  const [include, exclude, not] = arguments;
  const inc = new RegExp(include, 'i');
  const exc = exclude ? new RegExp(exclude, 'i') : null;
  const name = (el) => (el.getAttribute('aria-label') || el.innerText || el.textContent || '').replace(/\\s+/g, ' ').trim();
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  return [...document.querySelectorAll('button, [role=button], a[href], [role=link], [role=tab], [role=menuitem]')]
    .filter((el) => el !== not && !el.disabled && el.getAttribute('aria-disabled') !== 'true' && shown(el))
    .filter((el) => inc.test(name(el)) && !(exc && exc.test(name(el))));
`;

/**
 * The usable controls whose name matches `include` and not `exclude`.
 * @param {Session} s @param {string} include @param {string} [exclude] @param {unknown} [not]
 * @returns {Promise<import('./webdriver.mjs').ElementRef[]>}
 */
const controls = (s, include, exclude = '', not = null) => s.exec(CONTROLS, [include, exclude, not]);

/** The console (not the splash) has rendered its header and its views' navigation. */
const CONSOLE_PAINTED = `
  return location.protocol === 'http:' && document.readyState === 'complete'
    && !!document.querySelector('header, [role=banner]')
    && [...document.querySelectorAll('nav a, [role=navigation] a, nav button')].some((a) => /approvals/i.test(a.textContent || ''));
`;

/**
 * Runs the agent as its own process: `tools/call shell_exec {command}`
 * (or a ping without a command). Resolves with the reply.
 * @param {string} [command]
 * @returns {{ done: Promise<any>, child: import('node:child_process').ChildProcess, settled: () => boolean }}
 */
function agent(command) {
  const child = spawn(process.execPath, [AGENT, SOCKET, ...(command ? [command] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  let out = '';
  let err = '';
  let settled = false;
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const done = new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      started.delete(child);
      settled = true;
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`the agent failed (exit ${code}): ${err.trim() || out.trim()}`));
    });
  });
  done.catch(() => {}); // observed by whoever awaits it
  return { done, child, settled: () => settled };
}

/**
 * @template T
 * @param {string} what @param {number} ms @param {Promise<T>} p
 * @returns {Promise<T>}
 */
function within(what, ms, p) {
  /** @type {NodeJS.Timeout | undefined} */
  let t;
  const timeout = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return /** @type {Promise<T>} */ (Promise.race([p, timeout])).finally(() => clearTimeout(t));
}

/** @param {any} reply */
function text(reply) {
  return (reply?.content ?? []).map((/** @type {any} */ c) => c.text ?? '').join(' ').slice(0, 200);
}

/**
 * Shows the waiting request whose arguments contain `token` in the
 * window's Approvals view: the Approvals navigation item, then (if another
 * request is shown) its row in the waiting list.
 * @param {Session} s @param {string} token
 */
async function showRequest(s, token) {
  const nav = await until('an Approvals item in the window navigation', 20_000, async () => (await controls(s, '^approvals\\b'))[0]);
  await s.click(nav);
  await until(`the request for ${token} in the Approvals view, with an enabled Approve button`, 30_000, async () => {
    const shown = await s.exec(`return document.body.innerText.includes(arguments[0])`, [token]);
    if (shown && (await controls(s, '^approve\\b', 'always|all\\b')).length) return true;
    // Another request is selected: pick the waiting rows in turn.
    const rows = await s.exec(`
      const lists = [...document.querySelectorAll('[role=listbox]')].filter((l) => /wait|pending/i.test(l.getAttribute('aria-label') || ''));
      return lists.flatMap((l) => [...l.querySelectorAll('[role=option]')])
        .filter((o) => o.getAttribute('aria-selected') !== 'true')
        .map((o) => o.querySelector('button') || o);
    `);
    if (rows.length) await s.click(rows[0]);
    return false;
  });
}

/**
 * An agent's risky call, decided in the window.
 * @param {Session} s
 * @param {'approve' | 'deny'} verdict
 * @param {string} label  names the marker file
 * @param {(() => Promise<void>) | null} [whilePending]  e.g. a screenshot
 */
async function decideInWindow(s, verdict, label, whilePending = null) {
  const token = `e2e-${label}-${process.pid}`;
  const marker = join(WORK, token);
  const a = agent(`touch ${marker}`);
  const t0 = Date.now();
  await showRequest(s, token);
  say(`  ${label}: the request is in the window's Approvals view ${Date.now() - t0} ms after the agent started`);
  if (a.settled()) throw new Error(`the agent got an answer before anyone decided: ${JSON.stringify(await a.done.catch((e) => e.message))}`);
  const focus = await s.exec(`return document.hasFocus()`);
  say(`  ${label}: the page has focus: ${focus} (the shell notifies only while the window is not focused)`);
  if (whilePending) await whilePending();
  if (verdict === 'approve') {
    const [approve] = await controls(s, '^approve\\b', 'always|all\\b');
    if (!approve) throw new Error('the Approve button went away');
    await s.click(approve);
  } else {
    const [deny] = await controls(s, '^deny\\b', 'always|all\\b');
    if (!deny) throw new Error('no Deny button');
    await s.click(deny);
    // The UI may ask for an optional reason first: its confirming button.
    await until('the denial to reach the agent (confirming the reason box if one opened)', 20_000, async () => {
      if (a.settled()) return true;
      const [confirm] = await controls(s, '^(deny|send|confirm)\\b', 'always|all\\b|cancel', deny);
      if (confirm) await s.click(confirm);
      return false;
    });
  }
  const reply = await within(`the agent's reply after ${verdict}`, 20_000, a.done);
  const kind = reply?._meta?.['toolgate/error']?.kind;
  if (verdict === 'approve') {
    if (reply.isError) throw new Error(`approved, but the agent got an error: ${kind}: ${text(reply)}`);
    await until(`the marker ${marker}`, 5000, () => existsSync(marker));
    say(`  ${label}: approved in the window; the agent got the result and the command ran (${marker} exists)`);
  } else {
    if (!reply.isError || kind !== 'denied') throw new Error(`denied, but the agent got ${JSON.stringify(reply).slice(0, 300)}`);
    if (existsSync(marker)) throw new Error(`denied, but the command ran: ${marker} exists`);
    say(`  ${label}: denied in the window; the agent got "${kind}: ${text(reply)}" and ${marker} does not exist`);
  }
}

/**
 * Launches the app through the driver and waits for the console.
 * @param {string} phase @param {Record<string, string>} extraEnv @param {string} title
 */
async function launch(phase, extraEnv, title) {
  const log = join(TMP, `driver-${phase}.log`);
  const driver = await startDriver(log, { WEBKIT_DISABLE_COMPOSITING_MODE: '1', ...extraEnv });
  const t0 = Date.now();
  const s = await Session.create(driver.base, { browserName: 'wry', 'tauri:options': { application: APP } });
  const sessionMs = Date.now() - t0;
  const app = await findApp(driver.child);
  await until('the console painted in the window (header and navigation)', 60_000, () => s.exec(CONSOLE_PAINTED));
  const painted = Date.now() - t0;
  await until(`a window titled "*${title}*"`, 15_000, () => windowsNamed(title).length > 0);
  const own = /http loaded (\d+) ms after launch/.exec(readFileSync(log, 'utf8'));
  say(`  window titled "toolgate — ${title}" (pid ${app.pid})`);
  say(`  cold start: session created ${sessionMs} ms, console painted ${painted} ms after the launch request` +
    (own ? ` (the app's own log: console loaded ${own[1]} ms after its start)` : ''));
  return { s, driver, app, log };
}

/**
 * The app's memory once it is idle: sampled until two readings 500 ms
 * apart differ by under 2% (at most 10 s): a measurement, not a wait.
 * @param {number} pid
 */
async function idleRss(pid) {
  let last = treeRss(pid);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    const now = treeRss(pid);
    const settled = Math.abs(now.tree - last.tree) < last.tree * 0.02;
    last = now;
    if (settled) break;
  }
  const mb = (/** @type {number} */ kb) => `${(kb / 1024).toFixed(0)} MB`;
  say(`  idle RSS with the engine in it: app ${mb(last.own)}, with its ${last.children.length} child processes ${mb(last.tree)} ` +
    `(${last.children.map((c) => `${c.comm} ${mb(c.rssKb)}`).join(', ')})`);
}

/** @param {Session} s @param {string} name */
async function screenshot(s, name) {
  const dark = await s.exec(`return matchMedia('(prefers-color-scheme: dark)').matches`);
  const theme = await s.exec(`return document.documentElement.getAttribute('data-theme')`);
  const bg = await s.exec(`return getComputedStyle(document.body).backgroundColor`);
  const file = join(SHOTS, `desktop-approvals-${name}.png`);
  writeFileSync(file, await s.screenshot());
  say(`  screenshot ${file}: prefers-color-scheme dark = ${dark}, data-theme = ${theme}, body background ${bg}`);
  return dark;
}

/** The leftovers of an engine: sockets and the discovery file. */
function leftovers() {
  return [SOCKET, `${SOCKET}.ctl`, join(DATA, 'engine.json')].filter((f) => existsSync(f));
}

async function inApp() {
  say('1. engine in the app (GTK_THEME=Adwaita)');
  const { s, driver, app, log } = await launch('in-app', { GTK_THEME: 'Adwaita' }, 'engine in this app');
  if (!readFileSync(log, 'utf8').includes('Engine: in this app')) throw new Error(`the app does not say it runs the engine:\n${tail(log)}`);
  await idleRss(app.pid);
  say(`  tray, idle: ${observeTray(app.pid)}`);
  await decideInWindow(s, 'approve', 'approve-in-app', async () => {
    await screenshot(s, 'light');
    // The tray follows the console's stream: wait (bounded) for its badge.
    let seen = '';
    await until('the tray menu to list the waiting call', 10_000, () => /shell_exec/.test((seen = observeTray(app.pid)))).catch(() => {
      seen += ' (after 10 s it still did not list the waiting call)';
    });
    say(`  tray, one call waiting: ${seen}`);
  });
  await decideInWindow(s, 'deny', 'deny-in-app');
  say(`  tray, after the decisions: ${observeTray(app.pid)}`);
  const iconDir = join(env('XDG_RUNTIME_DIR'), 'tray-icon');
  if (existsSync(iconDir)) say(`  tray icon files in ${iconDir}: ${readdirSync(iconDir).join(' ')}`);
  // Quit: the tray's Quit and SIGTERM take the same path (app.exit).
  const children = descendants(app.pid);
  const t0 = Date.now();
  process.kill(app.pid, 'SIGTERM');
  await until('the app to exit after SIGTERM (Quit)', 15_000, () => !alive(app.pid));
  await until('its child processes to end', 10_000, () => children.every((c) => !alive(c.pid)));
  say(`  Quit: the app exited in ${Date.now() - t0} ms`);
  const left = leftovers();
  if (left.length) throw new Error(`Quit left behind: ${left.join(', ')}`);
  const engines = processes().filter((p) => p.exe === APP || p.exe === TOOLGATE);
  if (engines.length) throw new Error(`Quit left engine processes: ${engines.map((p) => `${p.pid} ${p.exe}`).join(', ')}`);
  say(`  nothing left behind: no app or engine process, no agent socket, control socket or engine.json, child processes ${children.map((c) => `${c.pid} (${c.comm})`).join(', ')} ended`);
  const icons = existsSync(iconDir) ? readdirSync(iconDir) : [];
  if (icons.length) say(`  (not the engine's, noted: the tray library left ${icons.join(' ')} in ${iconDir})`);
  // The driver's session lost its browser; ending it must still work.
  await s.delete().catch((e) => say(`  (ending the session after Quit: ${e.message})`));
  killGroup(driver.child);
}

async function attached() {
  say('2. attached to `toolgate serve` (GTK_THEME=Adwaita:dark)');
  const serveLog = join(TMP, 'serve.log');
  const fd = openSync(serveLog, 'a');
  const serve = spawn(TOOLGATE, ['serve'], { stdio: ['ignore', fd, fd] });
  started.add(serve);
  /** @type {Promise<number | null>} */
  const serveExit = new Promise((resolve) => serve.on('exit', (code) => resolve(code)));
  await until(`toolgate serve to write its discovery file and socket (log ${serveLog})`, 30_000, () => {
    if (serve.exitCode !== null) throw new Error(`toolgate serve exited with ${serve.exitCode}: ${tail(serveLog)}`);
    // Its own discovery file (a stale one would name another pid).
    const info = existsSync(join(DATA, 'engine.json')) ? JSON.parse(readFileSync(join(DATA, 'engine.json'), 'utf8')) : null;
    return info?.pid === serve.pid && existsSync(SOCKET);
  });
  say(`  toolgate serve is pid ${serve.pid}`);
  const { s, driver, app } = await launch('attached', { GTK_THEME: 'Adwaita:dark' }, `attached to pid ${serve.pid}`);
  let dark = false;
  await decideInWindow(s, 'approve', 'approve-attached', async () => {
    dark = await screenshot(s, 'dark');
  });
  if (!dark) say('  NOTE: the page did not follow GTK_THEME=Adwaita:dark (prefers-color-scheme stayed light)');
  const t0 = Date.now();
  await s.delete();
  await until('the app to exit after the session was deleted', 15_000, () => !alive(app.pid));
  say(`  session deleted: the app exited in ${Date.now() - t0} ms`);
  if (serve.exitCode !== null) throw new Error(`toolgate serve stopped with the app: exit ${serve.exitCode}`);
  const ping = await within('a ping on the agent socket', 10_000, agent().done);
  say(`  toolgate serve still runs and answers on the agent socket (ping: ${JSON.stringify(ping)})`);
  killGroup(driver.child);
  serve.kill('SIGTERM');
  const code = await within('toolgate serve to stop on SIGTERM', 10_000, serveExit);
  if (code !== 0) throw new Error(`toolgate serve exited with ${code} on SIGTERM: ${tail(serveLog)}`);
  const left = leftovers();
  if (left.length) throw new Error(`toolgate serve left behind: ${left.join(', ')}`);
  say('  SIGTERM: toolgate serve exited 0 and left nothing behind');
}

/** @param {string[]} args */
const busctl = (args) => execFileSync('busctl', ['--user', ...args], { encoding: 'utf8', timeout: 5000 });

/**
 * What of the tray can be seen without a tray host: libayatana-appindicator
 * exports the app's StatusNotifierItem and its menu (dbusmenu) on the
 * session bus even with nobody watching. Returns a line to print (the
 * tooltip is not among the item's properties, so it cannot be seen).
 * @param {number} pid
 */
function observeTray(pid) {
  try {
    const item = '/org/ayatana/NotificationItem/tray_icon_tray_app_toolgate';
    const names = busctl(['list', '--no-legend'])
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f[1] === String(pid))
      .map((f) => f[0] ?? '');
    const name = names.find((n) => {
      try {
        return busctl(['tree', n]).includes('NotificationItem');
      } catch {
        return false;
      }
    });
    if (!name) return `no StatusNotifierItem among the app's bus names (${names.join(' ')})`;
    /** @param {string} p */
    const prop = (p) => JSON.parse(busctl(['--json=short', 'get-property', name, item, 'org.kde.StatusNotifierItem', p])).data;
    const layout = JSON.parse(busctl(['--json=short', 'call', '--', name, `${item}/Menu`, 'com.canonical.dbusmenu', 'GetLayout', 'iias', '0', '-1', '0'])).data[1];
    /** @param {any} node @returns {string} */
    const labels = (node) => {
      const [, props, children] = node;
      // dbusmenu labels write a literal underscore as "__" (one alone marks the access key).
      const own = String(props.label?.data ?? (props.type?.data === 'separator' ? '—' : '')).replace(/_(_?)/g, '$1');
      const kids = children.map((/** @type {any} */ c) => labels(c.data)).filter(Boolean);
      return kids.length ? `${own ? `${own} ` : ''}[${kids.join(', ')}]` : own;
    };
    const icon = String(prop('IconName')).split('/').pop();
    return `status ${prop('Status')}, icon ${icon}, menu ${labels(layout)}`;
  } catch (e) {
    return `cannot read it (${e instanceof Error ? e.message.split('\n')[0] : e})`;
  }
}

let failed = false;
try {
  await inApp();
  await attached();
} catch (e) {
  failed = true;
  console.error(`desktop-e2e: FAILED: ${e instanceof Error ? e.message : e}`);
  for (const f of ['driver-in-app.log', 'driver-attached.log', 'serve.log']) {
    if (existsSync(join(TMP, f))) console.error(`--- ${f} (last lines)\n${tail(join(TMP, f))}`);
  }
} finally {
  for (const c of started) {
    if (c.spawnargs[0] === DRIVER) killGroup(c, 'SIGKILL');
    else c.kill('SIGKILL');
  }
}
process.exit(failed ? 1 : 0);
