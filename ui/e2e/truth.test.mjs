// @ts-check
// The page never lies: every change of engine state reaches an open view
// within a second, whatever made it (the config file edited in an editor,
// the CLI, a second console window); a config edit the engine rejects is
// shown until it is fixed; a Policy save made from a stale view
// shows the conflict instead of overwriting; the Approvals inbox moves on
// to the next waiting request and shows a new one at once; the approval
// toast names the caller in words; Settings shows the engine's memory
// and follows agents connecting.

import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Agent, text } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor, within } from './lib/wait.mjs';

/** How long a view may take to show a change the engine already has. */
const WITHIN = 1_000;

const POLICY = `[policy]
preset = "default"
approval_timeout_s = 120
`;

describe('the page never lies', { skip: skipUnlessReady(), timeout: 240_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {import('playwright-core').Page} */ let other;
  /** @type {string[]} */ let errors;
  /** @type {string[]} */ let otherErrors;
  /** @type {Agent} */ let agent;

  before(async () => {
    tg = await Toolgate.start({ config: POLICY });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    ({ page: other, errors: otherErrors } = await consolePage(browser, tg));
    agent = await Agent.connect(tg.socket, { name: 'claude-code' });
  });

  after(async () => {
    agent?.close();
    await browser?.close();
    await tg?.stop();
  });

  /**
   * Replaces the config file the way editors do (write aside, rename over),
   * and waits until the engine has it (agents are told the tool list changed).
   * @param {string} toml
   */
  async function editConfig(toml) {
    const told = new Promise((resolve) => {
      const off = agent.onNotification((m) => {
        if (m.method === 'notifications/tools/list_changed') {
          off();
          resolve(true);
        }
      });
    });
    const tmp = `${tg.configFile}.tmp`;
    writeFileSync(tmp, toml);
    renameSync(tmp, tg.configFile);
    await within('the engine to reload the edited config file', told, 10_000);
  }

  /** @param {import('playwright-core').Page} p @param {string} name */
  const toolRow = (p, name) => p.locator('li.trow-t', { has: p.locator('.tname', { hasText: new RegExp(`^${name}$`) }) });

  /** @param {string} command @returns {Promise<number>} */
  async function requestFor(command) {
    return waitFor(`an approval request for \`${command}\``, async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.args?.command === command)?.id;
    });
  }

  /** @param {number} id */
  async function pending(id) {
    /** @type {{ id: number }[]} */
    const list = await tg.cliJson(['approvals']);
    return list.some((x) => x.id === id);
  }

  const detail = () => page.getByRole('region', { name: 'Request detail' });
  /** @param {number} id */
  const row = (id) => page.locator(`li.item[data-id="${id}"]`);

  test('an edit of the config file reaches the open Tools view', async () => {
    await gotoView(page, '#/tools', 'Tools');
    await toolRow(page, 'fs_write').waitFor();
    assert.equal(await toolRow(page, 'fs_write').getByText('Hidden by policy').count(), 0);
    await editConfig(`denied_tools = ["fs_write"]\n${POLICY}`);
    await toolRow(page, 'fs_write').getByText('Hidden by policy').waitFor({ timeout: WITHIN });
    await page.getByRole('button', { name: /^Hidden by policy\s*1$/ }).waitFor({ timeout: WITHIN });
  });

  test('a config edit the engine rejects is shown, and goes away once fixed', async () => {
    await gotoView(page, '#/live', 'Live calls');
    const banner = page.getByTestId('config-problem');
    assert.equal(await banner.count(), 0);
    const tmp = `${tg.configFile}.tmp`;
    writeFileSync(tmp, `${POLICY}preset_typo = true\n[policy.nope]\n`);
    renameSync(tmp, tg.configFile);
    await banner.waitFor({ timeout: 10_000 });
    const said = await banner.innerText();
    assert.match(said, /Your last edit of the config file was not applied/);
    assert.match(said, /line \d+/, said);
    // The same policy as before the typo, so only the problem changes.
    writeFileSync(tmp, `denied_tools = ["fs_write"]\n${POLICY}# fixed\n`);
    renameSync(tmp, tg.configFile);
    await banner.waitFor({ state: 'detached', timeout: 10_000 });
  });

  test('Settings shows the engine’s memory and follows agents connecting', async () => {
    await gotoView(page, '#/settings', 'Settings');
    await page.getByRole('tab', { name: 'Engine & retention' }).click();
    const health = page.getByTestId('engine-health');
    await health.getByText(/^1 agent\b/).waitFor({ timeout: 5_000 });
    assert.match(await health.innerText(), /Memory\s+[\d.]+ MB · peak [\d.]+ MB/);
    const second = await Agent.connect(tg.socket, { name: 'second-agent' });
    await health.getByText(/^2 agents\b/).waitFor({ timeout: 5_000 });
    second.close();
    await health.getByText(/^1 agent\b/).waitFor({ timeout: 5_000 });
  });

  test('a tool’s first call puts its tile on the open Breakers view', async () => {
    await gotoView(page, '#/breakers', 'Breakers');
    const tile = page.locator('li.tile', { has: page.locator('.name', { hasText: /^fs_list$/ }) });
    assert.equal(await tile.count(), 0);
    await agent.call('fs_list', { path: '.' });
    await tile.waitFor({ timeout: WITHIN });
  });

  test('a policy saved in a second window reaches the first window’s Tools view', async () => {
    await gotoView(page, '#/tools', 'Tools');
    await toolRow(page, 'http_fetch').waitFor();
    assert.equal(await toolRow(page, 'http_fetch').getByText('Hidden by policy').count(), 0);
    await gotoView(other, '#/policy', 'Policy');
    // Window B: add http_fetch to the denylist in the form, review, apply.
    const add = other.getByLabel('Add to Denylist');
    await add.fill('http_fetch');
    await add.press('Enter');
    await other.getByRole('button', { name: 'Review changes' }).click();
    await other.getByRole('button', { name: 'Apply and save' }).click();
    await other.getByText(/^Policy v\d+ applied$/).waitFor();
    await toolRow(page, 'http_fetch').getByText('Hidden by policy').waitFor({ timeout: WITHIN });
  });

  test('a Policy save from a stale view shows the conflict and writes nothing', async () => {
    await gotoView(page, '#/policy', 'Policy');
    const deny = page.getByRole('list', { name: 'Denylist' });
    await deny.getByRole('button', { name: 'Remove fs_write' }).waitFor();
    // This window starts an edit...
    await deny.getByRole('button', { name: 'Remove fs_write' }).click();
    // ...while someone edits the file in an editor.
    const theirs = `denied_tools = ["fs_write", "http_fetch", "fs_edit"]\n${POLICY}`;
    await editConfig(theirs);
    await page.getByText(/The running policy moved to v\d+/).waitFor({ timeout: WITHIN });
    await page.getByRole('button', { name: 'Review changes' }).click();
    await page.getByRole('button', { name: 'Apply and save' }).click();
    const conflict = page.getByRole('alert', { name: 'Conflict' });
    await conflict.waitFor();
    await conflict.getByText(/The policy changed while you were editing/).waitFor();
    // The diff names what the other side has and this edit does not.
    const diff = page.getByLabel('Theirs against yours');
    await diff.locator('.d-del', { hasText: 'fs_edit' }).first().waitFor();
    await diff.locator('.d-del', { hasText: 'fs_write' }).first().waitFor();
    assert.equal(readFileSync(tg.configFile, 'utf8'), theirs, 'nothing was written');
    await page.getByRole('button', { name: 'Reload theirs (drop my edit)' }).click();
    await deny.getByRole('button', { name: 'Remove fs_edit' }).waitFor();
    assert.equal(readFileSync(tg.configFile, 'utf8'), theirs);
  });

  test('a decision from the CLI, then a request that arrives after it is shown at once', async () => {
    await gotoView(page, '#/approvals', 'Approvals');
    agent.start('shell_exec', { command: 'echo denied-from-cli' });
    const first = await requestFor('echo denied-from-cli');
    await detail().getByText(`Request #${first}`).waitFor();
    const r = await tg.cli(['deny', String(first), '--reason', 'not now']);
    assert.equal(r.code, 0, r.stderr);
    await row(first).getByText('Denied', { exact: true }).waitFor({ timeout: WITHIN });
    await detail().getByText(/can no longer be decided/).waitFor({ timeout: WITHIN });

    const call = agent.start('shell_exec', { command: 'echo arrives-after' });
    const next = await requestFor('echo arrives-after');
    await detail().getByText(`Request #${next}`).waitFor({ timeout: WITHIN });
    const approve = detail().getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve once/ });
    assert.equal(await approve.isDisabled(), false, 'the shown request can be decided');
    const ok = await tg.cli(['approve', String(next)]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(text(await call.result), /arrives-after/);
    await row(next).getByText('Approved', { exact: true }).waitFor({ timeout: WITHIN });
  });

  test('approving one of three waiting requests selects the next, and `a` approves it', async () => {
    // One after another, so arrival order and deadline order are known.
    const calls = [];
    const ids = [];
    for (const w of ['one', 'two', 'three']) {
      calls.push(agent.start('shell_exec', { command: `echo inbox-${w}` }));
      ids.push(await requestFor(`echo inbox-${w}`));
    }
    const [a, b, c] = /** @type {[number, number, number]} */ (ids);
    // Nothing waiting was selected, so the first arrival took the selection
    // and the later ones did not steal it.
    await detail().getByText(`Request #${a}`).waitFor({ timeout: WITHIN });
    await waitFor('`a` to approve the selected request', async () => {
      if (await pending(a)) await page.keyboard.press('a');
      return !(await pending(a));
    }, { interval: 250 });
    await page.getByRole('status').getByText(`Approved #${a} shell_exec`).waitFor();
    // Next waiting, soonest deadline first.
    await detail().getByText(`Request #${b}`).waitFor({ timeout: WITHIN });
    await waitFor('`a` to approve the next request', async () => {
      if (await pending(b)) await page.keyboard.press('a');
      return !(await pending(b));
    }, { interval: 250 });
    assert.ok(await pending(c), 'the third request still waits: one key, one decision');
    await detail().getByText(`Request #${c}`).waitFor({ timeout: WITHIN });
    const focused = await page.evaluate(() => document.activeElement?.closest('li.item')?.getAttribute('data-id'));
    assert.equal(focused, String(c), 'the keyboard stays in the list, on the selected request');
    await tg.cli(['deny', String(c)]);
    const results = await Promise.all(calls.slice(0, 2).map((x) => x.result));
    assert.deepEqual(
      results.map((r) => /inbox-(one|two)/.exec(text(r))?.[0]),
      ['inbox-one', 'inbox-two'],
    );
  });

  test('the approval toast names the caller in words', async () => {
    await gotoView(page, '#/tools', 'Tools');
    agent.start('shell_exec', { command: 'echo toast' });
    const id = await requestFor('echo toast');
    const toast = page.locator('.toast', { hasText: 'shell_exec needs a decision' });
    await toast.waitFor({ timeout: WITHIN });
    const words = await toast.innerText();
    assert.match(words, /claude-code/);
    assert.doesNotMatch(words, /\[object Object\]/);
    await tg.cli(['deny', String(id)]);
  });

  test('the pages logged no errors', () => {
    // The browser itself logs the refused (409) save of the stale Policy view.
    const refused = /status of 409 \(Conflict\)/;
    assert.equal(errors.filter((e) => refused.test(e)).length, 1);
    assert.deepEqual(errors.filter((e) => !refused.test(e)), []);
    assert.deepEqual(otherErrors, []);
  });
});
