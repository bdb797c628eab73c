#!/usr/bin/env node
// @ts-check
// Console benchmark (not a test): against a real `toolgate serve` and
// Debian's chromium,
//
//   1. call → row: time from a call leaving the agent for the socket to its
//      row being in the Live view's DOM in the frame that paints it
//      (BENCH_CALLS sequential calls, default 500; p50/p99);
//   2. scrolling: requestAnimationFrame deltas while the Live list of
//      BENCH_ROWS rows (default 100,000) is scrolled top to bottom
//      (p50/p99, share of frames over 16.7 ms);
//   3. the UI bundle: ui/dist/assets/*.js, gzipped.
//
// Both clocks are the wall clock at millisecond precision or better: the
// agent stamps `performance.timeOrigin + performance.now()` in node, the page
// the same in chromium. Prints a table and writes bench/console/results.json.
//
//   npm --prefix ui run build && cargo build -p toolgate --bin toolgate
//   node bench/console/run.mjs
//
// Uses TOOLGATE_BIN / TOOLGATE_UI_DIR like the end-to-end tests.

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { Agent, callId } from '../../ui/e2e/lib/agent.mjs';
import { consolePage, gotoView, launch } from '../../ui/e2e/lib/browser.mjs';
import { REPO, Toolgate, missing } from '../../ui/e2e/lib/toolgate.mjs';
import { waitFor } from '../../ui/e2e/lib/wait.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);

const CONFIG = `
[policy]
preset = "default"

# Thousands of identical reads are a benchmark here, not a loop.
[pipeline.loop_guard]
warn_at = 1000000
block_at = 1000000
halt_at = 1000000
`;

/** @param {number[]} xs @param {number} p */
function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

const now = () => performance.timeOrigin + performance.now();

function bundle() {
  // The bundle the daemon served: --ui-dir's, else the one the binary embeds.
  const dir = join(process.env.TOOLGATE_UI_DIR ?? join(REPO, 'ui/dist'), 'assets');
  let raw = 0;
  let gz = 0;
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
    const b = readFileSync(join(dir, f));
    raw += b.length;
    gz += gzipSync(b, { level: 9 }).length;
  }
  return { js_bytes: raw, js_gzip_bytes: gz };
}

async function main() {
  const why = missing();
  if (why) throw new Error(why);
  const tg = await Toolgate.start({ config: CONFIG });
  writeFileSync(tg.rootPath('notes.txt'), 'release notes\n');
  const browser = await launch();
  try {
    const { page } = await consolePage(browser, tg);
    await gotoView(page, '#/live', 'Live calls');
    const grid = page.getByRole('grid', { name: 'Live calls' });

    // Stamps each call id the first time a row shows it.
    await page.evaluate(() => {
      /** @type {Record<string, number>} */
      const seen = {};
      Object.assign(window, { __seen: seen });
      const stamp = () => {
        const t = performance.timeOrigin + performance.now();
        for (const el of document.querySelectorAll('[data-call-id]')) {
          const id = /** @type {HTMLElement} */ (el).dataset.callId ?? '';
          if (!(id in seen)) seen[id] = t;
        }
      };
      new MutationObserver(stamp).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-call-id'] });
    });

    // 1. call → row, one call at a time.
    const agent = await Agent.connect(tg.socket, { name: 'bench' });
    /** @type {Map<number, number>} */
    const sent = new Map();
    for (let i = 0; i < CALLS; i++) {
      const t0 = now();
      const r = await agent.call('fs_read', { path: 'notes.txt' });
      const id = callId(r);
      if (typeof id !== 'number' || r.isError) throw new Error(`fs_read failed: ${JSON.stringify(r)}`);
      sent.set(id, t0);
      // Give the page the same pace a person's agent has: the next call
      // after this one's row is up (bounded).
      await page
        .waitForFunction((cid) => String(cid) in /** @type {any} */ (window).__seen, id, { timeout: 5_000 })
        .catch(() => {});
    }
    /** @type {Record<string, number>} */
    const seen = await page.evaluate(() => /** @type {any} */ (window).__seen);
    const lat = [];
    let missed = 0;
    for (const [id, t0] of sent) {
      const t1 = seen[String(id)];
      if (t1 === undefined) missed++;
      else lat.push(t1 - t0);
    }

    // 2. fill the feed to ROWS rows (16 in flight), then scroll it.
    const more = ROWS - CALLS;
    const fillers = await Promise.all([0, 1].map((i) => Agent.connect(tg.socket, { name: `filler-${i}` })));
    let next = 0;
    const t0 = now();
    await Promise.all(
      fillers.flatMap((a) =>
        Array.from({ length: 8 }, async () => {
          while (next < more) {
            next++;
            await a.call('fs_read', { path: 'notes.txt' }, 60_000);
          }
        }),
      ),
    );
    const fillS = (now() - t0) / 1000;
    let rows = 0;
    await waitFor('the feed to settle', async () => {
      const n = Number(await grid.getAttribute('aria-rowcount'));
      const same = n === rows;
      rows = n;
      return same && n > 0;
    }, { timeout: 60_000, interval: 500 });
    await page.getByRole('button', { name: /^Pause/ }).click();
    /** @type {number[]} */
    const frames = await page.evaluate(async () => {
      const sc = /** @type {HTMLElement} */ (document.querySelector('[role="grid"][aria-label="Live calls"]'));
      sc.scrollTop = 0;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      /** @type {number[]} */
      const deltas = [];
      const step = Math.max(1, Math.round(sc.scrollHeight / 600)); // top to bottom in ~600 frames
      return new Promise(/** @param {(d: number[]) => void} resolve */ (resolve) => {
        let last = performance.now();
        const tick = (/** @type {number} */ t) => {
          deltas.push(t - last);
          last = t;
          if (sc.scrollTop + sc.clientHeight >= sc.scrollHeight - 1 || deltas.length > 3000) resolve(deltas.slice(1));
          else {
            sc.scrollTop += step;
            requestAnimationFrame(tick);
          }
        };
        requestAnimationFrame(tick);
      });
    });

    const b = bundle();
    const results = {
      when: new Date().toISOString(),
      binary: tg.proc.spawnargs[0],
      call_to_row_ms: { calls: CALLS, measured: lat.length, missed, p50: pct(lat, 50), p99: pct(lat, 99), max: Math.max(...lat) },
      scroll: {
        rows_in_feed: rows,
        rows_sent: ROWS,
        fill_calls_per_s: Math.round(more / fillS),
        frames: frames.length,
        p50_ms: pct(frames, 50),
        p99_ms: pct(frames, 99),
        over_16_7_ms_pct: (100 * frames.filter((d) => d > 16.7).length) / Math.max(1, frames.length),
        // A 60 Hz frame is 16.67 ms and jitters around it; > 25 ms is a frame missed.
        missed_frame_pct: (100 * frames.filter((d) => d > 25).length) / Math.max(1, frames.length),
      },
      bundle: b,
    };
    writeFileSync(join(HERE, 'results.json'), JSON.stringify(results, null, 2) + '\n');
    const f = (/** @type {number} */ x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
    console.log(`
| measure                                   | value |
|-------------------------------------------|-------|
| call → row painted, p50 (${CALLS} calls)        | ${f(results.call_to_row_ms.p50)} ms |
| call → row painted, p99                   | ${f(results.call_to_row_ms.p99)} ms |
| calls whose row never showed              | ${missed} |
| rows in the feed (of ${ROWS} sent)          | ${rows} |
| scroll frame time, p50                    | ${f(results.scroll.p50_ms)} ms |
| scroll frame time, p99                    | ${f(results.scroll.p99_ms)} ms |
| frames over 16.7 ms                       | ${f(results.scroll.over_16_7_ms_pct)} % of ${frames.length} |
| frames over 25 ms (a frame missed)        | ${f(results.scroll.missed_frame_pct)} % |
| UI bundle JS, gzipped                     | ${(b.js_gzip_bytes / 1024).toFixed(1)} KiB (${(b.js_bytes / 1024).toFixed(1)} KiB raw) |
`);
    console.log(`results: ${join(HERE, 'results.json')}`);
  } finally {
    await browser.close();
    await tg.stop();
  }
}

await main();
