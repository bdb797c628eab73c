"""`tg.govern` and `@governed` on plain functions, against a real daemon."""

from __future__ import annotations

import asyncio
import enum

import pytest

import toolgate
from toolgate import CallRefused, ProtocolError, Toolgate

from .conftest import Daemon


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


def test_govern_casts_types_and_returns_what_the_model_sees(daemon: Daemon) -> None:
    got: list[object] = []
    with Toolgate("plain-functions") as tg:

        @tg.govern
        def order(count: int, size: Size) -> dict[str, object]:
            """Orders boxes."""
            got.append((count, size))
            return {"ordered": count, "size": size.value}

        out = order("2", "large")  # type: ignore[arg-type]
        assert got == [(2, Size.LARGE)]
        assert out == {"ordered": 2, "size": "large"}
        assert order.toolgate_definition["inputSchema"]["properties"]["size"]["enum"] == ["small", "large"]  # type: ignore[attr-defined]


def test_a_refusal_raises_with_kind_and_reason(daemon: Daemon) -> None:
    with Toolgate("refused") as tg:

        @tg.govern
        def wipe_everything() -> str:
            """Wipes."""
            return "wiped"

        with pytest.raises(CallRefused) as e:
            wipe_everything()
        assert e.value.kind == "policy_denied"
        assert "wiping is never done by agents" in e.value.message
        assert e.value.call_id is not None


def test_an_exception_is_reported_and_raised_again(daemon: Daemon) -> None:
    with Toolgate("raiser") as tg:

        @tg.govern
        async def divide(a: int, b: int) -> float:
            """Divides."""
            return a / b

        with pytest.raises(ZeroDivisionError):
            asyncio.run(divide(1, 0))
        row = daemon.audit_row("divide", error_kind="tool_failed")
        assert row["error_message"] == "ZeroDivisionError: division by zero"


def test_one_connection_is_one_agent(daemon: Daemon) -> None:
    with Toolgate("holder") as a, Toolgate("holder") as b:
        a.register([{"name": "held_tool", "inputSchema": {"type": "object"}}])
        with pytest.raises(ProtocolError, match="held by another connection"):
            b.register([{"name": "other_tool", "inputSchema": {"type": "object"}}])


def test_governed_connects_at_the_first_call(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGATE_AGENT_ID", "lazy-agent")

    @toolgate.governed(risk="low")
    def shout(text: str) -> str:
        """Shouts."""
        return text.upper()

    assert shout("hi") == "HI"
    assert daemon.audit_row("shout", outcome="ok")["caller"]["agent_id"] == "lazy-agent"
