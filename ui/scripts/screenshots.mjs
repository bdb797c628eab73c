// Screenshots of every view, light and dark, from the demo build (dev aid;
// the real ones come from the end-to-end run against `toolgate serve`).
//
//   npm run build:demo && node scripts/screenshots.mjs [filter]
//
// Starts `vite preview` (which sends the engine's CSP), drives Debian's
// chromium with playwright-core, writes PNGs to ui/screenshots/, and fails
// if the page logged an error (a CSP violation shows up as one).
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const PORT = 4179;
const BASE = `http://127.0.0.1:${PORT}`;
const OUT = new URL('../screenshots/', import.meta.url).pathname;
const only = process.argv[2] ?? '';
mkdirSync(OUT, { recursive: true });

const preview = spawn(new URL('../node_modules/.bin/vite', import.meta.url).pathname, ['preview', '--mode', 'demo', '--outDir', 'dist-demo', '--port', String(PORT), '--strictPort', '--host', '127.0.0.1'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error('vite preview did not start in 20 s')), 20_000);
  preview.stdout.on('data', (d) => {
    if (String(d).includes(String(PORT))) {
      clearTimeout(t);
      resolve();
    }
  });
});

const shots = [
  { name: 'approvals', url: '/?demo=static#/approvals' },
  { name: 'approvals-deny', url: '/?demo=static#/approvals', act: async (p) => { await p.waitForTimeout(600); await p.keyboard.press('d'); } },
  { name: 'approvals-always', url: '/?demo=static#/approvals', act: async (p) => { await p.waitForTimeout(600); await p.keyboard.press('s'); await p.waitForTimeout(700); } },
  { name: 'approvals-ended', url: '/?demo=static#/approvals?id=40' },
  { name: 'approvals-empty', url: '/?demo=empty#/approvals' },
  { name: 'approvals-reduced-motion', url: '/?demo=static#/approvals', before: async (p) => p.emulateMedia({ reducedMotion: 'reduce' }) },
  { name: 'live', url: '/?demo=static#/live' },
  { name: 'live-detail', url: '/?demo=static#/live', act: async (p) => { await p.locator('.trow').nth(-3).click(); await p.waitForTimeout(700); } },
  { name: 'live-seen', url: '/?demo=static#/live', act: async (p) => { await p.locator('.trow').nth(-5).click(); await p.waitForTimeout(600); await p.keyboard.press('r'); } },
  { name: 'live-empty', url: '/?demo=empty#/live' },
  { name: 'live-running', url: '/?demo=live#/live', act: async (p) => { await p.waitForTimeout(1500); await p.keyboard.press(' '); await p.waitForTimeout(2500); } },
  { name: 'breakers', url: '/?demo=static#/breakers' },
  { name: 'tools', url: '/?demo=static#/tools?name=shell_exec' },
  { name: 'tools-quarantined', url: '/?demo=static#/tools?name=web__fetch_page' },
  { name: 'policy', url: '/?demo=static#/policy' },
  { name: 'policy-review', url: '/?demo=static#/policy', act: async (p) => { await p.getByLabel('Add to Denylist').fill('slack__*'); await p.keyboard.press('Enter'); await p.getByRole('button', { name: 'Review changes' }).click(); await p.waitForTimeout(700); } },
  { name: 'servers', url: '/?demo=static#/servers', act: async (p) => { await p.getByRole('button', { name: 'Show stderr' }).first().click(); await p.waitForTimeout(800); } },
  { name: 'audit', url: '/?demo=static#/audit' },
  { name: 'settings', url: '/?demo=static#/settings?tab=connect' },
  { name: 'settings-about', url: '/?demo=static#/settings?tab=about' },
  // Inside the desktop window: a stand-in for Tauri's __TAURI_INTERNALS__ (set before the page's own script).
  { name: 'settings-desktop', url: '/?demo=static#/settings?tab=desktop', before: (p) => p.addInitScript(fakeTauri, { refuse: null }) },
  {
    name: 'settings-desktop-refused',
    url: '/?demo=static#/settings?tab=desktop',
    before: (p) => p.addInitScript(fakeTauri, { refuse: 'could not register the login item: org.freedesktop.portal.Background is not available' }),
    act: async (p) => { await p.getByRole('switch', { name: 'Start at login' }).click(); await p.waitForTimeout(300); },
  },
  { name: 'tools-denied', url: '/?demo=static#/tools?name=desktop__execute_command' },
  { name: 'audit-detail', url: '/?demo=static#/audit', act: async (p) => { await p.locator('.trow').nth(2).click(); await p.waitForTimeout(800); } },
  {
    name: 'policy-test',
    url: '/?demo=static#/policy',
    act: async (p) => { await p.getByLabel('Tool', { exact: true }).fill('shell_exec'); await p.getByRole('button', { name: 'Test' }).click(); await p.waitForTimeout(600); await p.locator('.result').scrollIntoViewIfNeeded(); },
  },
  { name: 'pinned-feed', url: '/?demo=static#/breakers', act: async (p) => { await p.getByRole('button', { name: 'Pin feed' }).click(); await p.waitForTimeout(400); } },
  { name: 'shortcuts', url: '/?demo=static#/approvals', act: async (p) => { await p.waitForTimeout(400); await p.keyboard.press('Shift+?'); } },
  { name: 'down', url: '/?demo=down#/approvals', wait: 1800 },
  { name: 'loading', url: '/?demo=loading#/live', wait: 600 },
  { name: 'reloaded', url: '/?demo=reloaded#/approvals', wait: 1200 },
];

/** Runs in the page before its scripts: what Tauri injects in the desktop window, answering the two settings commands. */
function fakeTauri({ refuse }) {
  const state = { notifications: true, start_at_login: false };
  window.__TAURI_INTERNALS__ = {
    invoke: async (cmd, args) => {
      await new Promise((r) => setTimeout(r, 60));
      if (cmd === 'get_desktop_settings') return { ...state };
      if (cmd === 'set_desktop_settings') {
        if (refuse) throw refuse;
        Object.assign(state, args.patch);
        return { ...state };
      }
      throw `unknown command ${cmd}`;
    },
  };
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const problems = [];
try {
  for (const scheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: scheme, deviceScaleFactor: 1 });
    for (const s of shots) {
      if (only && !s.name.includes(only)) continue;
      const page = await ctx.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${s.name}/${scheme}: ${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`${s.name}/${scheme}: pageerror: ${e.message}`));
      if (s.before) await s.before(page);
      await page.goto(BASE + s.url);
      await page.waitForTimeout(s.wait ?? 900);
      if (s.act) await s.act(page);
      await page.waitForTimeout(300);
      await page.screenshot({ path: `${OUT}${s.name}-${scheme}.png` });
      await page.close();
    }
    await ctx.close();
  }
} finally {
  await browser.close();
  preview.kill();
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exitCode = 1;
} else {
  console.log(`screenshots written to ${OUT}`);
}
