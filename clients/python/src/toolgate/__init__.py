"""Govern your own Python tool functions through a running toolgate engine.

    from toolgate import Toolgate

    tg = Toolgate(agent_id="billing-bot")

    @tg.govern(risk="high")
    def refund(order_id: str, amount: float) -> str:
        \"\"\"Refunds an order.

        Args:
            order_id: the order to refund
            amount: how much, in euros
        \"\"\"
        ...

Every call of ``refund`` is then gated by toolgate (policy, approval,
breaker), run with toolgate's cast arguments, and recorded in its audit
log. ``govern_agent(agent)`` does the same for a PraisonAI agent's tools.
"""

from ._client import PROTOCOL_VERSION, Risk, Toolgate, __version__, default, governed
from ._discovery import Located, locate
from ._schema import annotation_schema, input_schema
from .errors import (
    CallRefused,
    ConnectionLost,
    EngineNotFound,
    ProtocolError,
    ToolgateError,
)
from .praisonai import govern_agent

__all__ = [
    "PROTOCOL_VERSION",
    "CallRefused",
    "ConnectionLost",
    "EngineNotFound",
    "Located",
    "ProtocolError",
    "Risk",
    "Toolgate",
    "ToolgateError",
    "__version__",
    "annotation_schema",
    "default",
    "govern_agent",
    "governed",
    "input_schema",
    "locate",
]
