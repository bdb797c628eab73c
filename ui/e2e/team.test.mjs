// @ts-check
// Two engines, one queue: two real `toolgate serve` processes share one real
// Postgres (made by this file: initdb in a temp dir, a private port). An
// agent on A raises a request; B's console shows it marked with A's engine,
// the person approves it there, A's agent gets its result, and both consoles
// show it approved by B's user.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Agent, text } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Postgres, postgresMissing } from './lib/postgres.mjs';
import { REPO, Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const SHOTS = process.env.SCREENSHOT_DIR ?? `${REPO}/docs/screenshots`;

/**
 * The `skip` option: the binary and the browser as every e2e file, and a
 * Postgres to start; under CI=true a missing one fails the run.
 * @returns {string | false}
 */
function skip() {
  const ready = skipUnlessReady();
  if (ready) return ready;
  const why = postgresMissing();
  if (!why) return false;
  if (process.env.CI === 'true') throw new Error(`the team end-to-end test cannot run: ${why}`);
  console.error(`\n*** team end-to-end test SKIPPED: ${why} ***\n`);
  return why;
}

describe('team', { skip: skip(), timeout: 240_000 }, () => {
  /** @type {Postgres} */ let pg;
  /** @type {Toolgate} */ let a;
  /** @type {Toolgate} */ let b;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let pageA;
  /** @type {import('playwright-core').Page} */ let pageB;
  /** @type {string[]} */ let errorsA;
  /** @type {string[]} */ let errorsB;
  /** @type {Agent} */ let agent;
  /** @type {Toolgate | undefined} */ let c;
  /** @type {Agent | undefined} */ let agentC;
  /** @type {string} */ let config;

  before(async () => {
    pg = await Postgres.start();
    config = `[policy]\npreset = "default"\napproval_timeout_s = 120\n\n[storage]\nurl = "${pg.url()}"\n`;
    a = await Toolgate.start({ config });
    b = await Toolgate.start({ config });
    browser = await launch();
    ({ page: pageA, errors: errorsA } = await consolePage(browser, a));
    ({ page: pageB, errors: errorsB } = await consolePage(browser, b));
    await gotoView(pageA, '#/approvals', 'Approvals');
    await gotoView(pageB, '#/approvals', 'Approvals');
    agent = await Agent.connect(a.socket, { name: 'claude-code' });
  });

  after(async () => {
    agent?.close();
    agentC?.close();
    await c?.stop();
    await browser?.close();
    await a?.stop();
    await b?.stop();
    await pg?.stop();
  });

  /**
   * GET `path` of a console from inside its page (its session cookie).
   * @param {import('playwright-core').Page} page
   * @param {string} path
   */
  async function getJson(page, path) {
    return page.evaluate(async (p) => {
      const r = await fetch(p);
      if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`);
      return r.json();
    }, path);
  }

  /** @param {string} command the id of A's pending request for `command` (A's CLI) */
  async function requestOnA(command) {
    return waitFor(`A's approval request for \`${command}\``, async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await a.cliJson(['approvals']);
      return list.find((r) => r.args?.command === command)?.id;
    });
  }

  /** @param {number} id whether A's request `id` still waits (A's CLI) */
  async function pendingOnA(id) {
    /** @type {{ id: number }[]} */
    const list = await a.cliJson(['approvals']);
    return list.some((x) => x.id === id);
  }

  test("a request raised on A is shown in B's console with A's engine, approved there, and reaches A's agent", async () => {
    const aId = readFileSync(`${a.dataDir}/engine-id`, 'utf8').trim();
    // Both links online, each seeing the other engine.
    for (const page of [pageA, pageB]) {
      const chip = page.getByTestId('team-link');
      await waitFor('the team link online with the other engine', async () => {
        const t = await chip.innerText();
        return t.includes('Team online') && t.includes('1 other engine online');
      });
    }
    /** @type {{ labels: Record<string, string>, status: { me: { id: string } } }} */
    const teamB = await getJson(pageB, '/api/team');
    const aLabel = teamB.labels[aId];
    const bLabel = teamB.labels[teamB.status.me.id];
    assert.ok(aLabel && bLabel, JSON.stringify(teamB.labels));

    const command = 'echo approved-from-b';
    const call = agent.start('shell_exec', { command });
    const id = await requestOnA(command);
    const key = `${aId}/${id}`;
    const row = pageB.locator(`li.item[data-team="${key}"]`);
    await row.waitFor();
    assert.equal(await row.getByTestId('team-engine').innerText(), aLabel);
    // Nothing of B's own waits: A's request is selected and its detail says where it was raised.
    await waitFor('the request selected in B', async () => (await row.getAttribute('aria-selected')) === 'true');
    const detail = pageB.getByRole('region', { name: 'Request detail' });
    const where = await detail.getByTestId('team-detail-engine').innerText();
    assert.equal(where.replace(/\s+/g, ' '), `Raised on ${aLabel}`);
    await detail.getByRole('region', { name: `Arguments of request ${id} on ${aLabel}` }).getByText('approved-from-b').first().waitFor();
    await pageB.screenshot({ path: `${SHOTS}/team-inbox-light.png` });
    const dark = await consolePage(browser, b, { colorScheme: 'dark' });
    await gotoView(dark.page, '#/approvals', 'Approvals');
    await dark.page.locator(`li.item[data-team="${key}"][aria-selected="true"]`).waitFor();
    await dark.page.getByRole('region', { name: 'Request detail' }).getByText('approved-from-b').first().waitFor();
    await dark.page.screenshot({ path: `${SHOTS}/team-inbox-dark.png` });
    assert.deepEqual(dark.errors, []);
    await dark.context.close();
    // Narrow: the list above the detail, each card one line, its engine still named.
    await pageB.setViewportSize({ width: 760, height: 900 });
    await row.getByTestId('team-engine').waitFor({ state: 'visible' });
    await pageB.screenshot({ path: `${SHOTS}/team-inbox-light-760.png` });
    await pageB.setViewportSize({ width: 1440, height: 900 });

    // The click: sent to A, which decides it; A's agent gets the result.
    const approve = detail.getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve once/ });
    await approve.click();
    await waitFor(`A's request ${id} decided`, async () => !(await pendingOnA(id)));
    const r = await call.result;
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.match(text(r), /approved-from-b/);

    // Both consoles show it approved by B's user.
    const words = `Approved by ${bLabel}`;
    await detail.getByTestId('team-ended').getByText(words).waitFor();
    const recentB = pageB.getByRole('listbox', { name: 'Recently closed requests of other engines' });
    await recentB.locator(`li.item[data-team="${key}"]`).getByText('Approved', { exact: true }).waitFor();
    await pageB.screenshot({ path: `${SHOTS}/team-decided-light.png` });

    const rowA = pageA.locator(`li.item[data-id="${id}"]`);
    await rowA.getByText('Approved', { exact: true }).waitFor();
    await rowA.getByRole('button').first().click();
    await pageA.getByRole('region', { name: 'Request detail' }).getByText(words).waitFor();
    await pageA.screenshot({ path: `${SHOTS}/team-decided-on-a-light.png` });

    // A second click is not an error: the outcome says what won.
    /** @type {{ took_effect: boolean, status: string, words: string }} */
    const late = await pageB.evaluate(
      async ({ path }) => {
        const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
        return res.json();
      },
      { path: `/api/team/${aId}/${id}/deny` },
    );
    assert.equal(late.took_effect, false, JSON.stringify(late));
    assert.equal(late.status, 'approved');

    // Settings lists the team's engines, each with whether it is online.
    await gotoView(pageB, '#/settings', 'Settings');
    await pageB.getByRole('tab', { name: 'Engine & retention' }).click();
    const team = pageB.locator('.team[data-testid="team-link"]');
    await team.getByText('Team online').waitFor();
    const engines = team.getByRole('list', { name: "The team's engines" }).getByRole('listitem');
    assert.equal(await engines.count(), 2);
    assert.match((await engines.allInnerTexts()).join('\n'), /\(this engine\)/);
    await team.scrollIntoViewIfNeeded();
    await pageB.screenshot({ path: `${SHOTS}/team-settings-light.png` });

    // B's Audit view reads the team's log: A's shell_exec, named by A's engine.
    await gotoView(pageB, '#/audit', 'Audit');
    await pageB.getByRole('combobox', { name: 'Whose calls' }).selectOption({ label: 'Whole team' });
    const teamLog = pageB.getByRole('grid', { name: 'The team’s audit log' });
    const aRow = teamLog.getByRole('row').filter({ hasText: 'shell_exec' }).first();
    await aRow.waitFor();
    assert.match(await aRow.innerText(), /OK/);
    await aRow.getByText(aLabel).waitFor();
    await pageB.getByRole('combobox', { name: 'Whose calls' }).selectOption({ value: aId });
    await teamLog.getByRole('row').filter({ hasText: 'shell_exec' }).first().waitFor();
    await pageB.screenshot({ path: `${SHOTS}/team-audit-light.png` });

    assert.deepEqual(errorsA, []);
    assert.deepEqual(errorsB, []);
  });

  test("a request the person may not decide says why and cannot be decided; its agent leaving cancels it in B's console", async () => {
    // A CI engine whose requests only release-lead decides; B runs as another user.
    c = await Toolgate.start({ config: `${config}\n[team]\ndeciders = ["release-lead"]\n` });
    agentC = await Agent.connect(c.socket, { name: 'ci-agent' });
    const cId = readFileSync(`${c.dataDir}/engine-id`, 'utf8').trim();
    await gotoView(pageB, '#/approvals', 'Approvals');
    const chip = pageB.getByTestId('team-link');
    await waitFor('B seeing both other engines online', async () => (await chip.innerText()).includes('2 other engines online'));
    const pending = agentC.start('shell_exec', { command: 'echo from-ci' });
    const id = await waitFor("C's approval request", async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await /** @type {Toolgate} */ (c).cliJson(['approvals']);
      return list.find((r) => r.args?.command === 'echo from-ci')?.id;
    });
    const key = `${cId}/${id}`;
    const row = pageB.locator(`li.item[data-team="${key}"]`);
    await row.waitFor();
    /** @type {{ requests: { engine: { id: string }, id: number, cannot_decide: string | null }[] }} */
    const team = await getJson(pageB, '/api/team');
    const why = team.requests.find((r) => r.engine.id === cId && r.id === id)?.cannot_decide;
    assert.ok(why?.startsWith('Only release-lead may decide requests from'), String(why));
    await row.getByRole('button').first().click();
    const detail = pageB.getByRole('region', { name: 'Request detail' });
    assert.equal((await detail.getByTestId('cannot-decide').innerText()).trim(), why);
    const decide = detail.getByRole('group', { name: 'Decide' });
    for (const name of [/^Approve once/, /^Deny/]) {
      const button = decide.getByRole('button', { name });
      assert.equal(await button.isDisabled(), true);
      assert.equal(await button.getAttribute('title'), why);
    }
    await pageB.screenshot({ path: `${SHOTS}/team-cannot-decide-light.png` });

    // C's agent leaves: its request is cancelled on C, and B's console shows it so.
    agentC.destroy();
    void pending.result.catch(() => {});
    const recent = pageB.getByRole('listbox', { name: 'Recently closed requests of other engines' });
    await recent.locator(`li.item[data-team="${key}"]`).getByText('Cancelled', { exact: true }).waitFor();
    await detail.getByTestId('team-ended').waitFor();
    assert.deepEqual(errorsB, []);
  });

  test('the database lost: both consoles say the team is degraded in the engine’s words, and online again when it is back', async () => {
    await pg.kill();
    for (const page of [pageA, pageB]) {
      const chip = page.getByTestId('team-link');
      await waitFor('the team link degraded', async () => (await chip.getAttribute('data-state')) === 'degraded');
      assert.match(await chip.innerText(), /Team degraded/);
      const words = (await chip.getAttribute('title')) ?? '';
      assert.match(words, /^The team database is unreachable \(.+\); this engine decides only its own requests until it is back\.$/);
      // Said on the page too, not only on hover.
      assert.equal(await page.getByTestId('team-down').innerText(), words);
    }
    await pageB.screenshot({ path: `${SHOTS}/team-degraded-light.png` });
    await pg.startAgain();
    for (const page of [pageA, pageB]) {
      const chip = page.getByTestId('team-link');
      await waitFor('the team link online again', async () => (await chip.getAttribute('data-state')) === 'online', { timeout: 30_000 });
    }
    assert.deepEqual(errorsA, []);
  });
});
