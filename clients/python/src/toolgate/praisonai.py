"""``govern_agent``: a PraisonAI ``Agent``'s own tools under toolgate.

PraisonAI runs an agent's tools in-process: its LLM's tool calls reach
``Agent.execute_tool`` (or ``execute_tool_async``), which finds the tool
in ``agent.tools`` and calls it. ``govern_agent`` replaces each function
tool there with a ``BaseTool`` whose ``run`` is the governed call, so
every call the LLM makes goes through toolgate, named after the agent.
The replacement keeps the tool's name, description and parameter schema,
so the model sees the same tool. Its ``run`` takes ``**kwargs``: PraisonAI
then passes the model's arguments as they are, and toolgate alone
validates and casts them.

PraisonAI is imported only here, when ``govern_agent`` is called; the
package itself needs nothing beyond the standard library.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, cast, get_args

from ._client import Risk, Toolgate, _Tool
from .errors import CallRefused

_RISKS = set(get_args(Risk))


def govern_agent(
    agent: Any,
    toolgate: Toolgate | None = None,
    *,
    risks: Mapping[str, Risk] | None = None,
) -> Toolgate:
    """Puts ``agent``'s function tools under toolgate and returns the
    connection they are registered on.

    Args:
        agent: a ``praisonaiagents.Agent``.
        toolgate: the connection to use; by default a new one whose agent
            id is ``agent.name``, so toolgate names the caller after the
            agent (one connection is one agent: give each agent its own).
        risks: a risk per tool name; otherwise a ``@tool(approval=...)``
            gives its risk level (``approval=True`` is ``high``) and other
            tools are ``low``. PraisonAI's own approval of such a tool
            stays: it is a person's sign-off the agent's author asked for,
            and toolgate's policy may not ask at that risk.

    Tools that are not functions (MCP servers, tool classes) are left as
    they are: an ``MCP("toolgate mcp-bridge")`` is governed by toolgate
    already. A refused call returns PraisonAI's error shape,
    ``{"error": reason, "kind": kind, "call_id": id}``, which the agent
    hands to its model.
    """
    from praisonaiagents.tools.base import BaseTool  # type: ignore[import-untyped]

    tg = toolgate or Toolgate(str(agent.name), client_name=f"praisonai {agent.name}")
    risks = risks or {}
    governed: list[Any] = []
    for tool in list(agent.tools or []):
        spec = _function_of(tool, BaseTool)
        if spec is None:
            governed.append(tool)
            continue
        fn, name, description, schema, risk = spec
        t = _Tool(tg, fn, name, description, risks.get(name, risk), schema)
        t.register()
        governed.append(_governed_tool(BaseTool, t))
    agent.tools = governed
    return tg


def _function_of(
    tool: Any, base_tool: Any
) -> tuple[Any, str, str | None, dict[str, Any] | None, Risk] | None:
    """What to govern for one entry of ``agent.tools``, or None to leave it."""
    if getattr(tool, "toolgate_governed", False):
        return None
    if isinstance(tool, base_tool):
        level = getattr(tool, "risk_level", None)
        risk: Risk = cast(Risk, level) if level in _RISKS else "low"
        # A @tool function: govern the function itself (its hints give enum
        # members back), unless PraisonAI injects state into it.
        func = getattr(tool, "_func", None)
        fn = func if func is not None and not getattr(tool, "_injected_params", None) else tool.run
        doc = str(tool.description or "").split("\n\n")[0].strip() or None
        return fn, str(tool.name), doc, dict(tool.parameters or {}), risk
    if inspect.isfunction(tool) or inspect.ismethod(tool):
        return tool, tool.__name__, None, None, "low"
    return None


def _governed_tool(base_tool: Any, tool: _Tool) -> Any:
    """A PraisonAI ``BaseTool`` running ``tool``'s governed call."""

    def refused(e: CallRefused) -> dict[str, Any]:
        return {"error": str(e), "kind": e.kind, "call_id": e.call_id}

    class GovernedTool(base_tool):  # type: ignore[misc]
        toolgate_governed = True
        name = tool.name
        description = str(tool.definition["description"])
        parameters = tool.definition["inputSchema"]

        def run(self, **kwargs: Any) -> Any:
            try:
                return tool.call(kwargs)
            except CallRefused as e:
                return refused(e)

    class GovernedAsyncTool(GovernedTool):
        # PraisonAI awaits a coroutine-function `run` on its async path and
        # runs the coroutine to completion on its sync one.
        async def run(self, **kwargs: Any) -> Any:
            try:
                return await tool.call_async(kwargs)
            except CallRefused as e:
                return refused(e)

    cls: Any = GovernedAsyncTool if inspect.iscoroutinefunction(tool.fn) else GovernedTool
    cls.__name__ = f"Governed_{tool.name}"
    instance = cls()
    instance.toolgate_tool = tool
    return instance
