// @ts-check
// The live feed follows 10,000 calls without losing one. The list is
// virtualised (only the rows in view are in the DOM), so the test sweeps it
// from top to bottom and collects every row's `data-call-id`, then compares
// them with the call ids the agents got.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Agent, callId } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const CALLS = 10_000;
const AGENTS = 4;
const IN_FLIGHT = 16; // per agent

// The loop guard would (rightly) stop an agent reading one file 2,500
// times; its counts saturate at 256, so these thresholds are never met.
const CONFIG = `
[policy]
preset = "default"

[pipeline.loop_guard]
warn_at = 1000000
block_at = 1000000
halt_at = 1000000
`;

/**
 * Runs `n` fs_read calls on `agent`, `IN_FLIGHT` at a time; returns their call ids.
 * @param {Agent} agent
 * @param {number} n
 */
async function burst(agent, n) {
  /** @type {number[]} */
  const ids = [];
  let next = 0;
  async function worker() {
    while (next < n) {
      next++;
      const r = await agent.call('fs_read', { path: 'notes.txt' }, 60_000);
      if (r.isError) throw new Error(`fs_read failed: ${JSON.stringify(r)}`);
      const id = callId(r);
      if (typeof id !== 'number') throw new Error(`no toolgate/callId in ${JSON.stringify(r._meta)}`);
      ids.push(id);
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return ids;
}

describe('live feed', { skip: skipUnlessReady(), timeout: 600_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    writeFileSync(tg.rootPath('notes.txt'), 'release notes: nothing yet\n');
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    await gotoView(page, '#/live', 'Live calls');
  });

  after(async () => {
    await browser?.close();
    await tg?.stop();
  });

  test('7. 10,000 calls, every one in the feed', async () => {
    const agents = await Promise.all(Array.from({ length: AGENTS }, (_, i) => Agent.connect(tg.socket, { name: `agent-${i}` })));
    const per = CALLS / AGENTS;
    const ids = (await Promise.all(agents.map((a) => burst(a, per)))).flat();
    for (const a of agents) a.close();
    assert.equal(new Set(ids).size, CALLS);

    const grid = page.getByRole('grid', { name: 'Live calls' });
    await waitFor(
      `the feed to hold ${CALLS} rows`,
      async () => {
        const n = Number(await grid.getAttribute('aria-rowcount'));
        if (n >= CALLS) return true;
        const lag = tg.stderr.split('\n').filter((l) => /fell \d+ events behind/.test(l));
        throw new Error(
          `aria-rowcount ${n}; feed: ${(await page.locator('.feed .status').innerText()).replace(/\s+/g, ' ')}; ` +
            `banners: ${await page.locator('.banner').allInnerTexts()}; the daemon said ${lag.length} times that its console stream fell behind` +
            (lag[0] ? ` (first: ${lag[0].replace(/^.*WARN /, '')})` : ''),
        );
      },
      { timeout: 30_000 },
    );
    // Hold the list still, then sweep it.
    await page.getByRole('button', { name: /^Pause/ }).click();
    const seen = await page.evaluate(async () => {
      const sc = /** @type {HTMLElement} */ (document.querySelector('[role="grid"][aria-label="Live calls"]'));
      const frame = () => new Promise((r) => requestAnimationFrame(() => r(undefined)));
      /** @type {Set<number>} */
      const found = new Set();
      sc.scrollTop = 0;
      await frame();
      await frame();
      for (let guard = 0; guard < 100_000; guard++) {
        for (const el of sc.querySelectorAll('[data-call-id]')) found.add(Number(/** @type {HTMLElement} */ (el).dataset.callId));
        if (sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 1) break;
        sc.scrollTop += Math.max(1, Math.floor(sc.clientHeight * 0.75));
        await frame();
        await frame();
      }
      return [...found];
    });
    const shown = new Set(seen);
    const lost = ids.filter((id) => !shown.has(id));
    assert.equal(lost.length, 0, `${lost.length} calls never showed in the feed, e.g. ${lost.slice(0, 10).join(', ')}`);
  });

  test('the page logged no errors', () => {
    assert.deepEqual(errors, []);
  });
});
