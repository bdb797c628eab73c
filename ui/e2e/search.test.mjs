// @ts-check
// Tool search and progressive disclosure in the Tools view, against a real
// engine: a gate-mode agent registers six tools (agent-sourced, so
// deferrable), `claude-code` is configured to defer them. The console ranks
// a described task with the engine's index and highlights the matched
// words, marks each deferred tool with the client it is deferred for, and
// shows each client's plan; switching claude-code to Off there makes the
// engine tell it (`list_changed`) and list every tool.
// Pinning a deferred tool as core from its detail lists it to claude-code
// (`list_changed`), and its panel counts it; `p` unpins it.
// Screenshots: docs/screenshots/tools-search-<theme>[-760].png (a query, a
// tool open), tools-agents-<theme>[-760].png (the client panel, names
// shown) and tools-pin-<theme>.png (a tool pinned as core); tools-agents-none.png (no agent yet) and tools-agents-chosen.png
// (a mode chosen here) in SEARCH_SHOTS (default /tmp), for review.

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Agent } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { REPO, Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const OUT = process.env.SCREENSHOT_DIR ?? join(REPO, 'docs/screenshots');
/** The panel after a switch, for review (not documentation). */
const SHOTS = process.env.SEARCH_SHOTS ?? '/tmp';

const CONFIG = `
[search]
mode = "off"

[search.clients.claude-code]
mode = "on"
`;

/** @param {string} name @param {string} description @param {Record<string, string>} props */
const tool = (name, description, props) => ({
  name,
  description,
  risk: 'low',
  inputSchema: {
    type: 'object',
    properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, { type: 'string', description: d }])),
    required: Object.keys(props),
  },
});

/** The helpdesk agent's tools, each about something else. */
const TOOLS = [
  tool('create_issue', 'Open a new issue in the project tracker.', { title: 'one-line title', body: 'what happened, in detail' }),
  tool('search_issues', 'Search existing issues and pull requests by keyword.', { query: 'keywords' }),
  tool('send_email', 'Send an email message to one recipient.', { to: 'address', subject: 'subject line', text: 'message body' }),
  tool('query_database', 'Run a read-only SQL query against the analytics warehouse.', { sql: 'a SELECT statement' }),
  tool('deploy_service', 'Deploy a service build to the staging cluster.', { service: 'service name', version: 'build version' }),
  tool('translate_text', 'Translate text between two languages.', { text: 'text to translate', target: 'language code' }),
];
const NAMES = TOOLS.map((t) => t.name);
const BRIDGE = ['tool_search', 'tool_describe', 'tool_call'];
const QUERY = 'open a bug report';

describe('tool search', { skip: skipUnlessReady(), timeout: 240_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {Agent} */ let host;
  /** @type {Agent} */ let claude;
  /** The built-in tools, as an agent that defers nothing is listed them. */
  /** @type {string[]} */ let builtins = [];

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    mkdirSync(OUT, { recursive: true });
    browser = await launch();
  });

  after(async () => {
    claude?.close();
    host?.close();
    await browser?.close();
    await tg?.stop();
  });

  test('with no agent connected, the panel says they appear once they connect, and where to connect one', async () => {
    const { page, errors, context } = await consolePage(browser, tg);
    try {
      await gotoView(page, '#/tools', 'Tools');
      const panel = page.getByRole('region', { name: 'What each agent sees' });
      await panel.getByRole('heading', { name: 'No agent connected' }).waitFor();
      await panel.getByText(/^Agents appear here once they connect/).waitFor();
      assert.equal(await panel.getByRole('link', { name: 'Connect an agent' }).getAttribute('href'), '#/settings?tab=connect');
      assert.match(await page.getByRole('button', { name: /^What each agent sees/ }).innerText(), /no agent connected/);
      await settle(page);
      await panel.screenshot({ path: join(SHOTS, 'tools-agents-none.png') });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('agents connect: a gate-mode agent registers six tools', async () => {
    host = await Agent.connect(tg.socket, { name: 'praisonai-agent' });
    builtins = await host.toolNames();
    const reg = await host.request('toolgate/register', { agentId: 'helpdesk', tools: TOOLS });
    assert.deepEqual(reg.result?.registered, NAMES, JSON.stringify(reg));
    claude = await Agent.connect(tg.socket, { name: 'claude-code' });
  });

  test("claude-code is listed the core tools and the bridge, the other agent every tool", async () => {
    const listed = await claude.toolNames();
    assert.deepEqual([...listed].sort(), [...builtins, ...BRIDGE].sort());
    for (const n of NAMES) assert.ok(!listed.includes(n), `${n} is deferred for claude-code`);
    const all = await host.toolNames();
    for (const n of NAMES) assert.ok(all.includes(n), `${n} is listed to praisonai-agent (search off)`);
    assert.ok(!all.includes('tool_search'));
  });

  test('a described task is ranked by the engine, its words highlighted; the row says for whom it is deferred', async () => {
    const { page, errors, context } = await consolePage(browser, tg);
    try {
      await gotoView(page, '#/tools', 'Tools');
      const createRow = page.locator('li.trow-t[data-tool="create_issue"]');
      await createRow.waitFor();
      await createRow.getByText('Deferred for claude-code', { exact: true }).waitFor();
      assert.equal(await page.locator('li.trow-t[data-tool="fs_read"]').getByText(/Deferred for/).count(), 0, 'a built-in is never deferred');

      await page.getByRole('searchbox', { name: 'Search tools' }).fill(QUERY);
      const first = page.locator('li.trow-t').first();
      await waitFor('create_issue ranked first, its matched words marked', async () => {
        return (await first.getAttribute('data-tool')) === 'create_issue' && (await first.locator('mark').count()) > 0;
      });

      // The engine's ranking and runs, as the console was given them.
      /** @type {{ tool: { name: string }, name: { text: string, hit: boolean }[], summary: { text: string, hit: boolean }[] }[]} */
      const matches = await page.evaluate(async (q) => (await fetch(`/api/tools/search?q=${encodeURIComponent(q)}`)).json(), QUERY);
      assert.equal(matches[0]?.tool.name, 'create_issue');
      const hitWords = [...(matches[0]?.name ?? []), ...(matches[0]?.summary ?? [])].filter((r) => r.hit).map((r) => r.text);
      assert.ok(hitWords.length > 0, 'the engine marked words in create_issue');
      const marked = await first.locator('mark').allTextContents();
      assert.deepEqual(marked, hitWords, 'the row highlights exactly the engine\'s matched words');
      assert.ok(marked.some((w) => /issue/i.test(w)), `"bug" reaches issue: ${marked.join(', ')}`);
      assert.ok(marked.some((w) => /^open$/i.test(w)), `"open" is matched: ${marked.join(', ')}`);

      // The list keeps the engine's order.
      const order = await page.locator('li.trow-t').evaluateAll((els) =>
        els
          .map((e) => ({ y: new DOMMatrix(getComputedStyle(e).transform).m42, name: e.getAttribute('data-tool') }))
          .sort((a, b) => a.y - b.y)
          .map((e) => e.name),
      );
      assert.deepEqual(order, matches.map((m) => m.tool.name).slice(0, order.length));
      await first.getByText('Deferred for claude-code', { exact: true }).waitFor();

      // The keys walk the ranked list, in its order; / comes back to the box.
      await page.evaluate(() => /** @type {HTMLElement} */ (document.activeElement)?.blur());
      const selected = () => page.locator('li.trow-t[aria-selected="true"]').getAttribute('data-tool');
      await page.keyboard.press('j');
      await waitFor('j to select the best match', async () => (await selected()) === matches[0]?.tool.name);
      await page.keyboard.press('j');
      await waitFor('j to select the second', async () => (await selected()) === matches[1]?.tool.name);
      await page.keyboard.press('k');
      await waitFor('k to go back', async () => (await selected()) === 'create_issue');
      await page.keyboard.press('/');
      await waitFor('/ to focus the search box', () => page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Search tools'));

      // The detail names the client in a sentence.
      await first.getByRole('button').click();
      const note = page.locator('[data-deferred-note]');
      await note.waitFor();
      assert.match(await note.innerText(), /claude-code does not see this tool in its tools list/);

      // A facet narrows the ranked list without reordering it.
      await page.getByRole('combobox', { name: 'Source' }).selectOption('builtin');
      await waitFor('no agent tool left', async () => (await page.locator('li.trow-t[data-tool="create_issue"]').count()) === 0);
      await page.getByRole('combobox', { name: 'Source' }).selectOption('');
      await page.locator('li.trow-t[data-tool="create_issue"]').waitFor();

      // Emptied: the whole list again, nothing marked.
      await page.getByRole('searchbox', { name: 'Search tools' }).fill('');
      await waitFor('the whole list, unmarked', async () => (await page.locator('li.trow-t mark').count()) === 0 && (await page.locator('li.trow-t').count()) > NAMES.length);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  for (const width of [1440, 760]) {
    for (const colorScheme of /** @type {const} */ (['light', 'dark'])) {
      test(`screenshots, ${colorScheme}, ${width} px`, async () => {
        const { page, errors, context } = await consolePage(browser, tg, { colorScheme, viewport: { width, height: 900 } });
        const suffix = width === 1440 ? '' : '-760';
        try {
          await gotoView(page, `#/tools?q=${encodeURIComponent(QUERY)}&name=create_issue`, 'Tools');
          const first = page.locator('li.trow-t').first();
          await waitFor('the ranked list', async () => (await first.getAttribute('data-tool')) === 'create_issue' && (await first.locator('mark').count()) > 0);
          await page.locator('[data-deferred-note]').waitFor();
          await settle(page);
          await page.screenshot({ path: join(OUT, `tools-search-${colorScheme}${suffix}.png`) });

          // Open in a wide window; folded to its summary line in a narrow one, where it would push the list away.
          const fold = page.getByRole('button', { name: /^What each agent sees/ });
          assert.equal(await fold.getAttribute('aria-expanded'), width === 1440 ? 'true' : 'false');
          assert.match(await fold.innerText(), /2 agents connected · tools deferred for 1/);
          if (width !== 1440) await fold.click();
          const card = page.locator('[data-client="claude-code"]');
          await card.getByRole('button', { name: 'Show tool names' }).click();
          const deferred = card.getByRole('region', { name: 'Deferred for claude-code' });
          await deferred.getByText('create_issue').waitFor();
          await settle(page);
          await page.getByRole('region', { name: 'What each agent sees' }).screenshot({ path: join(OUT, `tools-agents-${colorScheme}${suffix}.png`) });
          assert.deepEqual(errors, []);
        } finally {
          await context.close();
        }
      });
    }
  }

  test("the client panel shows the engine's plan; Off there lists claude-code every tool", async () => {
    const { page, errors, context } = await consolePage(browser, tg);
    try {
      await gotoView(page, '#/tools', 'Tools');
      const card = page.locator('[data-client="claude-code"]');
      await card.waitFor();
      /** @type {{ clients: { client: string, words: string, listed: string[], deferred: string[] }[] }} */
      const slice = await page.evaluate(async () => (await fetch('/api/state/tools')).json());
      const plan = slice.clients.find((c) => c.client === 'claude-code');
      assert.ok(plan, 'the engine has a plan for claude-code');
      assert.deepEqual([...plan.deferred].sort(), [...NAMES].sort());
      await card.getByText(plan.words, { exact: true }).waitFor();
      assert.match(plan.words, /^Deferral is on: 6 tools are behind tool_search/);
      const group = card.getByRole('group', { name: 'Deferral for claude-code' });
      assert.equal(await group.getByRole('button', { name: 'On' }).getAttribute('aria-pressed'), 'true');
      assert.equal(await card.getByRole('button', { name: 'Follow config' }).count(), 0, 'nothing chosen here yet');
      await page.locator('[data-client="praisonai-agent"]').getByText('Deferral is off', { exact: false }).waitFor();

      const changed = () => claude.notifications.filter((m) => m.method === 'notifications/tools/list_changed').length;
      const before = changed();
      await group.getByRole('button', { name: 'Off' }).click();
      await waitFor('claude-code told its list changed', () => changed() > before);
      const listed = await claude.toolNames();
      for (const n of NAMES) assert.ok(listed.includes(n), `${n} listed to claude-code once deferral is off`);
      assert.ok(!listed.includes('tool_search'), 'no bridge when nothing is deferred');

      await waitFor('the switch showing Off', async () => (await group.getByRole('button', { name: 'Off' }).getAttribute('aria-pressed')) === 'true');
      await card.getByRole('button', { name: 'Follow config' }).waitFor();
      await card.getByText('Chosen here, over the config').waitFor();
      await card.getByText(/^Deferral is off: /).waitFor();
      await waitFor('no row deferred any more', async () => (await page.getByText('Deferred for claude-code').count()) === 0);
      await settle(page);
      await page.getByRole('region', { name: 'What each agent sees' }).screenshot({ path: join(SHOTS, 'tools-agents-chosen.png') });

      // Back to the config: deferred again, and told so.
      const again = changed();
      await card.getByRole('button', { name: 'Follow config' }).click();
      await waitFor('claude-code told again', () => changed() > again);
      assert.ok((await claude.toolNames()).includes('tool_search'));
      await waitFor('the switch back on On, from the config', async () => (await group.getByRole('button', { name: 'On' }).getAttribute('aria-pressed')) === 'true');
      await card.getByText('From the config', { exact: true }).waitFor();
      assert.equal(await card.getByRole('button', { name: 'Follow config' }).count(), 0);
      await page.locator('li.trow-t[data-tool="create_issue"]').getByText('Deferred for claude-code').waitFor();
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('Pin as core from the tool detail: claude-code hears list_changed and is listed the tool; its panel counts it; p unpins', async () => {
    const { page, errors, context } = await consolePage(browser, tg);
    try {
      await gotoView(page, '#/tools?name=create_issue', 'Tools');
      const card = page.locator('[data-client="claude-code"]');
      await card.waitFor();
      const listedCount = () => card.locator('dd').first().innerText();
      const plan = async () => {
        /** @type {{ clients: { client: string, listed: string[] }[] }} */
        const slice = await page.evaluate(async () => (await fetch('/api/state/tools')).json());
        return slice.clients.find((c) => c.client === 'claude-code');
      };
      const before = (await plan())?.listed.length ?? 0;
      await waitFor('the card counting what claude-code is listed', async () => (await listedCount()).startsWith(`${before} tools`));
      const row = page.locator('li.trow-t[data-tool="create_issue"]');
      await row.getByText('Deferred for claude-code', { exact: true }).waitFor();

      const changed = () => claude.notifications.filter((m) => m.method === 'notifications/tools/list_changed').length;
      const told = changed();
      const pin = page.getByRole('button', { name: /^Pin as core/ });
      await pin.waitFor();
      await settle(page);
      await page.locator('section[aria-label="Tool detail"]').screenshot({ path: join(SHOTS, 'tools-pin-offered.png') });
      await pin.click();
      await waitFor('claude-code told its list changed', () => changed() > told);
      const listed = await claude.toolNames();
      assert.ok(listed.includes('create_issue'), 'listed directly once pinned');
      assert.ok(listed.includes('tool_search'), 'the other five stay behind the bridge');

      // The detail and the row say so, in the engine's words.
      /** @type {{ summary: { core: { words: string, reason: { kind: string } } | null } }} */
      const detail = await page.evaluate(async () => (await fetch('/api/tools/create_issue')).json());
      assert.equal(detail.summary.core?.reason.kind, 'pinned');
      await page.locator('[data-core-note]').getByText(detail.summary.core?.words ?? '?', { exact: true }).waitFor();
      await page.locator('[data-core-pill]').getByText('Core · pinned', { exact: true }).waitFor();
      await row.getByText('Core · pinned', { exact: true }).waitFor();
      assert.equal(await row.getByText('Deferred for claude-code').count(), 0, 'a core tool is deferred for nobody');
      await waitFor('the card counting one more tool listed', async () => (await listedCount()).startsWith(`${before + 1} tools`));
      await card.getByText(/core tools \(1 pinned by a person\) are listed with the bridge tools\.$/).waitFor();
      await page.getByRole('button', { name: /^Unpin/ }).waitFor();
      await settle(page);
      await page.screenshot({ path: join(OUT, 'tools-pin-light.png') });

      // p, with focus on the page, takes the pin back.
      await page.evaluate(() => /** @type {HTMLElement} */ (document.activeElement)?.blur());
      const again = changed();
      await page.keyboard.press('p');
      await waitFor('claude-code told again', () => changed() > again);
      assert.ok(!(await claude.toolNames()).includes('create_issue'), 'behind the bridge again');
      await page.getByRole('button', { name: /^Pin as core/ }).waitFor();
      assert.equal(await page.locator('[data-core-note]').count(), 0);
      await row.getByText('Deferred for claude-code', { exact: true }).waitFor();
      await waitFor('the card counting as before', async () => (await listedCount()).startsWith(`${before} tools`));
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  test('screenshot of a pinned tool, dark', async () => {
    // Pinned from the CLI this time, through the running engine.
    const r = await tg.cliJson(['tools', '--pin-core', 'create_issue']);
    assert.equal(r.pinned, true, JSON.stringify(r));
    assert.equal(r.summary?.core?.reason.kind, 'pinned', JSON.stringify(r));
    const { page, errors, context } = await consolePage(browser, tg, { colorScheme: 'dark' });
    try {
      await gotoView(page, '#/tools?name=create_issue', 'Tools');
      await page.locator('[data-core-pill]').getByText('Core · pinned', { exact: true }).waitFor();
      await page.locator('[data-client="claude-code"]').waitFor();
      await settle(page);
      await page.screenshot({ path: join(OUT, 'tools-pin-dark.png') });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      const off = await tg.cli(['tools', '--unpin-core', 'create_issue']);
      assert.match(off.stdout, /^create_issue is no longer pinned as core\./, off.stdout + off.stderr);
    }
  });
});

/** Fonts loaded, two frames drawn, no hover left over. @param {import('playwright-core').Page} page */
async function settle(page) {
  await page.mouse.move(0, 0);
  await page.evaluate(async () => {
    await document.fonts.ready;
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(undefined))));
  });
}
