// @ts-check
// A tool that keeps timing out (a counted failure; a caller's mistake such
// as a missing file is not) opens its breaker; its tile in Breakers turns
// open, and Reset closes it.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, errorKind } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, fixtureServer, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const CONFIG = `
[policy]
preset = "autonomous"
${fixtureServer('up', 'timeout_ms = 300\nmax_retries = 0\nbreaker_failure_threshold = 2\nbreaker_cooldown_s = 600')}
`;

describe('breakers', { skip: skipUnlessReady(), timeout: 120_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;
  /** @type {Agent} */ let agent;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    agent = await Agent.connect(tg.socket, { name: 'cursor' });
    await waitFor('the upstream tools', async () => (await agent.toolNames()).includes('up__hang'), { timeout: 30_000 });
  });

  after(async () => {
    agent?.close();
    await browser?.close();
    await tg?.stop();
  });

  /** @param {string} tool */
  async function breakerState(tool) {
    /** @type {{ tool: string, state: string, failures: number }[]} */
    const all = await tg.cliJson(['breakers']);
    return all.find((b) => b.tool === tool)?.state;
  }

  test('4. timeouts open the tile; missing files do not; Reset closes it', async () => {
    // Caller errors never count: five reads of a missing file leave fs_read closed.
    for (let i = 0; i < 5; i++) {
      const r = await agent.call('fs_read', { path: `missing-${i}.txt` });
      assert.equal(r.isError, true);
    }
    assert.equal(await breakerState('fs_read'), 'closed', 'a missing file is the caller’s mistake, not an outage');

    for (let i = 0; i < 2; i++) {
      const r = await agent.call('up__hang', {});
      assert.equal(errorKind(r), 'timeout', JSON.stringify(r));
    }
    const fast = await agent.call('up__hang', {});
    assert.equal(errorKind(fast), 'breaker_open', JSON.stringify(fast));

    await gotoView(page, '#/breakers', 'Breakers');
    const tile = page.locator('li.tile', { has: page.locator('.name', { hasText: /^up__hang$/ }) });
    await tile.waitFor();
    await tile.getByText('Open', { exact: true }).waitFor();
    assert.match((await tile.getAttribute('class')) ?? '', /state-open/);
    await tile.getByText(/timed out/i).first().waitFor();

    await tile.getByRole('button', { name: 'Reset' }).click();
    await tile.getByText('Closed', { exact: true }).waitFor();
    assert.equal(await breakerState('up__hang'), 'closed');
    // Closed again for real: the call reaches the tool (and times out), not the breaker.
    const after = await agent.call('up__hang', {});
    assert.equal(errorKind(after), 'timeout', JSON.stringify(after));
  });

  test('the page logged no errors', () => {
    assert.deepEqual(errors, []);
  });
});
