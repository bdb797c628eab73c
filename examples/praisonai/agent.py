#!/usr/bin/env python3
"""A PraisonAI agent with every tool under toolgate.

- toolgate's own tools (files, shell, fetch, your upstream MCP servers)
  reach the agent through PraisonAI's ``MCP("toolgate mcp-bridge")``: the
  bridge relays to the running engine, which governs each call.
- The agent's own Python functions stay in-process, and ``govern_agent``
  puts them under the same policy, approvals, breaker and audit log, with
  the agent's name as the caller.

Needs a running engine (``toolgate serve``, or the desktop app),
``pip install ./clients/python praisonaiagents mcp``, and ``toolgate`` on
PATH.

    python examples/praisonai/agent.py          # no LLM: calls the tools as the agent's LLM would
    python examples/praisonai/agent.py --chat   # a real conversation: needs OPENAI_API_KEY
                                                # (or another LLM PraisonAI supports, see its docs)

Without ``--chat`` the script runs each tool call through PraisonAI's own
tool-execution path (``Agent.execute_tool``, what the chat loop runs for
each tool call the model makes), so you can watch them arrive in the
console's Live view and the audit log (``toolgate audit``) with no LLM.
"""

from __future__ import annotations

import argparse
import os
import shutil
from typing import Literal

os.environ.setdefault("PRAISONAI_TELEMETRY_DISABLED", "true")

from praisonaiagents import MCP, Agent  # noqa: E402

from toolgate import govern_agent  # noqa: E402


def convert(amount: float, currency: Literal["EUR", "USD", "GBP"] = "EUR") -> str:
    """Converts an amount of Swiss francs.

    Args:
        amount: how many francs
        currency: the currency to convert to
    """
    rates = {"EUR": 1.06, "USD": 1.13, "GBP": 0.93}
    return f"{amount} CHF = {amount * rates[currency]:.2f} {currency}"


def delete_invoice(invoice_id: int) -> str:
    """Deletes an invoice for good.

    Args:
        invoice_id: the invoice's number
    """
    return f"invoice {invoice_id} deleted"


def main() -> None:
    ap = argparse.ArgumentParser(description="A PraisonAI agent governed by toolgate")
    ap.add_argument("--chat", action="store_true", help="talk to an LLM (needs an API key)")
    ap.add_argument("--no-mcp", action="store_true", help="leave toolgate's own tools out")
    args = ap.parse_args()

    tools: list[object] = [convert, delete_invoice]
    bridge = None
    if not args.no_mcp:
        if shutil.which("toolgate") is None:
            raise SystemExit("`toolgate` is not on PATH (or pass --no-mcp)")
        # toolgate's tools, governed by the engine behind the bridge.
        bridge = MCP("toolgate mcp-bridge --client PraisonAI")
        tools.append(bridge)

    agent = Agent(
        name="bookkeeper",
        instructions="You keep the books. Use the tools; never guess amounts.",
        tools=tools,
    )
    # The agent's own functions: gated, cast and audited by toolgate too.
    tg = govern_agent(agent, risks={"delete_invoice": "high"})
    print(f"toolgate engine: {tg.located.agent_socket} (found by {tg.located.source})")
    print("agent's own tools, governed:", ", ".join(t.name for t in agent.tools if hasattr(t, "toolgate_tool")))
    if bridge is not None:
        names = [getattr(f, "__name__", "?") for f in bridge.get_tools()]
        print(f"toolgate's tools through the bridge ({len(names)}):", ", ".join(names[:8]), "...")

    if args.chat:
        print(agent.start("How much is 120 francs in dollars? Then delete invoice 42."))
    else:
        # What the agent's chat loop does with each tool call of its LLM.
        # toolgate casts the model's "120" to a number before convert runs.
        print(agent.execute_tool("convert", {"amount": "120", "currency": "USD"}))
        # High risk: with the default policy a person is asked in the
        # console (or `toolgate approvals` / `toolgate approve ID`).
        print("delete_invoice waits for a person's approval in the console ...")
        print(agent.execute_tool("delete_invoice", {"invoice_id": "42"}))

    tg.close()
    if bridge is not None:
        bridge.shutdown()


if __name__ == "__main__":
    main()
