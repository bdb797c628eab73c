// @ts-check
// Processes from /proc: parents, executables, memory; for finding the app
// the driver launched and what it leaves behind.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * @typedef {{ pid: number, ppid: number, state: string, comm: string, exe: string, rssKb: number }} Proc
 */

/** @returns {Proc[]} every live (non-zombie) process we can read */
export function processes() {
  /** @type {Proc[]} */
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid ...; comm may hold spaces and parens.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const [state = '', ppid = '0'] = stat.slice(close + 2).split(' ');
      if (state === 'Z' || state === 'X') continue;
      let exe = '';
      try {
        exe = readlinkSync(`/proc/${name}/exe`);
      } catch {
        // kernel threads, other users' processes
      }
      const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${name}/status`, 'utf8'));
      out.push({ pid: Number(name), ppid: Number(ppid), state, comm, exe, rssKb: rss ? Number(rss[1]) : 0 });
    } catch {
      // it ended while we looked
    }
  }
  return out;
}

/**
 * @param {number} root
 * @param {Proc[]} [all]
 * @returns {Proc[]} the live descendants of `root` (not itself)
 */
export function descendants(root, all = processes()) {
  const kids = new Map();
  for (const p of all) {
    const list = kids.get(p.ppid) ?? [];
    list.push(p);
    kids.set(p.ppid, list);
  }
  const out = [];
  const todo = [root];
  while (todo.length) {
    for (const c of kids.get(todo.pop()) ?? []) {
      out.push(c);
      todo.push(c.pid);
    }
  }
  return out;
}

/** @param {number} pid */
export function alive(pid) {
  return processes().some((p) => p.pid === pid);
}

/**
 * @param {number} pid
 * @returns {{ own: number, tree: number, children: Proc[] }} RSS in kB of
 *   the process, of it with its descendants, and the descendants
 */
export function treeRss(pid) {
  const all = processes();
  const own = all.find((p) => p.pid === pid)?.rssKb ?? 0;
  const children = descendants(pid, all);
  return { own, tree: own + children.reduce((n, p) => n + p.rssKb, 0), children };
}
