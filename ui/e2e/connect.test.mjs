// @ts-check
// The Connect view against a real `toolgate serve` whose HOME holds the
// config files of six MCP clients, shaped as their docs show them (copied
// from tests/fixtures/connect/, the engine tests' fixtures), and a Cursor
// config whose one server is this suite's fixture MCP server with a token
// in its env. The daemon runs under a private Secret Service
// (lib/keyring.mjs), so connect's keychain writes are real and never reach
// the person's keychain.
//
// Checked: the view lists the clients found with their servers and folds
// the others; Connect shows the engine's diff, Apply rewrites Cursor's file
// to the one `toolgate` entry, moves the server into toolgate's config
// (which the engine then starts) and its token into the keychain; Cursor
// then shows connected (and, with a process named like Cursor running,
// the review and the result say to restart it); Disconnect restores the file's original bytes and
// deletes the token; Install hooks / Remove hooks do the same for Claude
// Code's settings; a plan overtaken by an edit of the file is refused with
// the conflict and nothing written; narrow windows keep the actions and
// Apply reachable; a connect from the CLI reaches the open view by itself
// (the engine reloads its config). Screenshots `connect-*.png` in docs/screenshots.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { SecretService, keyringMissing } from './lib/keyring.mjs';
import { FIXTURES, REPO, Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const OUT = process.env.SCREENSHOT_DIR ?? join(REPO, 'docs/screenshots');
const CLIENT_FIXTURES = join(REPO, 'tests/fixtures/connect');
/** The clients whose fixture files are copied in; Gemini CLI and Codex are left out (not found). */
const COPIED = ['claude-desktop', 'claude-code', 'vscode', 'windsurf', 'zed'];
const TOKEN = 'ghp_e2eCursorToken0123456789abcdef';

/** Cursor's `~/.cursor/mcp.json`, shaped as Cursor's MCP docs show it. */
const CURSOR = `{
  "mcpServers": {
    "github": {
      "command": ${JSON.stringify(process.execPath)},
      "args": [${JSON.stringify(join(FIXTURES, 'upstream.mjs'))}],
      "env": {
        "FIXTURE_PROFILE": "github",
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${TOKEN}"
      }
    }
  }
}
`;

/**
 * Every file under `dir`, by path relative to it.
 * @param {string} dir
 * @returns {string[]}
 */
function files(dir) {
  /** @type {string[]} */
  const out = [];
  const walk = (/** @type {string} */ d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out;
}

/**
 * Copies a client's fixture HOME and project into the daemon's: `~/.config/...`
 * goes to its XDG_CONFIG_HOME (where the engine looks, as the clients do),
 * the project into its file root (the policy's project directory).
 * @param {Toolgate} tg
 * @param {string} client
 */
function copyClient(tg, client) {
  const xdg = tg.env.XDG_CONFIG_HOME ?? join(tg.home, '.config');
  for (const [part, base] of /** @type {const} */ ([
    ['home', tg.home],
    ['project', tg.root],
  ])) {
    const src = join(CLIENT_FIXTURES, client, part);
    let rels;
    try {
      rels = files(src);
    } catch {
      continue;
    }
    for (const rel of rels) {
      const dest = part === 'home' && rel.startsWith('.config/') ? join(xdg, rel.slice('.config/'.length)) : join(base, rel);
      mkdirSync(dirname(dest), { recursive: true });
      writeFileSync(dest, readFileSync(join(src, rel), 'utf8').replaceAll('@PROJECT@', tg.root));
    }
  }
}

/**
 * The ids of the clients listed under `label`.
 * @param {import('playwright-core').Page} page
 * @param {string} label
 */
async function listed(page, label) {
  return page.locator(`ul[aria-label="${label}"] li[data-client]`).evaluateAll((els) => els.map((e) => e.getAttribute('data-client')));
}

/**
 * Opens a client in the list (a click, as a person would).
 * @param {import('playwright-core').Page} page
 * @param {string} id
 */
async function open(page, id) {
  await page.locator(`li[data-client="${id}"] button`).click();
  await page.locator(`[data-detail="${id}"]`).waitFor();
}

/**
 * Presses an action's key and waits for the review's diff.
 * @param {import('playwright-core').Page} page
 * @param {string} key
 */
async function review(page, key) {
  await page.keyboard.press(key);
  const dialog = page.locator('dialog[open]');
  await dialog.locator('section.file').first().waitFor();
  return dialog;
}

/**
 * The diff lines of one file of the open review, with their kind.
 * @param {import('playwright-core').Locator} dialog
 * @param {string} role
 */
async function diffLines(dialog, role) {
  return dialog.locator(`section.file[data-role="${role}"] .d-line`).evaluateAll((els) =>
    els.map((e) => ({
      text: e.textContent ?? '',
      kind: e.classList.contains('d-add') ? 'add' : e.classList.contains('d-del') ? 'del' : 'other',
    })),
  );
}

/**
 * Applies the open review and waits for the outcome note of `id`.
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @param {RegExp} title
 */
async function apply(page, id, title) {
  await page.locator('dialog[open] [data-apply]').click();
  await page.locator('dialog[open]').waitFor({ state: 'detached' });
  const note = page.locator(`[data-outcome="${id}"]`);
  await waitFor(`the outcome of ${id}`, async () => title.test((await note.textContent()) ?? ''));
}

/**
 * The connection pill of the open client, once it reads `word`.
 * @param {import('playwright-core').Page} page
 * @param {string} id
 * @param {string} state `connection` or `hooks`
 * @param {string} word
 */
async function shows(page, id, state, word) {
  const pill = page.locator(`[data-detail="${id}"] [data-state="${state}"]`);
  await waitFor(`${id} to show "${word}"`, async () => ((await pill.textContent()) ?? '').trim() === word);
}

describe('connect view', { skip: skipUnlessReady() || keyringMissing() || false, timeout: 240_000 }, () => {
  /** @type {SecretService} */ let keyring;
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors = [];
  let cursorFile = '';
  /** A process named like Cursor, started and ended by this suite. @type {import('node:child_process').ChildProcess | null} */
  let fakeCursor = null;

  before(async () => {
    keyring = await SecretService.start();
    tg = await Toolgate.start({ env: { DBUS_SESSION_BUS_ADDRESS: keyring.bus } });
    for (const c of COPIED) copyClient(tg, c);
    cursorFile = join(tg.home, '.cursor/mcp.json');
    mkdirSync(dirname(cursorFile), { recursive: true });
    writeFileSync(cursorFile, CURSOR);
    mkdirSync(OUT, { recursive: true });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
  });

  after(async () => {
    fakeCursor?.kill();
    await browser?.close();
    await tg?.stop();
    await keyring?.stop();
  });

  test('lists the clients found with their files and servers, and folds the others with where it looked', async () => {
    await gotoView(page, '#/connect', 'Connect');
    const found = 'MCP clients found on this machine';
    await waitFor('the clients found', async () => (await listed(page, found)).length === 6);
    assert.deepEqual(await listed(page, found), ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'windsurf', 'zed']);

    await open(page, 'claude-desktop');
    const desktop = page.locator('[data-detail="claude-desktop"]');
    assert.deepEqual(await desktop.locator('[data-server]').evaluateAll((els) => els.map((e) => e.getAttribute('data-server'))), ['filesystem', 'github']);
    assert.match((await desktop.locator('[data-server="github"] .target').textContent()) ?? '', /npx -y @modelcontextprotocol\/server-github/);
    await shows(page, 'claude-desktop', 'connection', 'Not connected');

    // Claude Code: user and project scopes; VS Code's input variable keeps a server in VS Code.
    await open(page, 'claude-code');
    const code = page.locator('[data-detail="claude-code"]');
    assert.equal(await code.locator('[data-server="sentry"]').count(), 1);
    assert.equal(await code.locator('[data-server="postgres"]').count(), 1);
    await shows(page, 'claude-code', 'hooks', 'Hooks not installed');
    await open(page, 'vscode');
    const perplexity = page.locator('[data-detail="vscode"] [data-server="Perplexity"]');
    assert.match((await perplexity.textContent()) ?? '', /Stays in the client/);
    assert.match((await perplexity.textContent()) ?? '', /input:perplexity-key/);

    const fold = page.getByRole('button', { name: /Not found on this machine/ });
    assert.equal(await fold.getAttribute('aria-expanded'), 'false');
    await fold.click();
    assert.deepEqual(await listed(page, 'MCP clients not found on this machine'), ['gemini-cli', 'codex']);
    await open(page, 'codex');
    assert.match((await page.locator('[data-detail="codex"]').textContent()) ?? '', /toolgate looked for these files and found none.*~\/\.codex\/config\.toml/s);
    await fold.click();

    await open(page, 'cursor');
    const cursor = page.locator('[data-detail="cursor"]');
    assert.match((await cursor.locator('[data-server="github"] .target').textContent()) ?? '', /upstream\.mjs/);
    await shows(page, 'cursor', 'connection', 'Not connected');
    await page.screenshot({ path: join(OUT, 'connect-light.png') });
    assert.deepEqual(errors, []);
  });

  test('Connect shows the diff, Apply rewrites the file and stores the token in the keychain, Disconnect restores the bytes', async () => {
    const original = readFileSync(cursorFile);
    // A process that looks like Cursor (its argv[0]): the engine says Cursor runs, and what to do after.
    fakeCursor = spawn('sleep', ['300'], { argv0: 'cursor', stdio: 'ignore' });
    await page.getByRole('button', { name: /Check again/ }).click();
    await waitFor('Cursor to show as running', async () => /Running/.test((await page.locator('[data-detail="cursor"] .d-head').textContent()) ?? ''));
    const dialog = await review(page, 'c');
    assert.match((await dialog.locator('h2').textContent()) ?? '', /Connect Cursor to toolgate/);
    assert.match((await dialog.getByRole('note').textContent()) ?? '', /Cursor is running\. After applying: Restart Cursor/);
    const client = await diffLines(dialog, 'client');
    const added = client.filter((l) => l.kind === 'add').map((l) => l.text);
    const removed = client.filter((l) => l.kind === 'del').map((l) => l.text);
    assert.ok(added.length && added.every((l) => l.startsWith('+')), `added lines keep their sign: ${added}`);
    assert.ok(removed.length && removed.every((l) => l.startsWith('-')), `removed lines keep their sign: ${removed}`);
    assert.ok(added.some((l) => l.includes('mcp-bridge')) && added.some((l) => l.includes('"Cursor"')), added.join('\n'));
    assert.ok(removed.some((l) => l.includes('"github"')), removed.join('\n'));
    const everything = (await dialog.textContent()) ?? '';
    assert.ok(!everything.includes(TOKEN), 'the token is never shown');
    assert.match(everything, /toolgate's config/);
    assert.deepEqual(readFileSync(cursorFile), original, 'a plan writes nothing');
    await page.screenshot({ path: join(OUT, 'connect-review-light.png') });

    await apply(page, 'cursor', /Cursor now goes through toolgate/);
    assert.match((await page.locator('[data-outcome="cursor"]').textContent()) ?? '', /Restart Cursor/);
    fakeCursor.kill();
    const now = JSON.parse(readFileSync(cursorFile, 'utf8'));
    assert.deepEqual(Object.keys(now.mcpServers), ['toolgate']);
    assert.deepEqual(now.mcpServers.toolgate.args, ['mcp-bridge', '--client', 'Cursor']);
    const config = readFileSync(tg.configFile, 'utf8');
    assert.ok(config.includes('upstream.mjs'), config);
    assert.ok(!config.includes(TOKEN), 'the token is not in toolgate’s config');
    const secret = /keyring:([A-Za-z0-9_.-]+)/.exec(config)?.[1];
    assert.ok(secret, `a keyring reference in ${config}`);
    const got = await tg.cli(['secret', 'get', secret, '--reveal']);
    assert.equal(got.stdout.trim(), TOKEN, `the token is in the private keychain (${got.stderr})`);

    await shows(page, 'cursor', 'connection', 'Connected');
    assert.match((await page.locator('[data-detail="cursor"] [data-server="toolgate"]').textContent()) ?? '', /toolgate's bridge/);
    // The engine reloaded its config and started the server, its token read from the keychain.
    await waitFor(
      'the moved server to run under toolgate',
      async () => {
        const snap = await page.evaluate(() => fetch('/api/snapshot').then((r) => r.json()));
        return snap.servers.some((/** @type {{ server: string, state: string }} */ s) => s.server === 'github' && s.state === 'ready');
      },
      { timeout: 30_000 },
    );
    await page.screenshot({ path: join(OUT, 'connect-connected-light.png') });

    const undo = await review(page, 'x');
    assert.match((await undo.locator('h2').textContent()) ?? '', /Disconnect Cursor from toolgate/);
    assert.ok(!((await undo.textContent()) ?? '').includes(TOKEN), 'the token is not shown when it goes back either');
    await apply(page, 'cursor', /Cursor is disconnected from toolgate/);
    assert.deepEqual(readFileSync(cursorFile), original, 'disconnect restores the original bytes');
    assert.ok(!readFileSync(tg.configFile, 'utf8').includes('upstream.mjs'));
    const gone = await tg.cli(['secret', 'get', secret]);
    assert.notEqual(gone.code, 0, `the token left the keychain: ${gone.stdout}`);
    await shows(page, 'cursor', 'connection', 'Not connected');
    assert.deepEqual(errors, []);
  });

  test("Install hooks adds toolgate's hooks beside the person's own, Remove hooks restores the bytes", async () => {
    const settings = join(tg.home, '.claude/settings.json');
    const original = readFileSync(settings);
    await open(page, 'claude-code');
    const dialog = await review(page, 'h');
    const lines = await diffLines(dialog, 'hooks');
    assert.ok(lines.some((l) => l.kind === 'add' && l.text.includes('hook run claude-code')), lines.map((l) => l.text).join('\n'));
    await apply(page, 'claude-code', /toolgate's hooks are installed for Claude Code/);
    const text = readFileSync(settings, 'utf8');
    assert.ok(text.includes('hook run claude-code'), text);
    assert.ok(text.includes('prettier --write'), 'the person’s own hook stays');
    await shows(page, 'claude-code', 'hooks', 'Hooks installed');

    await review(page, 'h');
    await apply(page, 'claude-code', /toolgate's hooks are removed from Claude Code/);
    assert.deepEqual(readFileSync(settings), original);
    await shows(page, 'claude-code', 'hooks', 'Hooks not installed');
  });

  test('a plan overtaken by an edit of the file is refused with the conflict, and nothing is written', async () => {
    const file = join(tg.env.XDG_CONFIG_HOME ?? '', 'Claude/claude_desktop_config.json');
    await open(page, 'claude-desktop');
    const dialog = await review(page, 'c');
    // An edit of a server the plan moves (an edit the plan's diff does not
    // touch would leave the same diff, and applying it would be right).
    const edited = readFileSync(file, 'utf8').replace('/home/me/Downloads', '/home/me/Documents');
    assert.ok(edited.includes('/home/me/Documents'));
    writeFileSync(file, edited);
    await dialog.locator('[data-apply]').click();
    const conflict = dialog.getByRole('alert', { name: 'Conflict' });
    await conflict.waitFor();
    assert.match((await conflict.textContent()) ?? '', /Nothing was written\..*changed since the plan was shown/s);
    assert.equal(await dialog.locator('[data-apply]').isDisabled(), true);
    assert.equal(readFileSync(file, 'utf8'), edited);
    assert.ok(!readFileSync(tg.configFile, 'utf8').includes('server-filesystem'));
    await conflict.getByRole('button', { name: 'Show the new plan' }).click();
    await waitFor('the new plan', async () => (await dialog.locator('[data-apply]').isEnabled()) && (await dialog.locator('section.file').count()) > 0);
    const context = await diffLines(dialog, 'client');
    assert.ok(context.some((l) => l.kind === 'del' && l.text.includes('/home/me/Documents')), 'the new plan is made from the edited file');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await shows(page, 'claude-desktop', 'connection', 'Not connected');
  });

  test('a client connected and disconnected from the CLI shows so in the open view, without a reload', async () => {
    await open(page, 'zed');
    await shows(page, 'zed', 'connection', 'Not connected');
    const settings = join(tg.env.XDG_CONFIG_HOME ?? '', 'zed/settings.json');
    const original = readFileSync(settings);
    // The CLI writes toolgate's config; the engine reloads it and the view reads the clients again.
    const on = await tg.cli(['connect', 'zed', '--yes']);
    assert.equal(on.code, 0, on.stderr);
    await shows(page, 'zed', 'connection', 'Connected');
    const off = await tg.cli(['disconnect', 'zed', '--yes']);
    assert.equal(off.code, 0, off.stderr);
    await shows(page, 'zed', 'connection', 'Not connected');
    assert.deepEqual(readFileSync(settings), original);
  });

  test('dark, and narrow windows: the actions and Apply stay reachable', async () => {
    for (const colorScheme of /** @type {const} */ (['light', 'dark'])) {
      for (const viewport of [
        { width: 1440, height: 900 },
        { width: 760, height: 900 },
        { width: 720, height: 480 },
      ]) {
        const { context, page: p, errors: errs } = await consolePage(browser, tg, { colorScheme, viewport });
        await gotoView(p, '#/connect?client=cursor', 'Connect');
        const connect = p.locator('[data-detail="cursor"] [data-action="connect"]');
        await connect.waitFor();
        const suffix = `${colorScheme}${viewport.width === 1440 ? '' : `-${viewport.width}`}`;
        if (viewport.height === 900 && !(colorScheme === 'light' && viewport.width === 1440)) {
          await p.screenshot({ path: join(OUT, `connect-${suffix}.png`) });
        }
        await connect.scrollIntoViewIfNeeded();
        const box = await connect.boundingBox();
        assert.ok(box && box.x >= 0 && box.x + box.width <= viewport.width, `Connect is inside the window at ${viewport.width}: ${JSON.stringify(box)}`);
        await p.keyboard.press('c');
        const dialog = p.locator('dialog[open]');
        await dialog.locator('section.file').first().waitFor();
        const applyBtn = dialog.locator('[data-apply]');
        const a = await applyBtn.boundingBox();
        assert.ok(a && a.x + a.width <= viewport.width && a.y + a.height <= viewport.height, `Apply is inside the window at ${viewport.width}×${viewport.height}: ${JSON.stringify(a)}`);
        if (viewport.height === 900 && !(colorScheme === 'light' && viewport.width === 1440)) {
          await p.screenshot({ path: join(OUT, `connect-review-${suffix}.png`) });
        }
        await p.keyboard.press('Escape');
        await dialog.waitFor({ state: 'detached' });
        assert.deepEqual(errs, []);
        await context.close();
      }
    }
  });
});
