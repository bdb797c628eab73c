/**
 * The tool registry as views show it: every tool (active, quarantined or
 * hidden by the allow/deny lists) and the quarantined pins.
 *
 * Read whole from the snapshot or the `tools` slice; between reads, tool
 * events keep it close (a list swapped by a config reload changes no tool
 * event, so only the slice brings that).
 */
import type { ClientView, CorePinned, EventOf, PinRecord, Snapshot, ToolSummary } from '../api/types';

export class RegistryStore {
  tools = $state<ToolSummary[]>([]);
  quarantined = $state<PinRecord[]>([]);
  /** What each connected agent client is listed (the engine's plan). */
  clients = $state<ClientView[]>([]);

  reset(snap: Snapshot): void {
    this.set(snap.tools, snap.quarantined, snap.clients);
  }

  set(tools: ToolSummary[], quarantined: PinRecord[], clients: ClientView[]): void {
    this.clients = clients;
    this.tools = tools;
    this.quarantined = quarantined;
  }

  /**
   * A client's plan as the engine answered a deferral switch: shown at once,
   * before the `tools` slice brings it with every tool's `deferred_for`.
   */
  clientChanged(v: ClientView): void {
    const i = this.clients.findIndex((c) => c.client === v.client);
    if (i >= 0) this.clients[i] = v;
    else this.clients = [...this.clients, v].sort((a, b) => a.client.localeCompare(b.client));
  }

  /**
   * A tool pinned as core, or unpinned, from this window: its row and every
   * client's plan as the engine answered, before the `tools` slice brings
   * every other row's `deferred_for`.
   */
  corePinned(r: CorePinned): void {
    const row = r.summary;
    if (row) {
      const i = this.tools.findIndex((t) => t.name === row.name);
      if (i >= 0) this.tools[i] = row;
    }
    this.clients = r.clients;
  }

  /** Registered or replaced: known now, and no longer held back. */
  seen(name: string, source: string): void {
    const t = this.tools.find((x) => x.name === name);
    if (t) {
      t.source = source;
      if (t.state === 'quarantined') t.state = 'active';
    } else {
      this.tools.push({
        name,
        summary: '',
        source,
        // Filled by the tools slice this registration announces.
        plugin: null,
        trust: source === 'builtin' ? 'builtin' : 'external',
        risk: 'low',
        state: 'active',
        denied_by: null,
        annotations: {},
        deferred_for: [],
        // The tools slice this registration announces brings the engine's answer.
        core: null,
      });
    }
    this.quarantined = this.quarantined.filter((q) => q.name !== name);
  }

  unregistered(name: string): void {
    this.tools = this.tools.filter((t) => t.name !== name);
  }

  quarantine(ts_ms: number, e: EventOf<'tool_quarantined'>): void {
    const t = this.tools.find((x) => x.name === e.tool);
    if (t) t.state = 'quarantined';
    if (this.quarantined.some((q) => q.name === e.tool)) return;
    const rawName = e.tool.startsWith(`${e.server}__`) ? e.tool.slice(e.server.length + 2) : e.tool;
    this.quarantined.push({
      server: e.server,
      tool: rawName,
      name: e.tool,
      status: 'quarantined',
      approved: null,
      pending: null,
      first_seen_ms: ts_ms,
      approved_ms: null,
      pending_since_ms: ts_ms,
    });
  }

  /** A pin was accepted from this window: release it without waiting for the event. */
  pinAccepted(name: string): void {
    this.quarantined = this.quarantined.filter((q) => q.name !== name);
    const t = this.tools.find((x) => x.name === name);
    if (t) t.state = 'active';
  }
}
