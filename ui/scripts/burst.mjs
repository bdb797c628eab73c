// Streams 10,000 calls into the Live view (demo build, ?demo=burst) and
// reports whether every one arrived and how long frames took meanwhile.
// A smoke check for development; the real figures come from the
// end-to-end benchmark against `toolgate serve`.
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';

const PORT = 4180;
const preview = spawn(new URL('../node_modules/.bin/vite', import.meta.url).pathname, ['preview', '--mode', 'demo', '--outDir', 'dist-demo', '--port', String(PORT), '--strictPort', '--host', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
await new Promise((res) => preview.stdout.on('data', (d) => String(d).includes(String(PORT)) && res()));
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(`http://127.0.0.1:${PORT}/?demo=burst#/live`);
  await page.evaluate(() => {
    window.__frames = [];
    let last = performance.now();
    const tick = (t) => {
      window.__frames.push(t - last);
      last = t;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const t0 = Date.now();
  await page.getByText('10,500 kept of 100,000').waitFor({ timeout: 120_000 });
  const took = Date.now() - t0;
  const frames = (await page.evaluate(() => window.__frames)).slice(1).sort((a, b) => a - b);
  const q = (p) => frames[Math.min(frames.length - 1, Math.floor(p * frames.length))].toFixed(1);
  const rows = await page.locator('.trow').count();
  console.log(`all 10,000 calls shown after ${took} ms; frames: ${frames.length}, p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, p99 ${q(0.99)} ms, max ${frames.at(-1).toFixed(1)} ms; rows in the DOM: ${rows}`);
} finally {
  await browser.close();
  preview.kill();
}
