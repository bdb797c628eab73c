// @ts-check
// Notes in the corner stay out of the way: on Approvals, waiting requests
// raise none (the list shows them) and nothing covers the buttons that
// decide them; on another view, four requests give one note, "4 calls need a
// decision", which follows them as they end (an agent hanging up, the CLI
// deciding) and closes itself when none is left.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const CONFIG = `
[policy]
preset = "default"
approval_timeout_s = 300

[[policy.rules]]
tool = "fs_write"
verdict = "ask"
reason = "e2e: a write waits for a person"
`;

const SHOTS = process.env.TOASTS_SHOTS ?? '/tmp';

describe('toasts', { skip: skipUnlessReady(), timeout: 180_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;
  /** @type {Agent[]} */ const agents = [];

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    await gotoView(page, '#/approvals', 'Approvals');
  });

  after(async () => {
    for (const a of agents) a.destroy();
    await browser?.close();
    await tg?.stop();
  });

  /** @param {string} name */
  async function agent(name) {
    const a = await Agent.connect(tg.socket, { name });
    agents.push(a);
    return a;
  }

  /**
   * The ids of the waiting requests for `commands`, in that order (CLI).
   * @param {string[]} commands
   * @returns {Promise<number[]>}
   */
  async function requestsFor(commands) {
    return waitFor(`approval requests for ${commands.join(', ')}`, async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await tg.cliJson(['approvals']);
      const ids = commands.map((c) => list.find((r) => r.args?.command === c)?.id);
      return ids.every((id) => id !== undefined) ? /** @type {number[]} */ (ids) : null;
    });
  }

  /** Two frames: whatever a batch of events raises is on screen. */
  const painted = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(undefined)))));

  /**
   * Whether the element's centre is what a click there would hit (nothing over it).
   * @param {import('playwright-core').Locator} el
   */
  const uncovered = (el) =>
    el.evaluate((node) => {
      const r = node.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return !!hit && (hit === node || node.contains(hit));
    });

  const note = () => page.locator('.toast[data-key="approvals-waiting"]');

  test('on Approvals, four waiting requests raise no note and nothing covers the decision buttons', async () => {
    const a = await agent('claude-code');
    const commands = ['echo here-1', 'echo here-2', 'echo here-3', 'echo here-4'];
    for (const c of commands) a.start('shell_exec', { command: c });
    const ids = await requestsFor(commands);
    for (const id of ids) await page.locator(`li.item[data-id="${id}"]`).waitFor();
    await painted();
    assert.equal(await page.locator('.toast').count(), 0, 'no note on the view that shows the requests');
    const decide = page.getByRole('group', { name: 'Decide' });
    for (const name of [/^Approve once/, /^Approve & always/, /^Deny d$/, /^Deny & always/]) {
      assert.equal(await uncovered(decide.getByRole('button', { name })), true, `${name} is not covered`);
    }
    // A note raised here (a breaker opening) would sit above the decision bar.
    const clear = await page.evaluate(() => {
      const stack = document.querySelector('[data-testid="toasts"]');
      const bar = document.querySelector('.actions-wrap');
      if (!stack || !bar) return null;
      return { stackBottom: stack.getBoundingClientRect().bottom, barTop: bar.getBoundingClientRect().top };
    });
    assert.ok(clear && clear.stackBottom <= clear.barTop, `the note stack ends above the decision bar: ${JSON.stringify(clear)}`);
    const copy = page.getByRole('region', { name: /^Arguments of request/ }).getByRole('button', { name: /Copy/ });
    await copy.waitFor();
    assert.equal(await uncovered(copy), true, "the arguments' Copy button is not covered");
    for (const id of ids) await tg.cli(['deny', String(id)]);
  });

  test('elsewhere, four requests are one note that follows them and closes when they end', async () => {
    await gotoView(page, '#/live', 'Live calls');
    const leaver = await agent('cursor');
    const stayer = await agent('claude-code');
    leaver.start('shell_exec', { command: 'echo away-1' });
    leaver.start('shell_exec', { command: 'echo away-2' });
    stayer.start('shell_exec', { command: 'echo away-3' });
    stayer.start('fs_write', { path: 'away-4.txt', content: 'x' });
    /** @type {number[]} */
    const ids = await waitFor('four approval requests', async () => {
      /** @type {{ id: number, tool: string }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.length === 4 ? list.map((r) => r.id) : null;
    });
    await note().getByText('4 calls need a decision').waitFor({ timeout: 5_000 });
    assert.equal(await page.locator('.toast').count(), 1, 'one note, not one per request');
    const words = await note().innerText();
    assert.match(words, /shell_exec ×3, fs_write · from 2 callers/);
    assert.doesNotMatch(words, /`/, 'tool names are shown as code, not in backticks');
    assert.equal(await note().getByRole('link', { name: 'Review' }).count(), 1);
    await page.screenshot({ path: `${SHOTS}/toasts-summary.png` });

    // The agent with two requests hangs up: they are cancelled, the note follows.
    leaver.destroy();
    await note().getByText('2 calls need a decision').waitFor({ timeout: 5_000 });
    /** @type {{ id: number, tool: string }[]} */
    const left = await tg.cliJson(['approvals']);
    assert.equal(left.length, 2);
    const shell = left.find((r) => r.tool === 'shell_exec');
    const write = left.find((r) => r.tool === 'fs_write');
    assert.ok(shell && write, JSON.stringify(left));
    assert.ok(ids.includes(shell.id) && ids.includes(write.id));

    // Decided from the CLI: one left, then none, and the note is gone.
    await tg.cli(['deny', String(shell.id)]);
    await note().getByText('fs_write needs a decision').waitFor({ timeout: 5_000 });
    assert.match(await note().getByRole('link', { name: 'Review' }).getAttribute('href') ?? '', new RegExp(`id=${write.id}$`));
    await tg.cli(['approve', String(write.id)]);
    await note().waitFor({ state: 'detached', timeout: 5_000 });
    assert.equal(await page.locator('.toast').count(), 0);
  });

  test('going to Approvals closes the note', async () => {
    const a = await agent('claude-code');
    a.start('shell_exec', { command: 'echo seen-there' });
    const [id] = await requestsFor(['echo seen-there']);
    await note().getByText('shell_exec needs a decision').waitFor({ timeout: 5_000 });
    await note().getByRole('link', { name: 'Review' }).click();
    await page.getByRole('heading', { level: 1, name: 'Approvals' }).waitFor();
    await page.getByRole('region', { name: 'Request detail' }).getByText(`Request #${id}`).waitFor();
    assert.equal(await note().count(), 0);
    await tg.cli(['deny', String(id)]);
  });

  test('the page logged no errors', () => {
    assert.deepEqual(errors, []);
  });
});
