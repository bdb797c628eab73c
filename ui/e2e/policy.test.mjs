// @ts-check
// An allowlist edit made in the Policy view (reviewed as a diff, then
// applied) takes the tool out of a connected agent's `tools/list` without a
// restart, and the agent is told the list changed.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Agent } from './lib/agent.mjs';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { Toolgate, skipUnlessReady } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const CONFIG = `# tools agents may see
allowed_tools = ["fs_*", "http_fetch", "shell_exec"] # keep this comment

[policy]
preset = "default"
`;

describe('policy', { skip: skipUnlessReady(), timeout: 120_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;
  /** @type {string[]} */ let errors;
  /** @type {Agent} */ let agent;

  before(async () => {
    tg = await Toolgate.start({ config: CONFIG });
    browser = await launch();
    ({ page, errors } = await consolePage(browser, tg));
    agent = await Agent.connect(tg.socket, { name: 'claude-desktop' });
  });

  after(async () => {
    agent?.close();
    await browser?.close();
    await tg?.stop();
  });

  test('5. removing a glob from the allowlist hides the tool without a restart', async () => {
    assert.ok((await agent.toolNames()).includes('http_fetch'));
    const pid = tg.proc.pid;
    const changed = new Promise((resolve) =>
      agent.onNotification((m) => m.method === 'notifications/tools/list_changed' && resolve(true)),
    );

    await gotoView(page, '#/policy', 'Policy');
    const allow = page.getByRole('list', { name: 'Allowlist' });
    await allow.getByRole('button', { name: 'Remove http_fetch' }).click();
    await page.getByRole('button', { name: 'Review changes' }).click();
    // The review shows the change as a diff before anything applies.
    await page.getByRole('dialog').locator('.d-del', { hasText: 'http_fetch' }).first().waitFor();
    assert.ok((await agent.toolNames()).includes('http_fetch'), 'nothing applies before the review is confirmed');
    await page.getByRole('button', { name: 'Apply and save' }).click();

    await waitFor('notifications/tools/list_changed', () => changed);
    await waitFor('http_fetch to leave tools/list', async () => !(await agent.toolNames()).includes('http_fetch'));
    const names = await agent.toolNames();
    assert.ok(names.includes('fs_read') && names.includes('shell_exec'), names.join(','));
    assert.equal(tg.proc.pid, pid);
    assert.equal(tg.exitCode, null, 'the daemon kept running');

    const saved = readFileSync(tg.configFile, 'utf8');
    assert.match(saved, /^allowed_tools = \["fs_\*", "shell_exec"\] # keep this comment$/m, saved);
    assert.match(saved, /^# tools agents may see$/m);
  });

  test('the page logged no errors', () => {
    assert.deepEqual(errors, []);
  });
});
