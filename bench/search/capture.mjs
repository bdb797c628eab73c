#!/usr/bin/env node
// Captures the tool-search relevance catalog (tests/fixtures/search/catalog.json)
// from real MCP servers started over stdio.
//
// How to run (from the repository root):
//
//   npm ci --prefix bench/search
//   python3 -m venv bench/search/.venv
//   bench/search/.venv/bin/pip install -r bench/search/requirements.txt
//   python3 -m venv bench/search/.venv-mcp1
//   bench/search/.venv-mcp1/bin/pip install -r bench/search/requirements-mcp1.txt
//   node bench/search/capture.mjs
//
// (Two venvs: mcp-server-sqlite and mcp-atlassian need the mcp 1.x SDK, the
// other PyPI servers 2.x. bench/search/README.md lists what is left out and why.)
//
// Options:
//   --out PATH     write the catalog there (default tests/fixtures/search/catalog.json)
//   --only NAME    capture just one server and print a summary (nothing is written)
//
// The script installs nothing. It starts every server in SERVERS below with a
// temporary directory as its working directory and home, speaks
// initialize -> notifications/initialized -> tools/list (following nextCursor),
// keeps each tool exactly as the server sent it, caps a server at MAX_TOOLS
// (the first MAX_TOOLS by name, kept in server order) so that no giant server
// dominates, merges bench/search/hand_written.json, and writes the catalog with
// servers sorted by name. A server that fails to start or list fails the run:
// the catalog is either complete or not written.
//
// Credentials: none are real. Servers that refuse to start without a key get a
// dummy value (or a dummy credentials file). Listing needs no network for any
// server below; where a server's listing does (Stripe's current release, the
// docs group of Supabase's), the entry pins or configures around it.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const VENV_BIN = join(HERE, '.venv', 'bin');
const MAX_TOOLS = 60;
const LIST_TIMEOUT_MS = 90_000;
const PROTOCOL_VERSION = '2025-06-18';
const DUMMY = 'dummy-token-for-listing-only';

/**
 * One entry per server a person might connect. `npm` servers run the package's
 * bin with node; `pypi` servers run a console script from the venv. `args` may
 * use {tmp} for the per-server temporary directory; `files` are written into it
 * before the server starts (dummy credential files for servers that insist).
 */
const SERVERS = [
  { name: 'aws-docs', pypi: 'awslabs.aws-documentation-mcp-server', script: 'awslabs.aws-documentation-mcp-server', env: { FASTMCP_LOG_LEVEL: 'ERROR' } },
  { name: 'aws-kb', npm: '@modelcontextprotocol/server-aws-kb-retrieval', env: { AWS_ACCESS_KEY_ID: 'AKIADUMMY', AWS_SECRET_ACCESS_KEY: DUMMY, AWS_REGION: 'us-east-1' } },
  { name: 'azure', npm: '@azure/mcp', args: ['server', 'start'] },
  { name: 'brave-search', npm: '@modelcontextprotocol/server-brave-search', env: { BRAVE_API_KEY: DUMMY } },
  { name: 'browser', npm: '@playwright/mcp', args: ['--headless', '--isolated'] },
  { name: 'cloudflare', npm: '@cloudflare/mcp-server-cloudflare', args: ['run', '00000000000000000000000000000000'], env: { CLOUDFLARE_API_TOKEN: DUMMY } },
  { name: 'context7', npm: '@upstash/context7-mcp' },
  { name: 'calendar', npm: '@cocal/google-calendar-mcp', env: { GOOGLE_OAUTH_CREDENTIALS: '{tmp}/gcp-oauth.keys.json' }, files: { 'gcp-oauth.keys.json': JSON.stringify({ installed: { client_id: 'dummy.apps.googleusercontent.com', client_secret: DUMMY, redirect_uris: ['http://localhost'] } }) } },
  { name: 'desktop-commander', npm: '@wonderwhy-er/desktop-commander', bin: 'desktop-commander' },
  { name: 'everart', npm: '@modelcontextprotocol/server-everart', env: { EVERART_API_KEY: DUMMY } },
  { name: 'everything', npm: '@modelcontextprotocol/server-everything', args: ['stdio'] },
  { name: 'exa', npm: 'exa-mcp-server', env: { EXA_API_KEY: DUMMY } },
  { name: 'fetch', pypi: 'mcp-server-fetch' },
  { name: 'filesystem', npm: '@modelcontextprotocol/server-filesystem', args: ['{tmp}'] },
  { name: 'firecrawl', npm: 'firecrawl-mcp', env: { FIRECRAWL_API_KEY: DUMMY } },
  {
    name: 'gdrive',
    npm: '@modelcontextprotocol/server-gdrive',
    env: { GDRIVE_CREDENTIALS_PATH: '{tmp}/credentials.json' },
    files: { 'credentials.json': JSON.stringify({ access_token: DUMMY, token_type: 'Bearer' }) },
  },
  { name: 'git', pypi: 'mcp-server-git' },
  { name: 'github', npm: '@modelcontextprotocol/server-github', env: { GITHUB_PERSONAL_ACCESS_TOKEN: DUMMY } },
  { name: 'gitlab', npm: '@modelcontextprotocol/server-gitlab', env: { GITLAB_PERSONAL_ACCESS_TOKEN: DUMMY } },
  {
    name: 'gmail',
    npm: '@gongrzhe/server-gmail-autoauth-mcp',
    env: { GMAIL_OAUTH_PATH: '{tmp}/gcp-oauth.keys.json', GMAIL_CREDENTIALS_PATH: '{tmp}/credentials.json' },
    files: {
      'gcp-oauth.keys.json': JSON.stringify({ installed: { client_id: 'dummy.apps.googleusercontent.com', client_secret: DUMMY, redirect_uris: ['http://localhost'] } }),
      'credentials.json': JSON.stringify({ access_token: DUMMY, token_type: 'Bearer' }),
    },
  },
  { name: 'google-maps', npm: '@modelcontextprotocol/server-google-maps', env: { GOOGLE_MAPS_API_KEY: DUMMY } },
  { name: 'hubspot', npm: '@hubspot/mcp-server', env: { PRIVATE_APP_ACCESS_TOKEN: DUMMY } },
  { name: 'atlassian', pypi: 'mcp-atlassian', venv: '.venv-mcp1', env: { JIRA_URL: 'https://example.atlassian.net', JIRA_USERNAME: 'nobody@example.com', JIRA_API_TOKEN: DUMMY, CONFLUENCE_URL: 'https://example.atlassian.net/wiki', CONFLUENCE_USERNAME: 'nobody@example.com', CONFLUENCE_API_TOKEN: DUMMY } },
  { name: 'kubernetes', npm: 'mcp-server-kubernetes' },
  { name: 'linear', npm: '@tacticlaunch/mcp-linear', env: { LINEAR_API_TOKEN: DUMMY } },
  { name: 'memory', npm: '@modelcontextprotocol/server-memory', env: { MEMORY_FILE_PATH: '{tmp}/memory.json' } },
  { name: 'notion', npm: '@notionhq/notion-mcp-server', env: { NOTION_TOKEN: DUMMY } },
  { name: 'postgres', npm: '@modelcontextprotocol/server-postgres', args: ['postgresql://localhost:1/none'] },
  { name: 'puppeteer', npm: '@modelcontextprotocol/server-puppeteer' },
  // The package has no description (nor README); this one is written here from its tool list.
  { name: 'sentry', npm: '@sentry/mcp-server', args: ['--access-token', DUMMY], description: 'MCP server for Sentry: organizations, projects, issues, events, releases, DSNs and Seer root-cause analysis.' },
  { name: 'sequential-thinking', npm: '@modelcontextprotocol/server-sequential-thinking' },
  { name: 'slack', npm: '@modelcontextprotocol/server-slack', env: { SLACK_BOT_TOKEN: DUMMY, SLACK_TEAM_ID: 'T00000000' } },
  { name: 'sqlite', pypi: 'mcp-server-sqlite', venv: '.venv-mcp1', args: ['--db-path', '{tmp}/test.db'] },
  // @stripe/mcp 0.3.x proxies to Stripe's hosted server; 0.2.5 is the last release that lists locally.
  { name: 'stripe', npm: '@stripe/mcp', args: ['--tools=all', `--api-key=sk_test_${DUMMY}`] },
  // Every feature group but docs, whose tool schema is fetched from the network at listing time.
  { name: 'supabase', npm: '@supabase/mcp-server-supabase', args: ['--access-token', DUMMY, '--features', 'account,database,debugging,development,functions,branching,storage'] },
  { name: 'tavily', npm: 'tavily-mcp', env: { TAVILY_API_KEY: DUMMY } },
  { name: 'time', pypi: 'mcp-server-time', args: ['--local-timezone', 'UTC'] },
];

function parseArgs(argv) {
  const opts = { out: join(ROOT, 'tests', 'fixtures', 'search', 'catalog.json'), only: null };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out') opts.out = resolve(argv[++i]);
    else if (argv[i] === '--only') opts.only = argv[++i];
    else throw new Error(`unknown argument ${argv[i]} (expected --out PATH or --only NAME)`);
  }
  return opts;
}

function npmPackageJson(pkg) {
  return JSON.parse(readFileSync(join(HERE, 'node_modules', pkg, 'package.json'), 'utf8'));
}

/** The bin script of an npm package: the named one, the only one, or the string form. */
function npmBin(pkg, binName) {
  const pj = npmPackageJson(pkg);
  const bin = typeof pj.bin === 'string' ? pj.bin : pj.bin[binName ?? Object.keys(pj.bin)[0]];
  if (!bin) throw new Error(`${pkg} has no bin ${binName}`);
  return join(HERE, 'node_modules', pkg, bin);
}

/** Version and summary of a distribution installed in the venv, read from its METADATA. */
function pypiMetadata(venv, dist) {
  const siteRoot = join(venv, 'lib');
  const py = readdirSync(siteRoot).find((d) => d.startsWith('python'));
  const site = join(siteRoot, py, 'site-packages');
  const norm = dist.replace(/[-.]/g, '_').toLowerCase();
  const info = readdirSync(site).find((d) => d.toLowerCase().startsWith(`${norm}-`) && d.endsWith('.dist-info'));
  if (!info) throw new Error(`${dist} is not installed in ${site}: run the pip step at the top of this file`);
  const meta = readFileSync(join(site, info, 'METADATA'), 'utf8');
  const field = (k) => (meta.match(new RegExp(`^${k}: (.*)$`, 'm')) ?? [])[1] ?? '';
  return { version: field('Version'), description: field('Summary') };
}

function describe(spec) {
  if (spec.npm) {
    const pj = npmPackageJson(spec.npm);
    return {
      origin: { kind: 'npm', package: spec.npm, version: pj.version },
      description: spec.description ?? pj.description ?? '',
      command: process.execPath,
      args: [npmBin(spec.npm, spec.bin), ...(spec.args ?? [])],
    };
  }
  const venv = join(HERE, spec.venv ?? '.venv');
  const meta = pypiMetadata(venv, spec.pypi);
  return {
    origin: { kind: 'pypi', package: spec.pypi, version: meta.version },
    description: spec.description ?? meta.description,
    command: join(venv, 'bin', spec.script ?? spec.pypi),
    args: spec.args ?? [],
  };
}

/** A minimal JSON-RPC client over a child's stdio, newline-delimited as MCP's stdio transport is. */
class StdioClient {
  constructor(command, args, env, cwd) {
    this.child = spawn(command, args, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    this.pending = new Map();
    this.nextId = 1;
    this.stderr = '';
    this.buffer = '';
    this.exited = new Promise((res) => this.child.on('exit', (code, signal) => res({ code, signal })));
    this.child.on('error', (err) => this.failAll(err));
    this.exited.then(({ code, signal }) => this.failAll(new Error(`server exited (code ${code}, signal ${signal}); stderr: ${this.stderr.slice(-2000)}`)));
    this.child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-20_000); });
    this.child.stdout.on('data', (d) => this.onData(d));
  }

  onData(chunk) {
    this.buffer += chunk;
    let nl;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (!line) continue;
      let msg;
      try { msg = JSON.parse(line); } catch { continue; } // some servers log to stdout
      if (msg.id !== undefined && this.pending.has(msg.id) && (msg.result !== undefined || msg.error !== undefined)) {
        const { res, rej } = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) rej(new Error(`JSON-RPC error ${JSON.stringify(msg.error)}`));
        else res(msg.result);
      } else if (msg.id !== undefined && msg.method) {
        // A request from the server (roots/list, ping, ...): answer so it does not wait on us.
        const result = msg.method === 'roots/list' ? { roots: [] } : {};
        this.send({ jsonrpc: '2.0', id: msg.id, result });
      }
    }
  }

  send(msg) { this.child.stdin.write(`${JSON.stringify(msg)}\n`); }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((res, rej) => {
      this.pending.set(id, { res, rej });
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  failAll(err) {
    for (const { rej } of this.pending.values()) rej(err);
    this.pending.clear();
  }

  async close() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
    this.child.kill('SIGTERM');
    await this.exited;
    clearTimeout(timer);
  }
}

async function listTools(client) {
  await client.request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    capabilities: { roots: { listChanged: false } },
    clientInfo: { name: 'toolgate-search-capture', version: '1' },
  });
  client.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const tools = [];
  let cursor;
  do {
    const page = await client.request('tools/list', cursor === undefined ? {} : { cursor });
    tools.push(...(page.tools ?? []));
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return tools;
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The fields the fixture keeps, exactly as sent; title and annotations null when absent. */
function normaliseTool(t) {
  return {
    name: t.name,
    title: t.title ?? null,
    description: t.description ?? '',
    inputSchema: t.inputSchema ?? { type: 'object' },
    annotations: t.annotations ?? null,
  };
}

/** Keeps at most MAX_TOOLS: the first MAX_TOOLS names in code-point order, in the order the server sent them. */
function capTools(tools) {
  const seen = new Set();
  const unique = tools.filter((t) => !seen.has(t.name) && seen.add(t.name));
  if (unique.length <= MAX_TOOLS) return unique;
  const keep = new Set(unique.map((t) => t.name).sort(byCodePoint).slice(0, MAX_TOOLS));
  return unique.filter((t) => keep.has(t.name));
}

function byCodePoint(a, b) { return a < b ? -1 : a > b ? 1 : 0; }

async function capture(spec) {
  const d = describe(spec);
  const tmp = mkdtempSync(join(tmpdir(), `capture-${spec.name}-`));
  const fill = (s) => s.replaceAll('{tmp}', tmp);
  for (const [file, text] of Object.entries(spec.files ?? {})) writeFileSync(join(tmp, file), text);
  const env = {
    PATH: `${VENV_BIN}:${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: tmp,
    TMPDIR: tmp,
    LANG: 'C.UTF-8',
    PUPPETEER_SKIP_DOWNLOAD: '1',
    DO_NOT_TRACK: '1',
    // Python servers that build schemas from sets (mcp-atlassian's default field lists) list them
    // in hash order; a fixed seed makes the catalog the same on every run.
    PYTHONHASHSEED: '0',
    ...Object.fromEntries(Object.entries(spec.env ?? {}).map(([k, v]) => [k, fill(v)])),
  };
  const client = new StdioClient(d.command, d.args.map(fill), env, tmp);
  try {
    const raw = await withTimeout(listTools(client), LIST_TIMEOUT_MS, spec.name);
    const tools = capTools(raw).map(normaliseTool);
    return { server: { name: spec.name, description: d.description, origin: d.origin, tools }, listed: raw.length };
  } finally {
    await client.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

function loadHandWritten() {
  const servers = JSON.parse(readFileSync(join(HERE, 'hand_written.json'), 'utf8')).servers;
  return servers.map((s) => ({
    name: s.name,
    description: s.description,
    origin: { kind: 'hand-written', package: null, version: null },
    tools: capTools(s.tools).map(normaliseTool),
  }));
}

function checkNames(servers) {
  const names = new Set();
  for (const s of servers) {
    if (!/^[a-z0-9_-]+$/.test(s.name)) throw new Error(`server name ${s.name} is not [a-z0-9_-]+`);
    if (names.has(s.name)) throw new Error(`server ${s.name} appears twice`);
    names.add(s.name);
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const specs = opts.only ? SERVERS.filter((s) => s.name === opts.only) : SERVERS;
  if (specs.length === 0) throw new Error(`no server named ${opts.only}`);
  const captured = [];
  const failures = [];
  for (const spec of specs) {
    try {
      const { server, listed } = await capture(spec);
      captured.push(server);
      console.error(`${spec.name}: ${server.origin.package}@${server.origin.version} listed ${listed}, kept ${server.tools.length}`);
    } catch (err) {
      failures.push(spec.name);
      console.error(`${spec.name}: FAILED ${err.message}`);
    }
  }
  if (opts.only) {
    for (const s of captured) for (const t of s.tools) console.log(`${s.name}__${t.name}\t${t.description.slice(0, 100).replace(/\s+/g, ' ')}`);
    return;
  }
  if (failures.length) throw new Error(`not written: ${failures.join(', ')} failed`);
  const servers = [...captured, ...loadHandWritten()].sort((a, b) => byCodePoint(a.name, b.name));
  checkNames(servers);
  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify({ servers }, null, 1)}\n`);
  const total = servers.reduce((n, s) => n + s.tools.length, 0);
  console.error(`wrote ${opts.out}: ${servers.length} servers, ${total} tools`);
}

main().catch((err) => { console.error(err.message); process.exit(1); });
