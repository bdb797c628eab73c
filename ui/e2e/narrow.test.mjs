// @ts-check
// A narrow window (760 px, the desktop app's 720 × 480 minimum, and 1100 px
// beside a pinned live feed): the Approvals list and detail stack instead of
// squeezing the detail; the tool name stays on one line; the header and
// every decision button are on screen and clickable; j/k and Enter still
// drive the list.

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { REPO, Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const OUT = process.env.SCREENSHOT_DIR ?? join(REPO, 'docs/screenshots');

const CONFIG = `
[policy]
preset = "default"
approval_timeout_s = 600
`;

/** Two waiting requests: `rm -rf` is critical under the default preset. */
const COMMANDS = ['rm -rf target/ build/', 'rm -rf node_modules/'];

describe('narrow window', { skip: skipUnlessReady(), timeout: 180_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {Agent} */ let agent;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    agent = await Agent.connect(tg.socket, { name: 'claude-code' });
    for (const command of COMMANDS) agent.start('shell_exec', { command });
    await waitFor('two pending approvals', async () => (await tg.cliJson(['approvals'])).length >= 2);
  });

  after(async () => {
    agent?.close();
    await browser?.close();
    await tg?.stop();
  });

  // 760: the window of the complaint; 720 × 480: the desktop app's
  // minimum; 1100: the narrowest window that still shows a pinned feed.
  for (const viewport of [
    { width: 760, height: 900 },
    { width: 720, height: 480 },
    { width: 1100, height: 800 },
  ]) {
    test(`Approvals at ${viewport.width} × ${viewport.height}, feed pinned: stacked, one-line tool name, every action reachable`, async () => {
      const { page, errors, context } = await consolePage(browser, tg, { viewport });
      try {
        // The pinned feed is what left a 150 px detail pane: pin it.
        await page.evaluate(() => localStorage.setItem('tg.feedPinned', '1'));
        await page.reload();
        await gotoView(page, '#/approvals', 'Approvals');
        const rows = page.locator('[aria-label="Waiting approval requests"] li.item[data-id]');
        await waitFor('both requests listed', async () => (await rows.count()) === 2);
        await rows.first().getByRole('button').click();
        const detail = page.getByRole('region', { name: 'Request detail' });
        await detail.getByText(/^Request #/).waitFor({ state: 'attached' });

        mkdirSync(OUT, { recursive: true });
        await page.screenshot({ path: join(OUT, `approvals-narrow-${viewport.width}x${viewport.height}.png`) });

        const heading = page.getByRole('heading', { level: 1, name: 'Approvals' });
        assertInside(await box(heading, 'the Approvals heading'), viewport, 'the Approvals heading');
        // The header's last control: nothing of the header is cut off.
        const keys = page.getByRole('button', { name: 'Keyboard shortcuts' });
        assertInside(await box(keys, 'the keyboard shortcuts button'), viewport, 'the keyboard shortcuts button');

        // The tool name: one line, in the list and in the detail.
        for (const [what, el] of /** @type {const} */ ([
          ['the detail', detail.locator('h2')],
          ['the list', rows.first().locator('.tool')],
        ])) {
          const m = await el.evaluate((e) => ({
            height: e.getBoundingClientRect().height,
            line: parseFloat(getComputedStyle(e).lineHeight) || parseFloat(getComputedStyle(e).fontSize) * 1.2,
            text: e.textContent,
            title: e.getAttribute('title'),
          }));
          assert.equal(m.text?.trim(), 'shell_exec');
          assert.ok(m.height < m.line * 1.5, `the tool name in ${what} is one line: ${m.height}px tall at a ${m.line}px line height`);
          assert.equal(m.title, 'shell_exec', `the tool name in ${what} has its full name as a title`);
        }

        // The detail: at least 600 px wide, or below the list.
        const list = await box(page.locator('.split > .pane').first(), 'the list pane');
        const d = await box(detail, 'the detail pane');
        assert.ok(
          d.width >= 600 || d.y >= list.y + list.height - 1,
          `the detail is ${Math.round(d.width)} px wide beside the list (x ${Math.round(list.x)}–${Math.round(list.x + list.width)}, detail at x ${Math.round(d.x)}, y ${Math.round(d.y)})`,
        );

        // Every decision: on screen whole, and nothing covers it.
        for (const name of [/^Approve once/, /^Approve & always/, /^Deny\b(?! &)/, /^Deny & always/]) {
          const btn = detail.getByRole('group', { name: 'Decide' }).getByRole('button', { name });
          assertInside(await box(btn, String(name)), viewport, `the ${name} button`);
          await btn.click({ trial: true, timeout: 5_000 });
        }

        // The keys still drive the list: j moves the selection, Enter goes to the actions.
        const first = await rows.first().getAttribute('data-id');
        await page.locator('body').focus();
        await page.keyboard.press('j');
        await waitFor('j selects the second request', async () => (await rows.nth(1).getAttribute('aria-selected')) === 'true');
        await page.keyboard.press('k');
        await waitFor('k goes back', async () => (await page.locator(`li.item[data-id="${first}"]`).getAttribute('aria-selected')) === 'true');
        await page.keyboard.press('Enter');
        await waitFor('Enter focuses a decision button', () =>
          page.evaluate(() => !!document.activeElement?.closest('[role="group"][aria-label="Decide"]')),
        );

        // Every view stays reachable from the rail.
        for (const name of ['Live calls', 'Breakers', 'Tools', 'Policy', 'Servers', 'Audit', 'Settings']) {
          assertInside(await box(page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name }), name), viewport, `the ${name} link`);
        }
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });
  }
});

/**
 * @param {import('playwright-core').Locator} loc
 * @param {string} what
 */
async function box(loc, what) {
  const b = await loc.boundingBox();
  assert.ok(b, `${what} is laid out`);
  return b;
}

/**
 * @param {{ x: number, y: number, width: number, height: number }} b
 * @param {{ width: number, height: number }} viewport
 * @param {string} what
 */
function assertInside(b, viewport, what) {
  const r = (/** @type {number} */ n) => Math.round(n);
  assert.ok(
    b.x >= 0 && b.y >= 0 && b.x + b.width <= viewport.width + 0.5 && b.y + b.height <= viewport.height + 0.5,
    `${what} is inside the ${viewport.width} × ${viewport.height} window: x ${r(b.x)}–${r(b.x + b.width)}, y ${r(b.y)}–${r(b.y + b.height)}`,
  );
}
