"""One newline-delimited JSON-RPC connection to the engine's agent socket.

A reader thread matches replies to requests by id, so one connection
serves threads and event loops at once: a request returns a
``concurrent.futures.Future`` that sync code waits on and async code
awaits through ``asyncio.wrap_future``.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .errors import ConnectionLost, EngineNotFound, ProtocolError


class Connection:
    """A connection to ``path``; :meth:`close` ends it (and with it the
    tools registered on it and any call still in flight)."""

    def __init__(self, path: Path) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(str(path))
        except OSError as e:
            self._sock.close()
            raise EngineNotFound(
                f"no toolgate engine is listening on {path}: {e}; start one with `toolgate serve`"
            ) from e
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._pending: dict[int, tuple[str, Future[Any]]] = {}
        self._pending_lock = threading.Lock()
        self._closed: BaseException | None = None
        self._reader = threading.Thread(target=self._read, name="toolgate-reader", daemon=True)
        self._reader.start()

    def request(self, method: str, params: dict[str, Any]) -> tuple[int, Future[Any]]:
        """Sends a request; returns its id and the future of its result."""
        rid = next(self._ids)
        fut: Future[Any] = Future()
        with self._pending_lock:
            if self._closed is not None:
                raise ConnectionLost(f"the connection to toolgate is closed: {self._closed}")
            self._pending[rid] = (method, fut)
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        except OSError as e:
            self._forget(rid)
            raise ConnectionLost(f"{method}: writing to toolgate failed: {e}") from e
        return rid, fut

    def call(self, method: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """Sends a request and waits for its result."""
        return self.request(method, params)[1].result(timeout)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Sends a notification (no reply)."""
        try:
            self._send({"jsonrpc": "2.0", "method": method, "params": params})
        except OSError as e:
            raise ConnectionLost(f"{method}: writing to toolgate failed: {e}") from e

    def cancel(self, rid: int, reason: str) -> None:
        """Cancels request ``rid`` (MCP ``notifications/cancelled``): the
        engine stops it and, as MCP says, never answers it."""
        fut = self._forget(rid)
        if fut is not None:
            fut.cancel()
        if self._closed is None:
            try:
                self.notify("notifications/cancelled", {"requestId": rid, "reason": reason})
            except ConnectionLost:
                pass

    def close(self) -> None:
        """Closes the socket; pending requests fail with ConnectionLost."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._reader.join(timeout=5)

    def _forget(self, rid: int) -> Future[Any] | None:
        with self._pending_lock:
            entry = self._pending.pop(rid, None)
        return entry[1] if entry else None

    def _send(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        with self._write_lock:
            self._sock.sendall(line)

    def _read(self) -> None:
        why: BaseException = ConnectionLost("toolgate closed the connection")
        try:
            with self._sock.makefile("rb") as lines:
                for line in lines:
                    self._dispatch(line)
        except (OSError, ValueError) as e:
            why = ConnectionLost(f"reading from toolgate failed: {e}")
        with self._pending_lock:
            self._closed = why
            pending, self._pending = self._pending, {}
        for method, fut in pending.values():
            if not fut.done():
                fut.set_exception(ConnectionLost(f"{method}: {why}"))

    def _dispatch(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict) or "method" in msg:
            return  # a notification from the engine (tools/list_changed, ...)
        rid = msg.get("id")
        if not isinstance(rid, int):
            return
        with self._pending_lock:
            entry = self._pending.pop(rid, None)
        if entry is None:
            return  # cancelled: nobody waits for it
        method, fut = entry
        if fut.done():
            return
        err = msg.get("error")
        if isinstance(err, dict):
            fut.set_exception(
                ProtocolError(method, int(err.get("code", 0)), str(err.get("message", "")))
            )
        else:
            fut.set_result(msg.get("result"))
