// @ts-check
// A coding agent's own tool, gated through its hook: Claude Code's
// documented PreToolUse payload for a risky Bash command is fed to the
// real `toolgate hook run claude-code`; the hook waits, the request shows
// in the console as "Claude Code · Bash" from Claude Code, a person
// approves it in the browser, and the hook prints Claude Code's allow.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { consolePage, gotoView, launch } from './lib/browser.mjs';
import { REPO, Toolgate, skipUnlessReady, toolgateBin } from './lib/toolgate.mjs';
import { waitFor } from './lib/wait.mjs';

const SHOTS = process.env.SCREENSHOT_DIR ?? join(REPO, 'docs/screenshots');

/**
 * Runs `toolgate hook run claude-code` as Claude Code does: the payload on
 * stdin, the project as working directory.
 * @param {Toolgate} tg
 * @param {object} payload
 */
function startHook(tg, payload) {
  const child = spawn(toolgateBin(), ['--config', tg.configFile, '--data-dir', tg.dataDir, 'hook', 'run', 'claude-code'], {
    env: tg.env,
    cwd: tg.root,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  /** @type {number | null} */
  let code = null;
  const done = new Promise((resolve) => child.on('exit', (c) => { code = c; resolve(null); }));
  child.stdin.end(JSON.stringify(payload));
  return {
    done,
    get exited() { return code !== null; },
    get out() { return { code, stdout, stderr }; },
  };
}

describe('hooks', { skip: skipUnlessReady(), timeout: 120_000 }, () => {
  /** @type {Toolgate} */ let tg;
  /** @type {import('playwright-core').Browser} */ let browser;
  /** @type {import('playwright-core').Page} */ let page;

  before(async () => {
    tg = await Toolgate.start({ config: '' });
    browser = await launch();
    ({ page } = await consolePage(browser, tg));
    await gotoView(page, '#/approvals', 'Approvals');
  });

  after(async () => {
    await browser?.close();
    await tg?.stop();
  });

  test('a risky Bash call waits, shows as "Claude Code · Bash", and is approved in the browser', async () => {
    const payload = JSON.parse(readFileSync(join(REPO, 'tests/fixtures/hooks/claude-code/pre_tool_use_bash.json'), 'utf8'));
    payload.cwd = tg.root;
    payload.tool_input.command = 'rm -rf build';
    const hook = startHook(tg, payload);

    const id = await waitFor('the hooked call waiting in `toolgate approvals`', async () => {
      /** @type {{ id: number, tool: string }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.tool === 'Claude Code · Bash')?.id;
    });
    const row = page.locator(`li.item[data-id="${id}"]`);
    await row.waitFor();
    assert.equal((await row.locator('.tool').textContent())?.trim(), 'Claude Code · Bash');
    assert.match((await row.locator('.line2').textContent()) ?? '', /Claude Code/, 'the caller reads as the agent');
    await row.getByRole('button').first().click();
    const detail = page.getByRole('region', { name: 'Request detail' });
    await detail.getByText(`Request #${id}`).waitFor();
    await detail.getByRole('heading', { name: 'Claude Code · Bash' }).waitFor();
    await detail.getByText('rm -rf build').first().waitFor();
    assert.equal(hook.exited, false, 'the hook waits while the person decides');
    await page.screenshot({ path: `${SHOTS}/hooks-approval-light.png` });

    const approve = page.getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve once/ });
    // Approve is ignored for 400 ms after a request arrives or the
    // selection changes: click until the engine has the decision.
    await waitFor('a click on Approve once to approve the hooked call', async () => {
      if (hook.exited) return true;
      /** @type {{ id: number }[]} */
      const list = await tg.cliJson(['approvals']);
      if (!list.some((r) => r.id === id)) return true;
      await approve.click();
      return false;
    }, { interval: 250 });
    await waitFor('the hook to answer', async () => hook.exited);
    const { code, stdout } = hook.out;
    assert.equal(code, 0, JSON.stringify(hook.out));
    const answer = JSON.parse(stdout);
    assert.equal(answer.hookSpecificOutput.hookEventName, 'PreToolUse');
    assert.equal(answer.hookSpecificOutput.permissionDecision, 'allow', stdout);
    await row.getByText('Approved', { exact: true }).waitFor();
  });

  test('"Approve & always…" offers the command\'s shape, and the rule lets the next hooked call through', async () => {
    /** @param {string} command @param {string} id */
    const bash = (command, id) => {
      const payload = JSON.parse(readFileSync(join(REPO, 'tests/fixtures/hooks/claude-code/pre_tool_use_bash.json'), 'utf8'));
      payload.cwd = tg.root;
      payload.tool_input.command = command;
      payload.tool_use_id = id;
      return payload;
    };
    const hook = startHook(tg, bash('echo hooked-always first', 'toolu_always1'));
    const id = await waitFor('the hooked echo waiting in `toolgate approvals`', async () => {
      /** @type {{ id: number, args: { command?: string } }[]} */
      const list = await tg.cliJson(['approvals']);
      return list.find((r) => r.args?.command === 'echo hooked-always first')?.id;
    });
    const row = page.locator(`li.item[data-id="${id}"]`);
    await row.getByRole('button').first().click();
    await page.getByRole('region', { name: 'Request detail' }).getByText(`Request #${id}`).waitFor();
    await page.getByRole('group', { name: 'Decide' }).getByRole('button', { name: /^Approve & always/ }).click();
    const d = page.getByRole('dialog');
    const command = d.getByRole('checkbox', { name: /the command runs echo hooked-always with any plain arguments/ });
    await command.waitFor();
    assert.equal(await command.isChecked(), true, 'the command shape is ticked');
    await d.getByText('Includes this request').waitFor();
    await d.screenshot({ path: `${SHOTS}/hooks-always-light.png` });
    const confirm = d.getByRole('button', { name: /Approve & remember/ });
    await waitFor('Approve & remember to be enabled', () => confirm.isEnabled());
    await confirm.click();
    await waitFor('the hook to answer', async () => hook.exited);
    assert.equal(JSON.parse(hook.out.stdout).hookSpecificOutput.permissionDecision, 'allow', hook.out.stdout);

    const next = startHook(tg, bash('echo hooked-always second --loud', 'toolu_always2'));
    await waitFor('the next hooked echo to be answered without asking', async () => next.exited);
    assert.equal(JSON.parse(next.out.stdout).hookSpecificOutput.permissionDecision, 'allow', next.out.stdout);
    /** @type {unknown[]} */
    const pending = await tg.cliJson(['approvals']);
    assert.deepEqual(pending, [], 'nobody was asked the second time');
  });
});
