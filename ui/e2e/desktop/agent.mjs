#!/usr/bin/env node
// @ts-check
// An agent for the desktop e2e run, as its own process: connects to
// toolgate's agent socket, speaks MCP (newline-delimited JSON-RPC 2.0,
// docs/agent-protocol.md), calls `shell_exec` with COMMAND (without one:
// `ping`) and prints the reply's result as one JSON line on stdout, then
// exits 0. Anything else (no socket, a JSON-RPC error, the connection
// closing first) is one line on stderr and exit 1.
//
//   node agent.mjs SOCKET [COMMAND]
import { createConnection } from 'node:net';

const [socket, command] = process.argv.slice(2);
if (!socket) {
  console.error('usage: agent.mjs SOCKET [COMMAND]');
  process.exit(2);
}

const conn = createConnection(socket);
/** @type {Map<number, (msg: any) => void>} */
const waiting = new Map();
let buf = '';
let nextId = 1;

/** @param {string} why */
function fail(why) {
  console.error(`agent: ${why}`);
  process.exit(1);
}

conn.on('error', (e) => fail(`${socket}: ${e.message}`));
conn.on('close', () => fail('the connection closed before the reply'));
conn.on('data', (chunk) => {
  buf += chunk.toString('utf8');
  for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (!line) continue;
    const msg = JSON.parse(line);
    // Requests and notifications from the server have a method; replies do not.
    if (msg.method === undefined && typeof msg.id === 'number') waiting.get(msg.id)?.(msg);
  }
});

/**
 * @param {string} method
 * @param {unknown} params
 * @returns {Promise<any>} the result
 */
function request(method, params) {
  const id = nextId++;
  return new Promise((resolve) => {
    waiting.set(id, (msg) => {
      waiting.delete(id);
      if (msg.error) fail(`${method}: JSON-RPC error ${msg.error.code}: ${msg.error.message}`);
      resolve(msg.result);
    });
    conn.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
}

await new Promise((resolve) => conn.once('connect', resolve));
await request('initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'desktop-e2e-agent', version: '1' },
});
conn.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
const result = command
  ? await request('tools/call', { name: 'shell_exec', arguments: { command } })
  : await request('ping', {});
process.stdout.write(JSON.stringify(result) + '\n');
conn.removeAllListeners('close');
conn.end();
conn.on('close', () => process.exit(0));
