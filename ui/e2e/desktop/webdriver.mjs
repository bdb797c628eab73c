// @ts-check
// A small W3C WebDriver client over plain fetch: what the desktop e2e run
// needs from tauri-driver (sessions, scripts, element clicks, screenshots).

/** The W3C key of an element reference in JSON. */
export const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

/** @typedef {{ [ELEMENT]: string }} ElementRef */

export class WebDriverError extends Error {
  /**
   * @param {string} what
   * @param {number} status
   * @param {unknown} body
   */
  constructor(what, status, body) {
    const v = /** @type {{value?: {error?: string, message?: string}}} */ (body ?? {}).value;
    super(`${what}: HTTP ${status}${v?.error ? ` ${v.error}` : ''}${v?.message ? `: ${v.message.split('\n')[0]}` : ''}`);
    this.status = status;
    this.code = v?.error ?? '';
  }
}

/**
 * @param {string} base  e.g. http://127.0.0.1:4444
 * @param {'GET'|'POST'|'DELETE'} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {number} [timeoutMs]
 * @returns {Promise<any>} the reply's `value`
 */
async function call(base, method, path, body, timeoutMs = 60_000) {
  const r = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  let json;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    throw new WebDriverError(`${method} ${path} answered non-JSON ${JSON.stringify(text.slice(0, 200))}`, r.status, {});
  }
  if (!r.ok) throw new WebDriverError(`${method} ${path}`, r.status, json);
  return json.value;
}

export class Session {
  /**
   * Starts a session: the driver launches the app.
   * @param {string} base
   * @param {Record<string, unknown>} capabilities
   */
  static async create(base, capabilities) {
    const v = await call(base, 'POST', '/session', { capabilities: { alwaysMatch: capabilities } }, 120_000);
    return new Session(base, v.sessionId);
  }

  /**
   * @param {string} base
   * @param {string} id
   */
  constructor(base, id) {
    this.base = base;
    this.id = id;
  }

  /**
   * @param {'GET'|'POST'|'DELETE'} method
   * @param {string} path
   * @param {unknown} [body]
   */
  cmd(method, path, body) {
    return call(this.base, method, `/session/${this.id}${path}`, body);
  }

  /**
   * Runs `script` (a function body; `arguments` holds `args`) in the page.
   * @param {string} script
   * @param {unknown[]} [args]
   */
  exec(script, args = []) {
    return this.cmd('POST', '/execute/sync', { script, args });
  }

  /** @param {ElementRef} el */
  click(el) {
    if (!el || typeof el[ELEMENT] !== 'string') throw new Error(`not an element reference: ${JSON.stringify(el)}`);
    return this.cmd('POST', `/element/${el[ELEMENT]}/click`, {});
  }

  /** @returns {Promise<Buffer>} a PNG of the page */
  async screenshot() {
    return Buffer.from(await this.cmd('GET', '/screenshot'), 'base64');
  }

  /** Ends the session (the driver closes the app). */
  delete() {
    return call(this.base, 'DELETE', `/session/${this.id}`, undefined, 60_000);
  }
}

/**
 * Polls `probe` until it returns a value other than null/undefined/false, at
 * most `ms`; throws `what` on timeout (with the last error, if any).
 * @template T
 * @param {string} what
 * @param {number} ms
 * @param {() => Promise<T | null | undefined | false> | T | null | undefined | false} probe
 * @param {number} [every]
 * @returns {Promise<T>}
 */
export async function until(what, ms, probe, every = 100) {
  const deadline = Date.now() + ms;
  /** @type {unknown} */
  let last;
  for (;;) {
    try {
      const v = await probe();
      if (v !== null && v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? ` (last error: ${last.message})` : '';
      throw new Error(`timed out after ${ms} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, every));
  }
}
