// @ts-check
// A login link works once. A reused link, a made-up one, or a browser
// without a session shows a clear message saying how to get a fresh link,
// and sets no cookie.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { consolePage, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';

describe('login links', { skip: skipUnlessReady(), timeout: 60_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;

  before(async () => {
    tg = await Toolgate.start();
    browser = await launch();
  });

  after(async () => {
    await browser?.close();
    await tg?.stop();
  });

  test('9a. a minted link logs in once; used again it says it was used or expired', async () => {
    const { context } = await consolePage(browser, tg, { url: tg.loginUrl });
    await context.close();

    const again = await browser.newContext();
    const page = await again.newPage();
    const res = await page.goto(tg.loginUrl);
    assert.equal(res?.status(), 401);
    await page.getByRole('heading', { name: 'This link was already used or expired.' }).waitFor();
    await page.getByText('toolgate console').waitFor();
    assert.deepEqual((await again.cookies()).filter((c) => c.name === 'tg_console'), []);

    const made = await page.goto(`${tg.origin}/login?t=${'ab'.repeat(32)}`);
    assert.equal(made?.status(), 401);
    await page.getByRole('heading', { name: 'This link was already used or expired.' }).waitFor();
    await again.close();
  });

  test('9b. the console without a session says how to get a fresh link', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`${tg.origin}/#/approvals`);
    await page.getByText(/toolgate console/).first().waitFor({ timeout: 15_000 });
    const body = await page.locator('body').innerText();
    assert.match(body, /not signed in/i, body.slice(0, 800));
    assert.match(body, /sign in to the console/i, body.slice(0, 800));
    // The engine is up and answering 401: the page must not claim it is unreachable.
    assert.doesNotMatch(body, /can.t reach the toolgate engine|waiting for the toolgate engine|offline/i, body.slice(0, 800));
    await ctx.close();
  });
});
