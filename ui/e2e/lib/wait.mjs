// @ts-check
// Waiting for a condition with a deadline: the only way these tests
// synchronise (never a bare sleep).

/**
 * Polls `probe` until it returns a truthy value, which is returned.
 * Throws after `timeout` ms, naming `what` and the last value or error seen.
 * @template T
 * @param {string} what
 * @param {() => T | Promise<T>} probe
 * @param {{ timeout?: number, interval?: number }} [opts]
 * @returns {Promise<NonNullable<T>>}
 */
export async function waitFor(what, probe, { timeout = 15_000, interval = 50 } = {}) {
  const deadline = Date.now() + timeout;
  /** @type {unknown} */
  let last;
  for (;;) {
    try {
      const v = await probe();
      if (v) return /** @type {NonNullable<T>} */ (v);
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      const seen = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeout} ms waiting for ${what} (last seen: ${seen})`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

/**
 * A promise with a deadline.
 * @template T
 * @param {string} what
 * @param {Promise<T>} p
 * @param {number} [timeout]
 * @returns {Promise<T>}
 */
export function within(what, p, timeout = 15_000) {
  /** @type {NodeJS.Timeout | undefined} */
  let t;
  const deadline = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`timed out after ${timeout} ms waiting for ${what}`)), timeout);
  });
  return /** @type {Promise<T>} */ (Promise.race([p, deadline]).finally(() => clearTimeout(t)));
}
