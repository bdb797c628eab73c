// @ts-check
// A small MCP client over toolgate's agent socket: newline-delimited
// JSON-RPC 2.0 (docs/agent-protocol.md). It keeps the raw control the tests
// need: calls left waiting, `notifications/cancelled`, hanging up mid-call.

import net from 'node:net';
import readline from 'node:readline';
import { within } from './wait.mjs';

/**
 * @typedef {{ jsonrpc: '2.0', id?: number, method?: string, params?: any, result?: any, error?: { code: number, message: string } }} Message
 * @typedef {{ content: { type: string, text?: string }[], isError?: boolean, _meta?: Record<string, any> }} ToolResult
 */

export class Agent {
  /** @type {net.Socket} */
  #sock;
  #next = 1;
  /** @type {Map<number, { resolve: (m: Message) => void, reject: (e: Error) => void }>} */
  #pending = new Map();
  /** @type {Message[]} */
  notifications = [];
  /** @type {Set<(m: Message) => void>} */
  #listeners = new Set();
  closed = false;

  /** @param {net.Socket} sock */
  constructor(sock) {
    this.#sock = sock;
    const rl = readline.createInterface({ input: sock, crlfDelay: Infinity });
    rl.on('line', (line) => this.#onLine(line));
    sock.on('close', () => {
      this.closed = true;
      for (const p of this.#pending.values()) p.reject(new Error('the agent socket closed'));
      this.#pending.clear();
    });
    sock.on('error', () => {});
  }

  /**
   * Connects and initialises (`clientInfo.name` = `name`).
   * @param {string} socket
   * @param {{ name?: string }} [opts]
   */
  static async connect(socket, { name = 'e2e-agent' } = {}) {
    const sock = await within(
      `a connection to ${socket}`,
      new Promise((resolve, reject) => {
        const s = net.createConnection(socket);
        s.once('connect', () => resolve(s));
        s.once('error', reject);
      }),
    );
    const a = new Agent(/** @type {net.Socket} */ (sock));
    const init = await a.request('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name, version: '1.0.0' },
    });
    if (!init.result) throw new Error(`initialize failed: ${JSON.stringify(init)}`);
    a.notify('notifications/initialized', {});
    return a;
  }

  /** @param {string} line */
  #onLine(line) {
    /** @type {Message} */
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      throw new Error(`toolgate sent a line that is not JSON: ${line.slice(0, 200)}`);
    }
    if (m.id !== undefined && m.method === undefined) {
      const p = this.#pending.get(/** @type {number} */ (m.id));
      if (p) {
        this.#pending.delete(/** @type {number} */ (m.id));
        p.resolve(m);
      }
      return;
    }
    if (m.method && m.id !== undefined) {
      // A request from the server (none expected): answer "not supported".
      this.#write({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'not supported by the e2e agent' } });
      return;
    }
    this.notifications.push(m);
    for (const l of this.#listeners) l(m);
  }

  /** @param {object} m */
  #write(m) {
    this.#sock.write(JSON.stringify(m) + '\n');
  }

  /**
   * Sends a request; resolves with the whole reply message.
   * @param {string} method
   * @param {object} params
   * @returns {{ id: number, reply: Promise<Message> }}
   */
  send(method, params) {
    const id = this.#next++;
    const reply = new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.#write({ jsonrpc: '2.0', id, method, params });
    return { id, reply: /** @type {Promise<Message>} */ (reply) };
  }

  /**
   * @param {string} method
   * @param {object} params
   * @param {number} [timeout]
   */
  request(method, params, timeout = 20_000) {
    return within(`a reply to ${method}`, this.send(method, params).reply, timeout);
  }

  /** @param {string} method @param {object} params */
  notify(method, params) {
    this.#write({ jsonrpc: '2.0', method, params });
  }

  /**
   * Starts a `tools/call`; the reply's `result` is the tool result.
   * @param {string} name
   * @param {object} args
   * @returns {{ id: number, result: Promise<ToolResult> }}
   */
  start(name, args) {
    const { id, reply } = this.send('tools/call', { name, arguments: args });
    const result = reply.then((m) => {
      if (m.error) throw new Error(`tools/call ${name} answered a JSON-RPC error: ${JSON.stringify(m.error)}`);
      return /** @type {ToolResult} */ (m.result);
    });
    // The tests that leave a call unanswered must not fail on its rejection.
    result.catch(() => {});
    return { id, result };
  }

  /**
   * A whole `tools/call`.
   * @param {string} name
   * @param {object} args
   * @param {number} [timeout]
   */
  call(name, args, timeout = 20_000) {
    return within(`the result of ${name}`, this.start(name, args).result, timeout);
  }

  /** @returns {Promise<string[]>} the names `tools/list` gives */
  async toolNames() {
    const r = await this.request('tools/list', {});
    if (!r.result) throw new Error(`tools/list failed: ${JSON.stringify(r)}`);
    return r.result.tools.map((/** @type {{ name: string }} */ t) => t.name);
  }

  /** @param {(m: Message) => void} f */
  onNotification(f) {
    this.#listeners.add(f);
    return () => this.#listeners.delete(f);
  }

  /** Hangs up at once (the daemon cancels what is in flight). */
  destroy() {
    this.#sock.destroy();
  }

  close() {
    this.#sock.end();
  }
}

/** @param {ToolResult} r */
export function text(r) {
  return r.content.map((c) => c.text ?? '').join('');
}

/** @param {ToolResult} r @returns {string | undefined} the toolgate error kind */
export function errorKind(r) {
  return r._meta?.['toolgate/error']?.kind;
}

/** @param {ToolResult} r @returns {number | undefined} */
export function callId(r) {
  return r._meta?.['toolgate/callId'];
}
