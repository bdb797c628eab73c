// @ts-check
// The plugin directory, seen from the console: the example plugin copied
// into `<config dir>/plugins/` shows in the Servers view's Plugins section
// (its trust, tools and hooks) without a restart, beside a plugin whose
// manifest is broken (its file, line and reason); its tools are listed in
// Tools with the plugin as their source, and its BEFORE hook blocks an
// agent's call that carries an API key; a crashing AFTER hook lets the
// result through and its failure shows on its plugin.

import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent, errorKind, text } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { REPO, Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const SHOTS = process.env.SCREENSHOT_DIR ?? join(REPO, 'docs/screenshots');
const CONFIG = `
[policy]
preset = "autonomous"

[plugins]
trusted = ["textkit"]
`;

describe('plugins', { skip: skipUnlessReady(), timeout: 120_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;
  /** @type {Agent} */ let agent;
  /** @type {string} */ let plugins;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    plugins = join(dirname(tg.configFile), 'plugins');
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    agent = await Agent.connect(tg.socket, { name: 'cursor' });
  });

  after(async () => {
    agent?.close();
    await browser?.close();
    await tg?.stop();
  });

  test('a plugin dropped in shows in Servers with its tools and hooks, a broken one with its error', async () => {
    await gotoView(page, '#/servers', 'Servers');
    await page.getByText('No plugins yet.').waitFor();

    cpSync(join(REPO, 'examples/plugins/textkit'), join(plugins, 'textkit'), { recursive: true });
    mkdirSync(join(plugins, 'notes'), { recursive: true });
    writeFileSync(
      join(plugins, 'notes', 'plugin.toml'),
      'manifest_version = 1\n\n[[tools]]\nname = "notes_add"\ndescription = "Add a note"\ncommand = ["./notes.py"]\nrisky = "low"\n',
    );

    const card = page.locator('li.plug[data-plugin="textkit"]');
    await card.waitFor({ timeout: 5_000 });
    await card.getByText('Trusted', { exact: true }).waitFor();
    await card.getByRole('link', { name: 'text_slugify, text_word_count' }).waitFor();
    await card.getByText('textkit/no-api-keys').waitFor();
    assert.match((await card.textContent()) ?? '', /textkit\/redact-emails runs after calls of text_\*/);

    const broken = page.locator('li.plug[data-plugin="notes"]');
    await broken.getByText('Not loaded').waitFor();
    await broken.getByText('Untrusted', { exact: true }).waitFor();
    const err = (await broken.locator('.err').textContent()) ?? '';
    assert.match(err, /notes\/plugin\.toml:7:1: unknown field risky/, err);
    await page.screenshot({ path: `${SHOTS}/servers-plugins-light.png`, fullPage: true });
  });

  test('its tools show the plugin as their source; its hook blocks a call with an API key', async () => {
    await waitFor('the plugin tools listed', async () => (await agent.toolNames()).includes('text_slugify'));
    const ok = await agent.call('text_slugify', { title: 'Hello, Plugins' });
    assert.equal(text(ok).trim(), 'hello-plugins', JSON.stringify(ok));
    const blocked = await agent.call('text_slugify', { title: 'sk-abcdefghijklmnopqrstuv' });
    assert.equal(errorKind(blocked), 'blocked', JSON.stringify(blocked));
    assert.match(text(blocked), /textkit\/no-api-keys/);

    await page.getByRole('link', { name: 'text_slugify, text_word_count' }).click();
    await page.getByRole('heading', { name: 'Tools' }).waitFor();
    // The rows say where each tool comes from, and the filter the link set names the plugin.
    await page.locator('.l2', { hasText: 'plugin textkit' }).first().waitFor();
    assert.equal(await page.locator('option:checked', { hasText: 'plugin textkit' }).count(), 1);
  });

  test('a failing AFTER hook lets the result through and shows on its plugin', async () => {
    mkdirSync(join(plugins, 'flaky'), { recursive: true });
    writeFileSync(
      join(plugins, 'flaky', 'plugin.toml'),
      'manifest_version = 1\ndescription = "A hook that always crashes"\n\n[[hooks]]\nname = "crash"\nwhen = "after"\ncommand = ["sh", "-c", "echo boom >&2; exit 1"]\ntools = ["text_slugify"]\n',
    );
    await gotoView(page, '#/servers', 'Servers');
    const card = page.locator('li.plug[data-plugin="flaky"]');
    await card.getByText('flaky/crash').waitFor({ timeout: 5_000 });
    const r = await agent.call('text_slugify', { title: 'Still Works' });
    assert.equal(text(r).trim(), 'still-works', JSON.stringify(r));
    const note = card.locator('.cfg');
    await note.waitFor();
    assert.match((await note.textContent()) ?? '', /A hook failed at \d\d:\d\d:\d\d\. flaky\/crash failed and let the result through unchanged: its program exited with code 1: boom/);
    await card.screenshot({ path: `${SHOTS}/servers-plugin-hook-failed-light.png` });
  });

  test('the page logged no errors', () => {
    assert.deepEqual(errors, []);
  });
});
