"""One newline-delimited JSON-RPC connection to the engine's agent socket.

There is no reader thread: the caller waiting for a reply reads the socket
itself (the "leader"), dispatching every reply it reads to its request's
future, until its own has come; other waiting threads ("followers") wait
on a condition and one of them leads next. Handing each reply from a
reader thread to the waiting one costs two thread switches, about 60 µs a
round trip in CPython, which is more than the engine's own work on a
call; reading in the caller's thread keeps a governed call cheaper than
PraisonAI's in-process tool pipeline (see bench/python/overhead.py).
Async callers wait in a worker thread (see ``_client``).

The leader blocks in ``recv``. A cancelled request gets no reply, so
cancelling one also sends a ``ping``: its reply wakes a leader that was
reading for the cancelled request, which then sees it done.
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

#: How long a follower waits on the condition before it looks again
#: whether it can lead (a safety net: every dispatch and every leader's
#: release notify it).
_POLL_S = 0.05


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
        self._read_lock = threading.Lock()
        self._buf = bytearray()
        self._pending: dict[int, tuple[str, Future[Any]]] = {}
        # Guards _pending and _closed; followers wait on it for replies.
        self._cond = threading.Condition()
        self._closed: BaseException | None = None

    def request(self, method: str, params: dict[str, Any]) -> tuple[int, Future[Any]]:
        """Sends a request; returns its id and the future of its result."""
        rid = next(self._ids)
        fut: Future[Any] = Future()
        with self._cond:
            if self._closed is not None:
                raise ConnectionLost(f"the connection to toolgate is closed: {self._closed}")
            self._pending[rid] = (method, fut)
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        except OSError as e:
            self._forget(rid)
            raise ConnectionLost(f"{method}: writing to toolgate failed: {e}") from e
        return rid, fut

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Sends a request and waits for its result."""
        return self.wait(self.request(method, params)[1])

    def wait(self, fut: Future[Any]) -> Any:
        """Waits for a request's result, reading the socket while no other
        thread does.

        Raises:
            concurrent.futures.CancelledError: the request was cancelled.
        """
        while not fut.done():
            if self._read_lock.acquire(blocking=False):
                try:
                    while not fut.done():
                        self._pump()
                finally:
                    self._read_lock.release()
                    with self._cond:
                        self._cond.notify_all()  # someone else may lead now
            else:
                with self._cond:
                    if not fut.done():
                        self._cond.wait(_POLL_S)
        return fut.result()

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
        with self._cond:
            self._cond.notify_all()
        if self._closed is None:
            try:
                self.notify("notifications/cancelled", {"requestId": rid, "reason": reason})
                self.request("ping", {})  # wakes a leader reading for `rid`
            except ConnectionLost:
                pass

    def close(self) -> None:
        """Closes the socket; pending requests fail with ConnectionLost."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._lost(ConnectionLost("the connection was closed"))
        with self._read_lock:
            self._sock.close()

    def _forget(self, rid: int) -> Future[Any] | None:
        with self._cond:
            entry = self._pending.pop(rid, None)
        return entry[1] if entry else None

    def _send(self, msg: dict[str, Any]) -> None:
        line = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        with self._write_lock:
            self._sock.sendall(line)

    def _pump(self) -> None:
        """Reads what the socket has (blocking until something comes) and
        dispatches every complete line. Only the leader calls it."""
        if self._closed is not None:
            return
        try:
            chunk = self._sock.recv(1 << 16)
        except (OSError, ValueError) as e:
            self._lost(ConnectionLost(f"reading from toolgate failed: {e}"))
            return
        if not chunk:
            self._lost(ConnectionLost("toolgate closed the connection"))
            return
        self._buf += chunk
        while (end := self._buf.find(b"\n")) >= 0:
            line = bytes(self._buf[:end])
            del self._buf[: end + 1]
            self._dispatch(line)

    def _lost(self, why: ConnectionLost) -> None:
        with self._cond:
            if self._closed is None:
                self._closed = why
            pending, self._pending = self._pending, {}
            self._cond.notify_all()
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
        with self._cond:
            entry = self._pending.pop(rid, None)
            if entry is None:
                return  # cancelled: nobody waits for it
            method, fut = entry
            if not fut.done():
                err = msg.get("error")
                if isinstance(err, dict):
                    fut.set_exception(
                        ProtocolError(method, int(err.get("code", 0)), str(err.get("message", "")))
                    )
                else:
                    fut.set_result(msg.get("result"))
            self._cond.notify_all()
