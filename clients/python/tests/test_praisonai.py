"""A PraisonAI agent's tools under toolgate, called through PraisonAI's
own tool-execution path (``Agent.execute_tool``, what its chat loop runs
for each tool call of the LLM), against a real daemon."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Any, Literal

import pytest

from toolgate import govern_agent

from .conftest import Daemon, need, wait_for

Agent = need("praisonaiagents").Agent
tool = need("praisonaiagents").tool

SEEN: list[Any] = []


def lookup(count: int, mode: Literal["fast", "deep"] = "fast") -> str:
    """Looks things up.

    Args:
        count: how many things
        mode: how hard to look
    """
    SEEN.append(count)
    return f"found {count} ({mode})"


def wipe_disk(disk: str) -> str:
    """Wipes a disk."""
    SEEN.append(("wiped", disk))
    return "wiped"


def delete_record(record: int) -> str:
    """Deletes a record."""
    return f"deleted record {record}"


def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"exploded: {reason}")


def agent(name: str, *tools: Any) -> Any:
    return Agent(name=name, instructions="Use the tools.", tools=list(tools))


def test_a_call_is_gated_cast_and_audited_under_the_agents_name(daemon: Daemon) -> None:
    a = agent("researcher", lookup)
    tg = govern_agent(a)
    try:
        assert tg.located.source == "discovery"
        SEEN.clear()
        out = a.execute_tool("lookup", {"count": "3"})
        assert out == "found 3 (fast)"
        assert SEEN == [3], "the function got toolgate's cast integer, not the model's string"
        row = daemon.audit_row("lookup", outcome="ok")
        assert row["caller"]["agent_id"] == "researcher"
        assert "integer 3" in row["notes"]
        assert daemon.cli("tools").count("lookup") >= 1
    finally:
        tg.close()


def test_the_schema_the_model_sees_is_kept(daemon: Daemon) -> None:
    a = agent("schema-check", lookup)
    tg = govern_agent(a)
    try:
        (tool,) = a.tools
        assert tool.name == "lookup"
        props = tool.parameters["properties"]
        assert props["mode"]["enum"] == ["fast", "deep"]
        assert props["count"] == {"type": "integer", "description": "how many things"}
        assert tool.parameters["required"] == ["count"]
        assert tool.description.startswith("Looks things up.")
        listed = daemon.cli("tools")
        assert "lookup" in listed
    finally:
        tg.close()


def test_a_bad_argument_is_refused_before_the_function_runs(daemon: Daemon) -> None:
    a = agent("bad-args", lookup)
    tg = govern_agent(a)
    try:
        SEEN.clear()
        out = a.execute_tool("lookup", {"count": "three"})
        assert isinstance(out, dict) and out["kind"] == "invalid_args", out
        assert SEEN == []
    finally:
        tg.close()


def test_a_policy_deny_never_runs_the_function(daemon: Daemon) -> None:
    a = agent("cleaner", wipe_disk)
    tg = govern_agent(a)
    try:
        SEEN.clear()
        out = a.execute_tool("wipe_disk", {"disk": "sda"})
        assert isinstance(out, dict), out
        assert out["kind"] == "policy_denied"
        assert "wiping is never done by agents" in out["error"]
        assert SEEN == []
        row = daemon.audit_row("wipe_disk", error_kind="policy_denied")
        assert row["caller"]["agent_id"] == "cleaner"
        assert row["call_id"] == out["call_id"]
    finally:
        tg.close()


def test_a_call_waits_for_a_person_and_runs_once_approved(daemon: Daemon) -> None:
    a = agent("archivist", delete_record)
    tg = govern_agent(a)
    try:
        result: list[Any] = []
        t = threading.Thread(target=lambda: result.append(a.execute_tool("delete_record", {"record": "7"})))
        t.start()
        req = wait_for(
            "the approval request",
            lambda: next((r for r in daemon.approvals() if r["tool"] == "delete_record"), None),
        )
        assert "archivist" in daemon.cli("approvals")
        daemon.cli("approve", str(req["id"]))
        t.join(20)
        assert result == ["deleted record 7"]
        row = daemon.audit_row("delete_record", outcome="ok")
        assert row["caller"]["agent_id"] == "archivist"
        assert "approved by cli" in row["notes"]
    finally:
        tg.close()


def test_a_denied_approval_reaches_the_agent_as_its_error(daemon: Daemon) -> None:
    a = agent("archivist-2", delete_record)
    tg = govern_agent(a)
    try:
        result: list[Any] = []
        t = threading.Thread(target=lambda: result.append(a.execute_tool("delete_record", {"record": 8})))
        t.start()
        req = wait_for(
            "the approval request",
            lambda: next((r for r in daemon.approvals() if r["tool"] == "delete_record"), None),
        )
        daemon.cli("deny", str(req["id"]))
        t.join(20)
        assert result and result[0]["kind"] == "denied", result
    finally:
        tg.close()


def test_an_exception_is_reported_as_tool_failed(daemon: Daemon) -> None:
    a = agent("fragile", explode)
    tg = govern_agent(a)
    try:
        with pytest.raises(Exception, match="exploded: now"):
            a.execute_tool("explode", {"reason": "now"})
        row = daemon.audit_row("explode", error_kind="tool_failed")
        assert row["error_message"] == "ValueError: exploded: now"
        assert row["caller"]["agent_id"] == "fragile"
    finally:
        tg.close()


def test_async_tools_run_through_praisonais_async_path(daemon: Daemon) -> None:
    async def fetch_page(page: int) -> str:
        """Fetches a page."""
        await asyncio.sleep(0)
        return f"page {page + 1}"

    a = agent("async-reader", fetch_page)
    tg = govern_agent(a)
    try:
        out = asyncio.run(a.execute_tool_async("fetch_page", {"page": "1"}))
        assert out == "page 2"
        assert daemon.audit_row("fetch_page", outcome="ok")["caller"]["agent_id"] == "async-reader"
    finally:
        tg.close()


def test_two_agents_are_two_callers(daemon: Daemon) -> None:
    a, b = agent("alpha", lookup), agent("beta", wipe_disk)
    ta, tb = govern_agent(a), govern_agent(b)
    try:
        assert a.execute_tool("lookup", {"count": 1}) == "found 1 (fast)"
        assert daemon.audit_row("lookup", outcome="ok")["caller"]["agent_id"] == "alpha"
        out = b.execute_tool("wipe_disk", {"disk": "sdb"})
        assert daemon.audit_row("wipe_disk", call_id=out["call_id"])["caller"]["agent_id"] == "beta"
    finally:
        ta.close()
        tb.close()


class Shelf(enum.Enum):
    TOP = "top"
    BOTTOM = "bottom"


def test_tool_decorated_functions_are_governed_too(daemon: Daemon) -> None:
    got: list[Any] = []

    @tool
    def fetch_box(shelf: Shelf, count: int = 1) -> str:
        """Fetches boxes from a shelf.

        Args:
            shelf: which shelf
        """
        got.append((shelf, count))
        return f"{count} from {shelf.value}"

    a = agent("storekeeper", fetch_box)
    tg = govern_agent(a)
    try:
        (governed,) = a.tools
        assert governed.parameters["properties"]["shelf"]["enum"] == ["top", "bottom"]
        assert a.execute_tool("fetch_box", {"shelf": "top", "count": "2"}) == "2 from top"
        assert got == [(Shelf.TOP, 2)], "the function gets its enum member and toolgate's integer"
        assert daemon.audit_row("fetch_box", outcome="ok")["caller"]["agent_id"] == "storekeeper"
    finally:
        tg.close()
