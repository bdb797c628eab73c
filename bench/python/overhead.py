#!/usr/bin/env python3
"""What governing a Python tool function through toolgate costs, side by
side in one run against a real `toolgate serve`:

- the bare function;
- the function governed through the package (`tg.govern`): gate, run,
  report, two round trips on the agent socket;
- PraisonAI's own in-process pipeline on the same bare function
  (`Agent.execute_tool`, what its chat loop runs per tool call);
- both together: PraisonAI's `execute_tool` on the agent's tools after
  `govern_agent`.

The variants run interleaved in rounds (so drift in the machine's load
falls on all of them alike); each figure is the median over rounds of the
mean per call within a round.

    TOOLGATE_BIN=target/release/toolgate python bench/python/overhead.py [--rounds 15 --calls 300]

Needs the toolgate package (`pip install ./clients/python`, or
PYTHONPATH=clients/python/src) and praisonaiagents.
"""

from __future__ import annotations

import argparse
import json
import socket
import itertools
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]


def start_daemon(binary: Path, root: Path) -> subprocess.Popen[str]:
    home, run = root / "home", root / "run"
    (home / ".config" / "toolgate").mkdir(parents=True)
    run.mkdir(mode=0o700)
    (home / ".config" / "toolgate" / "config.toml").write_text('allowed_tools = ["*"]\n')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_RUNTIME_DIR": str(run), "TOOLGATE_LOG": "warn"}
    proc = subprocess.Popen([str(binary), "serve", "--http-port", "0"], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "serving MCP on unix:" in line:
            break
    else:
        raise SystemExit(f"{binary} serve exited before it listened")
    # The package finds it from HOME alone.
    for k in list(os.environ):
        if k.startswith(("XDG_", "TOOLGATE_")):
            del os.environ[k]
    os.environ["HOME"] = str(home)
    return proc


def lookup(count: int, mode: str = "fast") -> str:
    """Looks things up.

    Args:
        count: how many
        mode: how hard
    """
    return f"found {count} ({mode})"


class Raw:
    """The engine's share: gate and report (and a ping) written straight
    to the socket, no package, one blocking reader."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(path))
        self.lines = self.sock.makefile("rb")
        self.ids = itertools.count(1)
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
        schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
        self.rpc("toolgate/register", {"agentId": "bench-raw", "tools": [{"name": "lookup_raw", "inputSchema": schema}]})

    def rpc(self, method: str, params: dict[str, Any]) -> Any:
        rid = next(self.ids)
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        while True:
            msg = json.loads(self.lines.readline())
            if msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def gated(self, count: int) -> Any:
        gate = self.rpc("toolgate/gate", {"name": "lookup_raw", "arguments": {"count": count}})
        text = lookup(**gate["arguments"])
        return self.rpc("toolgate/report", {"gateId": gate["gateId"], "result": {"content": [{"type": "text", "text": text}]}})


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    binary = Path(os.environ.get("TOOLGATE_BIN") or target / "release" / "toolgate")
    if not binary.is_file():
        raise SystemExit(f"no toolgate binary at {binary}: `cargo build --release -p toolgate --bin toolgate`, or set TOOLGATE_BIN")

    logging.disable(logging.CRITICAL)
    os.environ.setdefault("PRAISONAI_TELEMETRY_DISABLED", "true")
    root = Path(tempfile.mkdtemp(prefix="toolgate-bench-py-"))
    proc = start_daemon(binary, root)
    try:
        from praisonaiagents import Agent

        import toolgate

        tg = toolgate.Toolgate("bench-plain")
        # Tool names are one namespace in toolgate: each agent its own.
        governed = tg.govern(lookup, name="lookup_direct")
        plain_agent = Agent(name="bench-praison", instructions="x", tools=[lookup])
        governed_agent = Agent(name="bench-governed", instructions="x", tools=[lookup])
        toolgate.govern_agent(governed_agent)

        # A new argument each call: toolgate's loop guard refuses the same
        # call repeated, as it should for a model stuck in a loop.
        n = itertools.count()
        raw = Raw(tg.located.agent_socket)
        variants: dict[str, Callable[[], Any]] = {
            "raw socket: ping round trip": lambda: raw.rpc("ping", {}),
            "raw socket: gate + report": lambda: raw.gated(next(n)),
            "bare function": lambda: lookup(count=next(n)),
            "governed (package)": lambda: governed(count=next(n)),
            "PraisonAI execute_tool": lambda: plain_agent.execute_tool("lookup", {"count": next(n)}),
            "PraisonAI execute_tool, governed": lambda: governed_agent.execute_tool("lookup", {"count": next(n)}),
        }
        for name, fn in variants.items():
            out = fn()
            if not name.startswith("raw"):
                assert isinstance(out, str) and out.startswith("found"), (name, out)
            per_call_us(fn, 20)  # warm up
        samples: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(args.rounds):
            for name, fn in variants.items():
                samples[name].append(per_call_us(fn, args.calls))
        med = {k: statistics.median(v) for k, v in samples.items()}
        bare = med["bare function"]
        print(f"toolgate {binary}; python {sys.version.split()[0]}; {args.rounds} rounds x {args.calls} calls")
        print(f"{'variant':36} {'µs/call':>10} {'× bare':>10}")
        for k, v in med.items():
            print(f"{k:36} {v:10.1f} {v / bare:10.0f}")
        gov = med["governed (package)"] - bare
        praison = med["PraisonAI execute_tool"] - bare
        print(f"\ngoverning costs {gov:.1f} µs per call; PraisonAI's execute_tool costs {praison:.1f} µs")
        print(f"governing / PraisonAI pipeline = {gov / praison:.2f}")
        tg.close()
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
