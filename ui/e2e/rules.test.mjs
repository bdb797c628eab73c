// @ts-check
// A remembered rule keeps its hits and its last use across an engine
// restart: the open Policy view shows the same figures after the engine
// came back as before it stopped. On the way, the live feed shows each
// call's arguments and its search finds a call by them.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, text } from './lib/agent.mjs';
import { besidesEngineAway, consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const CONFIG = `[policy]
preset = "default"
approval_timeout_s = 120
`;

describe('remembered rules across a restart', { skip: skipUnlessReady(), timeout: 180_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
  });

  after(async () => {
    await browser?.close();
    await tg?.stop();
  });

  /** The rule's row in the Policy view's remembered rules. */
  const ruleRow = () => page.locator('tr', { has: page.locator('code', { hasText: 'tool=shell_exec,/command=echo *' }) });

  /** @returns {Promise<{ hits: string, last: string }>} */
  async function figures() {
    const cells = ruleRow().locator('td');
    return { hits: (await cells.nth(3).innerText()).trim(), last: (await cells.nth(4).innerText()).trim() };
  }

  test('hits and last use survive the restart', async () => {
    const agent = await Agent.connect(tg.socket, { name: 'claude-code' });
    // A person approves the first echo "always" from the CLI…
    const first = agent.call('shell_exec', { command: 'echo one' });
    const id = await waitFor('the request for `echo one`', async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.args?.command === 'echo one')?.id;
    });
    const approved = await tg.cli(['approve', String(id), '--always', '/command=echo *']);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(text(await first), /one/);
    // …and the rule answers the next three without asking.
    for (const word of ['two', 'three', 'four']) {
      assert.match(text(await agent.call('shell_exec', { command: `echo ${word}` })), new RegExp(word));
    }
    agent.close();

    // The live feed tells the calls apart by their arguments, and finds one by them.
    await gotoView(page, '#/live', 'Live calls');
    const feed = page.getByRole('grid');
    for (const word of ['one', 'two', 'three', 'four']) {
      await feed.getByText(`echo ${word}`, { exact: true }).waitFor();
    }
    await page.getByRole('searchbox', { name: 'Search calls' }).fill('echo three');
    await waitFor('the search to keep only `echo three`', async () => (await feed.getByText(/^echo /).count()) === 1);
    await page.getByRole('searchbox', { name: 'Search calls' }).fill('');

    await gotoView(page, '#/policy', 'Policy');
    await waitFor('the rule to show 3 hits', async () => (await ruleRow().count()) === 1 && (await figures()).hits === '3');
    const before = await figures();
    assert.notEqual(before.last, 'never');

    await tg.halt();
    await tg.restart();
    // The same tab comes back by itself and reads the rules again.
    await page.locator('.banner', { hasText: 'The engine restarted' }).waitFor({ timeout: 20_000 });
    await gotoView(page, '#/policy', 'Policy');
    await ruleRow().waitFor();
    assert.deepEqual(await figures(), before, 'the rule forgot its use across the restart');
    const listed = await tg.cli(['rules']);
    assert.match(listed.stdout, /^#1 {2}allow {2}in force {2}matched 3 calls, last on /, listed.stdout);
    // The tab's tries while the engine restarted are the only errors.
    assert.deepEqual(besidesEngineAway(errors), []);
  });
});
