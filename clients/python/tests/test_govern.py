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


def test_one_connection_serves_threads_and_tasks_at_once(daemon: Daemon) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with Toolgate("busy") as tg:

        @tg.govern
        def square(x: int) -> str:
            """Squares."""
            return str(x * x)

        @tg.govern
        async def cube(x: int) -> str:
            """Cubes."""
            await asyncio.sleep(0)
            return str(x**3)

        with ThreadPoolExecutor(8) as pool:
            squares = list(pool.map(lambda i: square(str(i)), range(160)))
        assert squares == [str(i * i) for i in range(160)]

        async def many() -> list[str]:
            return list(await asyncio.gather(*(cube(i) for i in range(60))))

        assert asyncio.run(many()) == [str(i**3) for i in range(60)]


def test_a_dead_engine_fails_the_call_instead_of_hanging(tmp_path: object) -> None:
    import socket as s
    import threading
    from pathlib import Path

    from toolgate import ConnectionLost

    path = Path(str(tmp_path)) / "fake.sock"
    server = s.socket(s.AF_UNIX)
    server.bind(str(path))
    server.listen(1)

    def engine_that_dies() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as lines:
            lines.readline()  # initialize
            conn.sendall(b'{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"fake"}}}\n')
            lines.readline()  # toolgate/register
        # Closed without answering.

    threading.Thread(target=engine_that_dies, daemon=True).start()
    tg = Toolgate("dies", socket_path=path)
    with pytest.raises(ConnectionLost, match="toolgate/register"):
        tg.register([{"name": "x", "inputSchema": {"type": "object"}}])
    tg.close()
    server.close()
