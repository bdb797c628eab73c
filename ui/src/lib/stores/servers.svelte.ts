/**
 * Upstream servers' statuses and the plugin directory's plugins. Read whole
 * from the snapshot or the `servers` slice (a restart's pid and count, and
 * every plugin reload, come only that way); `server_status` events move a
 * state between reads.
 */
import type { EventOf, PluginView, ServerStatus, Snapshot } from '../api/types';
import { serverDown } from '../format';

export class ServersStore {
  list = $state<ServerStatus[]>([]);
  plugins = $state<PluginView[]>([]);
  down = $derived(this.list.filter((s) => serverDown(s.state)).length);

  reset(snap: Snapshot): void {
    this.list = snap.servers;
    this.plugins = snap.plugins;
  }

  set(list: ServerStatus[], plugins: PluginView[]): void {
    this.list = list;
    this.plugins = plugins;
  }

  status(e: EventOf<'server_status'>): void {
    // `error` is left out of the JSON when there is none (the binding says
    // `string | null`), so both absent and null mean "no error".
    const error = e.error ?? null;
    const s = this.list.find((x) => x.server === e.server);
    if (s) {
      if (e.state === 'restarting' && s.state !== 'restarting') s.restarts++;
      s.state = e.state;
      s.tools = e.tools;
      if (error !== null) s.last_error = error;
      else if (e.state === 'ready') s.last_error = null;
    } else {
      this.list.push({
        server: e.server,
        state: e.state,
        tools: e.tools,
        last_error: error,
        config_problem: null,
        quarantined: 0,
        restarts: 0,
        pid: null,
      });
    }
  }
}
