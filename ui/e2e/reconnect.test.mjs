// @ts-check
// An engine that stops and starts again under an open console tab: while it
// is gone, a waiting request shows as unknown and cannot be decided (with the
// reason beside the buttons); the engine comes back on the same port with the
// tab's session, and the same tab goes live by itself (no reload, no new
// login). An engine whose old port is taken starts elsewhere, says so, and
// the tab's banner names `toolgate console`, whose link opens it.

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Agent } from './lib/agent.mjs';
import { besidesEngineAway, consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor, within } from './lib/wait.mjs';

const CONFIG = `
[policy]
preset = "default"
approval_timeout_s = 300
`;

const SHOTS = process.env.RECONNECT_SHOTS ?? '/tmp';

describe('reconnect', { skip: skipUnlessReady(), timeout: 240_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {import('playwright-core').BrowserContext} */ let context;
  /** @type {string[]} */ let errors;
  /** @type {Agent | undefined} */ let agent;
  /** @type {net.Server | undefined} */ let squatter;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors, context } = await consolePage(browser, tg));
    await gotoView(page, '#/approvals', 'Approvals');
  });

  after(async () => {
    agent?.destroy();
    squatter?.close();
    await browser?.close();
    await tg?.stop();
  });

  /**
   * The id of the waiting request for `command` (from the CLI).
   * @param {string} command
   * @returns {Promise<number>}
   */
  async function requestFor(command) {
    return waitFor(`an approval request for \`${command}\` in \`toolgate approvals\``, async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.args?.command === command)?.id;
    });
  }

  /** @param {number} id */
  const row = (id) => page.locator(`li.item[data-id="${id}"]`);
  const decide = () => page.getByRole('group', { name: 'Decide' });
  const header = () => page.locator('header.bar .engine');

  test('a waiting request is unknown while the engine is gone; the same tab comes back live on its own', async () => {
    agent = await Agent.connect(tg.socket, { name: 'claude-code' });
    agent.start('shell_exec', { command: 'echo across-a-restart' });
    const id = await requestFor('echo across-a-restart');
    await row(id).getByRole('timer').waitFor();
    await row(id).getByRole('button').first().click();
    await decide().getByRole('button', { name: /^Approve once/ }).waitFor();
    assert.equal(await decide().getByRole('button', { name: /^Approve once/ }).isEnabled(), true);
    // A mark in the page: a reload would lose it.
    await page.evaluate(() => {
      /** @type {any} */ (window).__sameTab = 'yes';
    });
    const origin = tg.origin;
    const cookie = (await context.cookies()).find((c) => c.name === 'tg_console')?.value;

    await tg.halt();
    await row(id).getByTestId('unknown-state').getByText('Unknown: the console lost the engine').waitFor({ timeout: 15_000 });
    assert.equal(await row(id).getByRole('timer').count(), 0, 'no countdown for a request whose state is unknown');
    const detail = page.getByRole('region', { name: 'Request detail' });
    await detail.getByTestId('unknown-state').waitFor();
    for (const name of [/^Approve once/, /^Approve & always/, /^Deny d$/, /^Deny & always/]) {
      const b = decide().getByRole('button', { name });
      assert.equal(await b.isDisabled(), true, `${name} is disabled while the engine is gone`);
      assert.match((await b.getAttribute('title')) ?? '', /The console lost the engine/);
    }
    const reason = page.getByTestId('offline-reason');
    assert.match(await reason.innerText(), /may have been decided, cancelled or timed out meanwhile/);
    // The keys do nothing either: `d` opens no reason box.
    await page.keyboard.press('d');
    assert.equal(await page.getByLabel('Reason for the agent (optional)').count(), 0);
    await page.getByRole('alert').filter({ hasText: "Can't reach the toolgate engine." }).waitFor();
    await page.screenshot({ path: `${SHOTS}/reconnect-offline.png` });

    await tg.restart();
    assert.equal(tg.origin, origin, 'the restarted engine listens on the same port');
    // The tab finds it within a few seconds (tries are at most 3 s apart).
    await header().getByText('Connected').waitFor({ timeout: 15_000 });
    await page.getByText('The engine restarted; the console loaded its new state.').waitFor();
    assert.equal(await page.evaluate(() => /** @type {any} */ (window).__sameTab), 'yes', 'the same page, not a reload');
    assert.equal((await context.cookies()).find((c) => c.name === 'tg_console')?.value, cookie, 'no new login');
    assert.equal(await page.getByText('This browser is not signed in to the console.').count(), 0);
    // The request died with the old engine: it is no longer waiting.
    await waitFor('the old request to leave the waiting list', async () => (await page.locator('ul[aria-label="Waiting approval requests"] li.item[data-id="' + id + '"]').count()) === 0);

    // The new engine's state is live in the same tab: a new request appears.
    agent.destroy();
    agent = await Agent.connect(tg.socket, { name: 'claude-code' });
    agent.start('shell_exec', { command: 'echo after-the-restart' });
    const id2 = await requestFor('echo after-the-restart');
    await row(id2).getByRole('timer').waitFor({ timeout: 5_000 });
    await row(id2).getByRole('button').first().click();
    await waitFor('Approve once to be enabled again', () => decide().getByRole('button', { name: /^Approve once/ }).isEnabled());
    assert.equal(await page.getByTestId('offline-reason').count(), 0);
    await tg.cli(['deny', String(id2)]);
  });

  test('an engine whose old port is taken starts elsewhere; the banner names `toolgate console`, whose link finds it', async () => {
    agent?.destroy();
    agent = undefined;
    const old = new URL(tg.origin);
    await tg.halt();
    // Something else takes the port meanwhile: it accepts and hangs up.
    squatter = net.createServer((s) => s.destroy());
    const server = squatter;
    await within(
      `another program to listen on ${old.host}`,
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(Number(old.port), '127.0.0.1', () => resolve(undefined));
      }),
    );
    await tg.restart();
    assert.notEqual(tg.origin, old.origin, 'the engine took another port');
    assert.match(tg.stderr, new RegExp(`port ${old.port}, where this engine served last, is not available`));
    assert.match(tg.stderr, /run `toolgate console`/);

    // The tab stays on the old origin and keeps trying; after 30 s it says what to run.
    const hint = page.getByTestId('lost-hint');
    await hint.waitFor({ timeout: 50_000 });
    const words = await hint.innerText();
    assert.match(words, /If the engine was restarted on another port, run toolgate console to open the console where it runs now/);
    assert.equal(await hint.locator('code', { hasText: 'toolgate console' }).count(), 1, 'the command is shown as code');
    assert.doesNotMatch(await page.getByRole('alert').first().innerText(), /`/, 'no raw backticks');
    await page.screenshot({ path: `${SHOTS}/reconnect-lost.png` });

    // What the banner says works: `toolgate console` opens the engine where it runs now.
    const link = await tg.freshLoginUrl();
    assert.equal(new URL(link).origin, tg.origin);
    await page.goto(link);
    await header().getByText('Connected').waitFor({ timeout: 15_000 });
  });

  test('the page logged no errors but the refused connections of the engine being away', () => {
    assert.deepEqual(besidesEngineAway(errors), []);
  });
});
