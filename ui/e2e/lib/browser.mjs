// @ts-check
// Debian's chromium driven by playwright-core, logged in to a toolgate
// console through its one-time link.

import { chromium } from 'playwright-core';
import { CHROMIUM } from './toolgate.mjs';

/**
 * Chromium's flags for these tests, chosen for the machine they run on:
 * - `--headless`, `--disable-gpu`: there is no display and no GPU;
 * - `--no-sandbox`: the tests run as root, and Chromium will not start its
 *   sandbox as root;
 * - `--disable-background-networking`, `--disable-component-update`,
 *   `--disable-sync`, `--disable-quic`: the machine's network is closed and
 *   refuses Chromium's own background connections (update checks, component
 *   downloads, sync, QUIC over UDP), which would only add failed requests
 *   and delays; the console on 127.0.0.1 is all a test talks to;
 * - `--no-first-run`: no first-run setup or dialogs.
 * playwright gives every launch a fresh, temporary profile directory of its
 * own (it refuses `--user-data-dir` in `args`).
 */
export const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/**
 * The page's errors but the failed requests Chromium logs while the engine
 * is away (stopped or restarting): the console retries until it is back.
 * @param {string[]} errors
 */
export function besidesEngineAway(errors) {
  const away = /ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|Failed to load resource/;
  return errors.filter((e) => !away.test(e));
}

/**
 * A page logged in to `tg`'s console (trading a fresh one-time link for the
 * session cookie), with the page's errors collected in `errors`.
 * @param {import('playwright-core').Browser} browser
 * @param {import('./toolgate.mjs').Toolgate} tg
 * @param {{ colorScheme?: 'light' | 'dark', url?: string, viewport?: { width: number, height: number } }} [opts]
 */
export async function consolePage(browser, tg, { colorScheme = 'light', url, viewport = { width: 1440, height: 900 } } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, deviceScaleFactor: 1 });
  const page = await context.newPage();
  /** @type {string[]} */
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
  });
  const login = url ?? (await tg.freshLoginUrl());
  const res = await page.goto(login);
  if (!res || !new URL(res.url()).pathname.startsWith('/')) throw new Error(`the login link went nowhere: ${login}`);
  const cookies = await context.cookies();
  if (!cookies.some((c) => c.name === 'tg_console')) {
    throw new Error(`the login link set no session cookie (landed on ${res.url()}, status ${res.status()})`);
  }
  return { context, page, errors };
}

/**
 * Goes to a view (hash route) and waits for its heading.
 * @param {import('playwright-core').Page} page
 * @param {string} hash e.g. `#/approvals`
 * @param {string} heading the view's h1
 */
export async function gotoView(page, hash, heading) {
  const deadline = Date.now() + 20_000;
  const h1 = page.getByRole('heading', { level: 1, name: heading });
  for (;;) {
    // Asked again while the view is not there: a console still starting
    // may land on its first view after this navigation was made.
    await page.evaluate((h) => {
      if (location.hash !== h) location.hash = h;
    }, hash);
    try {
      await h1.waitFor({ timeout: Math.max(1, Math.min(2_000, deadline - Date.now())) });
      return;
    } catch (e) {
      if (Date.now() < deadline) continue;
      const shows = (await page.locator('body').innerText().catch(() => '?')).replace(/\s+/g, ' ').slice(0, 400);
      throw new Error(`the ${heading} view did not come up within 20 s at ${page.url()}; the page shows: ${shows}`, { cause: e });
    }
  }
}
