"""What can go wrong, as exceptions a caller can tell apart."""

from __future__ import annotations


class ToolgateError(Exception):
    """Base of every error this package raises."""


class EngineNotFound(ToolgateError):
    """No toolgate engine answers where discovery points."""


class ConnectionLost(ToolgateError):
    """The engine closed the connection (it stopped, or refused us)."""


class ProtocolError(ToolgateError):
    """The engine answered a request with a JSON-RPC error.

    Attributes:
        code: the JSON-RPC error code (``-32602`` for bad params, ...).
    """

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} (JSON-RPC error {code})")
        self.method = method
        self.code = code
        self.message = message


class CallRefused(ToolgateError):
    """toolgate did not let the call through, or ended it: a policy or a
    person denied it, a guard refused it, the breaker is open, the report
    came too late, ...

    Attributes:
        kind: toolgate's stable error kind (``denied``, ``policy_denied``,
            ``needs_approval``, ``invalid_args``, ``breaker_open``,
            ``timeout``, ``cancelled``, ...).
        message: toolgate's reason, written for the model and the person.
        call_id: the call's row in the audit log, when it has one.
    """

    def __init__(self, tool: str, kind: str, message: str, call_id: int | None) -> None:
        super().__init__(f"toolgate refused `{tool}` ({kind}): {message}")
        self.tool = tool
        self.kind = kind
        self.message = message
        self.call_id = call_id
