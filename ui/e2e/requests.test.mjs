// @ts-check
// Waiting requests can be told apart: four `shell_exec` calls from one
// agent each show their own command on their card (a secret hidden, a long
// one cut), and the caller's recent calls show theirs. "Approve & always…"
// opens at the narrowest rule (this command's shape, this caller, a day);
// the rule lets the same shape from the same caller through and still asks
// for a chained command or another caller; broadening is said in words.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, text } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const SHOTS = process.env.REQUESTS_SHOTS ?? '/tmp';
const SECRET = 'sk-e2e-Zq81Xw0123456789abcdef';
const LONG_TAIL = 'LONG-TAIL-MARKER';

const CONFIG = `
[policy]
preset = "default"
approval_timeout_s = 120
`;

const COMMANDS = {
  status: 'echo status-report --short',
  secret: `curl -s -H 'Authorization: Bearer ${SECRET}' https://api.example.invalid/v1/models`,
  list: 'ls -la .',
  long: `echo ${'long-argument-'.repeat(20)}${LONG_TAIL}`,
};

describe('telling requests apart, and the narrowest "always"', { skip: skipUnlessReady(), timeout: 240_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;
  /** @type {Agent} */ let alpha;
  /** @type {Agent} */ let beta;
  /** @type {Record<keyof COMMANDS, { id: number, result: Promise<import('./lib/agent.mjs').ToolResult> }>} */
  const asked = /** @type {any} */ ({});

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    alpha = await Agent.connect(tg.socket, { name: 'agent-alpha' });
    beta = await Agent.connect(tg.socket, { name: 'agent-beta' });
    await gotoView(page, '#/approvals', 'Approvals');
  });

  after(async () => {
    alpha?.close();
    beta?.close();
    await browser?.close();
    await tg?.stop();
  });

  /**
   * The pending request for `command` (from the CLI), with its preview.
   * @param {string} command
   * @returns {Promise<{ id: number, preview: string }>}
   */
  async function requestFor(command) {
    return waitFor(`an approval request for \`${command.slice(0, 40)}\``, async () => {
      /** @type {{ id: number, preview: string, args: { command?: string } }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.args?.command === command);
    });
  }

  /** @param {number} id */
  const card = (id) => page.locator(`li.item[data-id="${id}"]`);
  const detail = () => page.getByRole('region', { name: 'Request detail' });
  const dialog = () => page.getByRole('dialog');

  /** @param {number} id */
  async function select(id) {
    await card(id).getByRole('button').first().click();
    await detail().getByText(`Request #${id}`).waitFor();
  }

  /** @param {number} id @param {string} verb */
  async function decideByCli(id, verb) {
    const r = await tg.cli([verb, String(id)]);
    assert.equal(r.code, 0, `toolgate ${verb} ${id}: ${r.stderr}`);
  }

  test('1. four similar requests each show their own command; a secret never shows, a long one is cut', async () => {
    /** @type {(keyof COMMANDS)[]} */
    const order = ['status', 'secret', 'list', 'long'];
    for (const k of order) {
      const call = alpha.start('shell_exec', { command: COMMANDS[k] });
      const { id } = await requestFor(COMMANDS[k]);
      asked[k] = { id, result: call.result };
    }
    for (const k of order) await card(asked[k].id).locator('.args-preview').waitFor();
    const previews = await Promise.all(order.map((k) => card(asked[k].id).locator('.args-preview').innerText()));
    assert.equal(new Set(previews).size, 4, `four different previews: ${previews.join(' | ')}`);
    assert.equal(previews[0], COMMANDS.status);
    assert.equal(previews[1], "curl -s -H 'Authorization: [redacted]' https://api.example.invalid/v1/models");
    assert.equal(previews[2], COMMANDS.list);
    assert.ok(previews[3]?.endsWith('…') && previews[3].length <= 120, `the long one is cut: ${previews[3]}`);
    assert.ok(previews[3]?.startsWith('echo long-argument-long-argument-'), previews[3]);
    // The full preview is one hover away.
    assert.equal(await card(asked.long.id).locator('.args-preview').getAttribute('title'), previews[3]);
    // The card still names the caller on its own line.
    assert.match(await card(asked.status.id).innerText(), /agent-alpha/);
    // The first (soonest) is selected; its arguments are shown in full, the
    // others' only as previews: the secret and the long tail appear nowhere.
    await detail().getByText(`Request #${asked.status.id}`).waitFor();
    const body = await page.locator('body').innerText();
    assert.ok(!body.includes(SECRET), 'the bearer token is not on the page');
    assert.ok(!body.includes(LONG_TAIL), 'the long command is cut');
    await page.locator('.pane').first().screenshot({ path: `${SHOTS}/requests-cards.png` });
  });

  test("2. the caller's recent calls show what each call was", async () => {
    await decideByCli(asked.status.id, 'approve');
    await decideByCli(asked.list.id, 'approve');
    await decideByCli(asked.long.id, 'approve');
    await decideByCli(asked.secret.id, 'deny');
    assert.match(text(await asked.status.result), /status-report --short/);
    assert.match(text(await asked.long.result), /LONG-TAIL-MARKER/);
    await asked.list.result;
    await asked.secret.result;

    const call = alpha.start('shell_exec', { command: 'echo always-me first' });
    const { id, preview } = await requestFor('echo always-me first');
    assert.equal(preview, 'echo always-me first');
    await card(id).waitFor();
    await select(id);
    const recent = detail().locator('table.mini');
    await waitFor('the four earlier calls in "This caller\'s recent calls"', async () => (await recent.locator('tbody tr').count()) >= 4);
    const cells = await recent.locator('td.args-cell').allInnerTexts();
    assert.ok(cells.includes(COMMANDS.status), cells.join(' | '));
    assert.ok(cells.includes(COMMANDS.list), cells.join(' | '));
    assert.ok(cells.some((c) => c.startsWith("curl -s -H 'Authorization: [redacted]'")), cells.join(' | '));
    assert.ok(cells.some((c) => c.startsWith('echo long-argument-') && c.endsWith('…')), cells.join(' | '));
    assert.equal(new Set(cells).size, cells.length, `each recent call reads differently: ${cells.join(' | ')}`);
    assert.ok(!(await page.locator('body').innerText()).includes(SECRET), 'no secret in the recent calls');
    await detail().screenshot({ path: `${SHOTS}/requests-recent.png` });
    asked.status = { id, result: call.result };
  });

  test('3. "Approve & always…" opens at the narrowest rule; broadening says what else it allows', async () => {
    const id = asked.status.id;
    await page.getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve & always/ }).click();
    const d = dialog();
    const command = d.getByRole('checkbox', { name: /the command runs echo always-me with any plain arguments/ });
    await command.waitFor();
    assert.equal(await command.isChecked(), true, 'the command shape is ticked');
    const caller = d.getByRole('checkbox', { name: /Only this caller/ });
    assert.equal(await caller.isChecked(), true, 'this caller is ticked');
    assert.equal(await d.getByRole('combobox', { name: /^Expires after/ }).inputValue(), '1', 'a day by default');
    await d.getByText('Includes this request').waitFor();
    await d.getByText(/runs `?echo always-me`? with any plain arguments/).first().waitFor();
    assert.equal(await d.getByRole('note').count(), 0, 'nothing beyond this request at first');
    const footer = await d.innerText();
    assert.ok(!footer.includes('refused by the engine'), 'no machine talk in the footer');
    await d.screenshot({ path: `${SHOTS}/requests-always-narrow.png` });

    await caller.uncheck();
    await d.getByRole('note').getByText('Also allows the same call from any caller.').waitFor();
    await d.getByRole('combobox', { name: /^Expires after/ }).selectOption({ label: '7 days' });
    await command.uncheck();
    await d.getByRole('note').getByText('Also allows any command from any caller, for 7 days.').waitFor();
    await d.screenshot({ path: `${SHOTS}/requests-always-broad.png` });

    // Back to narrow, and confirm.
    await command.check();
    await caller.check();
    await d.getByRole('combobox', { name: /^Expires after/ }).selectOption({ label: '1 day' });
    await waitFor('the broadening note to go', async () => (await d.getByRole('note').count()) === 0);
    const confirm = d.getByRole('button', { name: /Approve & remember/ });
    await waitFor('Approve & remember to be enabled', () => confirm.isEnabled());
    await confirm.click();
    const r = await asked.status.result;
    assert.match(text(r), /always-me first/);
    await card(id).getByText('Approved').waitFor();
  });

  test('4. the rule lets the same shape from the same caller through, and still asks otherwise', async () => {
    const same = await alpha.call('shell_exec', { command: 'echo always-me second --loud' });
    assert.equal(same.isError, false, JSON.stringify(same));
    assert.match(text(same), /always-me second --loud/);

    const chained = alpha.start('shell_exec', { command: 'echo always-me; id' });
    const other = alpha.start('shell_exec', { command: 'echo something-else' });
    const fromBeta = beta.start('shell_exec', { command: 'echo always-me third' });
    for (const c of ['echo always-me; id', 'echo something-else', 'echo always-me third']) {
      const { id } = await requestFor(c);
      await card(id).waitFor();
      await decideByCli(id, 'deny');
    }
    for (const c of [chained, other, fromBeta]) {
      const r = await c.result;
      assert.equal(r.isError, true, `asked and was denied: ${JSON.stringify(r)}`);
    }
    assert.deepEqual(errors, []);
  });
});
