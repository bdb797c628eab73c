"""``Toolgate``: a connection that registers your functions as one agent's
tools and runs each call through toolgate's gate mode.

A governed call is three steps on the connection: ``toolgate/gate`` (the
engine validates and casts the arguments, applies guards, policy, approval
and the breaker, then pauses the call at execution), the function itself,
run here with the *cast* arguments, and ``toolgate/report`` (the engine
finishes: breaker, output limit, trust wrapping, AFTER hooks, one audit
row). What the report's reply holds is what the model should see.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
import json
import os
import threading
from concurrent.futures import Future
from typing import Any, Awaitable, Callable, Literal, TypeVar, cast, overload

from . import _schema
from ._connection import Connection
from ._discovery import locate
from .errors import CallRefused

__version__ = "0.1.0"

Risk = Literal["low", "medium", "high", "critical"]
F = TypeVar("F", bound=Callable[..., Any])

#: The MCP protocol version this package speaks.
PROTOCOL_VERSION = "2025-06-18"


class Toolgate:
    """One connection to the running engine, as one agent.

    Args:
        agent_id: the agent's id: toolgate names the caller by it in
            approvals, Live and the audit, and ``[[policy.callers]] agent``
            matches it. Without one, the engine uses the session id.
        client_name: the ``clientInfo.name`` sent in ``initialize``.
        socket_path: the agent socket; by default found as
            ``toolgate mcp-bridge`` finds it (``$TOOLGATE_SOCKET``, else the
            data dir's discovery file, from HOME alone).

    Raises:
        EngineNotFound: no engine answers there.
    """

    def __init__(
        self,
        agent_id: str | None = None,
        *,
        client_name: str = "toolgate-python",
        socket_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.located = locate(socket_path)
        self.agent_id = agent_id
        self._conn = Connection(self.located.agent_socket)
        try:
            self.server_info: dict[str, Any] = self._conn.call(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": client_name, "version": __version__},
                },
            )
            # No `notifications/initialized`: it asks for tools/list_changed
            # notifications, which this connection never uses and would
            # only queue up between calls.
        except BaseException:
            self._conn.close()
            raise
        self._lock = threading.Lock()

    def close(self) -> None:
        """Ends the connection; toolgate removes the tools registered on it."""
        self._conn.close()

    def __enter__(self) -> Toolgate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def register(self, tools: list[dict[str, Any]]) -> list[str]:
        """Registers tool definitions (``name``, ``description``,
        ``inputSchema``, ``risk``) as this agent's; returns their names."""
        params: dict[str, Any] = {"tools": tools}
        if self.agent_id is not None:
            params["agentId"] = self.agent_id
        with self._lock:
            reply = self._conn.call("toolgate/register", params)
        self.agent_id = str(reply["agentId"])
        return [str(n) for n in reply["registered"]]

    @overload
    def govern(self, fn: F, /) -> F: ...

    @overload
    def govern(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        risk: Risk = "low",
        schema: dict[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def govern(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        risk: Risk = "low",
        schema: dict[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Registers ``fn`` as a tool and returns it governed: same
        signature, sync or async as ``fn`` is. Usable as ``@tg.govern`` or
        ``@tg.govern(risk="high")``.

        Each call is gated; on allow ``fn`` runs with toolgate's cast
        arguments and its result is reported. It returns what the model
        should see: the reply's structured content when toolgate passes the
        result's dict on, else its text. A refusal raises
        :class:`CallRefused`; an exception of ``fn`` is reported as
        ``tool_failed`` and raised again.
        """

        def wrap(f: F) -> F:
            tool = _Tool(self, f, name or f.__name__, description, risk, schema)
            tool.register()
            return cast(F, tool.wrapper())

        return wrap(fn) if fn is not None else wrap

    # The three steps, for _Tool.

    def _gate(self, name: str, arguments: dict[str, Any]) -> tuple[int, Future[Any]]:
        # The futures are waited on with `_conn.wait`, which reads the socket.
        return self._conn.request("toolgate/gate", {"name": name, "arguments": arguments})

    def _report(self, params: dict[str, Any]) -> Future[Any]:
        return self._conn.request("toolgate/report", params)[1]

    def _cancel(self, rid: int) -> None:
        self._conn.cancel(rid, "the caller cancelled the call")


class _Tool:
    """One governed function: its definition and its calls."""

    def __init__(
        self,
        tg: Toolgate,
        fn: Callable[..., Any],
        name: str,
        description: str | None,
        risk: Risk,
        schema: dict[str, Any] | None,
    ) -> None:
        self.tg, self.fn, self.name = tg, fn, name
        self.sig = inspect.signature(fn)
        self.hints = _schema.hints(fn)
        self.definition = {
            "name": name,
            "description": description or _schema.description(fn),
            "inputSchema": schema or _schema.input_schema(fn),
            "risk": risk,
        }

    def register(self) -> None:
        self.tg.register([self.definition])

    def wrapper(self) -> Any:
        if inspect.iscoroutinefunction(self.fn):

            @functools.wraps(self.fn)
            async def governed_async(*args: Any, **kwargs: Any) -> Any:
                return await self.call_async(self.arguments(args, kwargs))

            governed: Any = governed_async
        else:

            @functools.wraps(self.fn)
            def governed_sync(*args: Any, **kwargs: Any) -> Any:
                return self.call(self.arguments(args, kwargs))

            governed = governed_sync
        governed.toolgate_definition = self.definition
        governed.toolgate_call = self.call
        governed.toolgate_call_async = self.call_async
        return governed

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by name, as JSON values (enums by value)."""
        bound = self.sig.bind_partial(*args, **kwargs).arguments
        return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in bound.items()}

    def _typed(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """toolgate's cast JSON arguments, with enum parameters as members."""
        out = dict(arguments)
        for k, v in arguments.items():
            hint = self.hints.get(k)
            if isinstance(hint, type) and issubclass(hint, enum.Enum):
                try:
                    out[k] = hint(v)
                except ValueError:
                    pass
        return out

    def _allowed(self, gate: Any) -> dict[str, Any]:
        if gate.get("decision") != "allow":
            err = gate.get("error") or {}
            raise CallRefused(
                self.name,
                str(err.get("kind", "denied")),
                str(err.get("message", "")),
                gate.get("callId"),
            )
        return cast(dict[str, Any], gate)

    def call(self, arguments: dict[str, Any]) -> Any:
        """One governed call of a sync function, arguments by name."""
        rid, fut = self.tg._gate(self.name, arguments)
        conn = self.tg._conn
        try:
            gate = self._allowed(conn.wait(fut))
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                self.tg._cancel(rid)
            raise
        gid = gate["gateId"]
        try:
            result = self.fn(**self._typed(gate.get("arguments") or {}))
        except BaseException as e:
            conn.wait(self.tg._report(_failure(gid, e)))
            raise
        return self._model_view(conn.wait(self.tg._report(_success(gid, result))))

    async def call_async(self, arguments: dict[str, Any]) -> Any:
        """One governed call of an async function (or a sync one, run in a
        thread), arguments by name. Cancelling the task cancels the gate
        (a pending approval is closed) or, once the function runs, cancels
        it and reports the call as ``cancelled``."""
        conn = self.tg._conn
        rid, fut = self.tg._gate(self.name, arguments)
        try:
            gate = self._allowed(await asyncio.to_thread(conn.wait, fut))
        except asyncio.CancelledError:
            self.tg._cancel(rid)
            raise
        gid = gate["gateId"]
        typed = self._typed(gate.get("arguments") or {})
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await cast(Callable[..., Awaitable[Any]], self.fn)(**typed)
            else:
                result = await asyncio.to_thread(self.fn, **typed)
        except asyncio.CancelledError as e:
            # Not awaited: this task is being cancelled. The reply is dropped.
            self.tg._report(_failure(gid, e))
            raise
        except Exception as e:
            await asyncio.to_thread(conn.wait, self.tg._report(_failure(gid, e)))
            raise
        reply = await asyncio.to_thread(conn.wait, self.tg._report(_success(gid, result)))
        return self._model_view(reply)

    def _model_view(self, reply: Any) -> Any:
        meta = reply.get("_meta") or {}
        err = meta.get("toolgate/error")
        if isinstance(err, dict):
            raise CallRefused(
                self.name,
                str(err.get("kind", "tool_failed")),
                str(err.get("message", "")),
                meta.get("toolgate/callId"),
            )
        if reply.get("structuredContent") is not None:
            return reply["structuredContent"]
        return "\n".join(
            str(c.get("text", "")) for c in reply.get("content") or [] if c.get("type") == "text"
        )


def _success(gid: str, result: Any) -> dict[str, Any]:
    report: dict[str, Any] = {"content": [{"type": "text", "text": _text(result)}], "isError": False}
    if isinstance(result, dict) and _jsonable(result):
        report["structuredContent"] = result
    return {"gateId": gid, "result": report}


def _failure(gid: str, e: BaseException) -> dict[str, Any]:
    if isinstance(e, (asyncio.CancelledError, KeyboardInterrupt)):
        return {"gateId": gid, "error": {"kind": "cancelled", "message": "the caller cancelled the call"}}
    if isinstance(e, TimeoutError):
        return {"gateId": gid, "error": {"kind": "timeout", "message": str(e) or "timed out"}}
    if isinstance(e, ConnectionError):
        return {"gateId": gid, "error": {"kind": "connection", "message": f"{type(e).__name__}: {e}"}}
    return {"gateId": gid, "error": {"message": f"{type(e).__name__}: {e}"}}


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if result is None:
        return ""
    if _jsonable(result):
        return json.dumps(result, ensure_ascii=False)
    return str(result)


_default: Toolgate | None = None
_default_lock = threading.Lock()


def default() -> Toolgate:
    """The process's shared :class:`Toolgate`, connected on first use
    (``$TOOLGATE_AGENT_ID`` names its agent, if set)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Toolgate(os.environ.get("TOOLGATE_AGENT_ID") or None)
        return _default


@overload
def governed(fn: F, /) -> F: ...


@overload
def governed(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    risk: Risk = "low",
) -> Callable[[F], F]: ...


def governed(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    risk: Risk = "low",
) -> F | Callable[[F], F]:
    """``@governed``: like :meth:`Toolgate.govern` on the shared
    :func:`default` connection, which it opens (and registers the tool on)
    at the function's first call, not at import: decorating never needs a
    running engine."""

    def wrap(f: F) -> F:
        lock = threading.Lock()
        tool: list[_Tool] = []

        def resolve() -> _Tool:
            with lock:
                if not tool:
                    t = _Tool(default(), f, name or f.__name__, description, risk, None)
                    t.register()
                    tool.append(t)
                return tool[0]

        sig = inspect.signature(f)

        def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            bound = sig.bind_partial(*args, **kwargs).arguments
            return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in bound.items()}

        if inspect.iscoroutinefunction(f):

            @functools.wraps(f)
            async def lazy_async(*args: Any, **kwargs: Any) -> Any:
                t = await asyncio.to_thread(resolve)
                return await t.call_async(arguments(args, kwargs))

            return cast(F, lazy_async)

        @functools.wraps(f)
        def lazy_sync(*args: Any, **kwargs: Any) -> Any:
            return resolve().call(arguments(args, kwargs))

        return cast(F, lazy_sync)

    return wrap(fn) if fn is not None else wrap
