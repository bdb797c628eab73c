// @ts-check
// Approvals decided in the browser reach the agent; a denial carries its
// reason and nothing runs; a countdown that runs out is a timed-out denial;
// a call whose agent hangs up greys out as cancelled and can no longer be
// decided.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Agent, errorKind, text } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const CONFIG = `
[policy]
preset = "default"
approval_timeout_s = 120

[[policy.rules]]
tool = "shell_exec"
arg = "command"
glob = "*slow-to-answer*"
verdict = "ask"
timeout_s = 4
reason = "e2e: a request nobody answers in time"
`;

describe('approvals', { skip: skipUnlessReady(), timeout: 180_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;
  /** @type {Agent} */ let agent;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    agent = await Agent.connect(tg.socket, { name: 'claude-code' });
    await gotoView(page, '#/approvals', 'Approvals');
  });

  after(async () => {
    agent?.close();
    await browser?.close();
    await tg?.stop();
  });

  /**
   * The request id of the pending approval for `command` (from the CLI).
   * @param {string} command
   * @returns {Promise<number>}
   */
  async function requestFor(command) {
    return waitFor(`an approval request for \`${command}\` in \`toolgate approvals\``, async () => {
      /** @type {{ id: number, args: { command?: string }, status: string }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.args?.command === command)?.id;
    });
  }

  /** @param {number} id */
  const row = (id) => page.locator(`li.item[data-id="${id}"]`);

  /** @param {number} id whether the request is still pending (CLI) */
  async function pending(id) {
    /** @type {{ id: number }[]} */
    const list = await tg.cliJson(['approvals']);
    return list.some((x) => x.id === id);
  }

  /**
   * Repeats a decision until the engine has it: approve/deny are ignored
   * for 400 ms after the selection changes or a request arrives
   * (docs/architecture/console.md, "The approval view").
   * @param {number} id
   * @param {string} what
   * @param {() => Promise<void>} act
   */
  async function decideUntilDone(id, what, act) {
    await waitFor(what, async () => {
      if (!(await pending(id))) return true;
      await act();
      return !(await pending(id));
    }, { interval: 250 });
  }

  /** @param {number} id */
  async function select(id) {
    await row(id).getByRole('button').first().click();
    await page.getByRole('region', { name: 'Request detail' }).getByText(`Request #${id}`).waitFor();
  }

  test('1. a risky call shows with its countdown; Approve (click) and `a` (key) run it', async () => {
    const first = agent.start('shell_exec', { command: 'echo approved-by-click' });
    const id = await requestFor('echo approved-by-click');
    await row(id).waitFor();
    const timer = row(id).getByRole('timer');
    await timer.waitFor();
    const before = await timer.getAttribute('aria-label');
    assert.match(before ?? '', /\d/, 'the countdown says how long is left');
    await select(id);
    const approve = page.getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve once/ });
    await decideUntilDone(id, 'a click on Approve once to approve', () => approve.click());
    const r = await first.result;
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.match(text(r), /approved-by-click/);
    await row(id).getByText('Approved', { exact: true }).waitFor();

    const second = agent.start('shell_exec', { command: 'echo approved-by-key' });
    const id2 = await requestFor('echo approved-by-key');
    await row(id2).waitFor();
    await select(id2);
    // `a` is ignored for 400 ms after the selection changes: press until it takes.
    await decideUntilDone(id2, 'the `a` key to approve the selected request', () => page.keyboard.press('a'));
    const r2 = await second.result;
    assert.equal(r2.isError, false, JSON.stringify(r2));
    assert.match(text(r2), /approved-by-key/);
    await row(id2).getByText('Approved', { exact: true }).waitFor();
  });

  test('2. deny with a reason: the agent gets the reason and the command never ran', async () => {
    const marker = tg.rootPath('denied-marker');
    const call = agent.start('shell_exec', { command: 'touch denied-marker' });
    const id = await requestFor('touch denied-marker');
    await row(id).waitFor();
    await select(id);
    await page.getByRole('group', { name: 'Decide' }).getByRole('button', { name: 'Deny d', exact: true }).click();
    const reason = page.getByLabel('Reason for the agent (optional)');
    await reason.fill('not on main: open a branch first');
    await decideUntilDone(id, 'Enter in the reason box to deny', async () => {
      if (await reason.isVisible()) await reason.press('Enter');
    });
    const r = await call.result;
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(errorKind(r), 'denied', JSON.stringify(r));
    assert.match(text(r), /not on main: open a branch first/);
    assert.equal(existsSync(marker), false, 'the denied command must not have run');
    await row(id).getByText('Denied', { exact: true }).waitFor();
  });

  test('3. a countdown that runs out: shown as timed out, the agent got a denial', async () => {
    const call = agent.start('shell_exec', { command: 'echo slow-to-answer' });
    const id = await requestFor('echo slow-to-answer');
    await row(id).getByRole('timer').waitFor();
    const r = await call.result;
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(errorKind(r), 'approval_timed_out', JSON.stringify(r));
    await row(id).getByText('No decision in time', { exact: true }).waitFor({ timeout: 10_000 });
    assert.equal(await row(id).getByRole('timer').count(), 0, 'no countdown once it has ended');
  });

  test('8. an agent that hangs up while waiting: its request greys out as cancelled', async () => {
    const leaver = await Agent.connect(tg.socket, { name: 'leaving-agent' });
    leaver.start('shell_exec', { command: 'touch cancelled-marker' });
    const id = await requestFor('touch cancelled-marker');
    await row(id).waitFor();
    leaver.destroy();
    const ended = row(id);
    await ended.getByText('Cancelled', { exact: true }).waitFor({ timeout: 10_000 });
    assert.match((await ended.getAttribute('class')) ?? '', /\bended\b/, 'an ended request is styled as ended');
    await select(id);
    const approve = page.getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve once/ });
    assert.equal(await approve.isDisabled(), true, 'nobody can approve a request whose agent is gone');
    assert.equal(existsSync(tg.rootPath('cancelled-marker')), false);

    // Live calls: the same call, greyed out as cancelled.
    await gotoView(page, '#/live', 'Live calls');
    const cell = page.locator('.trow', { hasText: 'shell_exec' }).locator('.oc', { hasText: /cancel/i });
    await cell.first().waitFor({ timeout: 10_000 });
    assert.match((await cell.first().getAttribute('class')) ?? '', /tone-muted/, 'a cancelled call is grey (muted), not red');
  });

  test('the page logged no errors', () => {
    assert.deepEqual(errors, []);
  });
});
