"""The schema a governed function is registered with matches what
PraisonAI's ``@tool`` gives the model for the same function."""

# No `from __future__ import annotations` here: PraisonAI's builder reads
# `Optional` from the raw annotation, which that import makes a string.
import enum
from typing import Any, Dict, List, Literal, Optional, Union


from toolgate import annotation_schema, input_schema

from .conftest import need


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def everything(
    name: str,
    count: int,
    ratio: float,
    flag: bool,
    maybe: Optional[int],
    either: Union[int, str],
    mode: Literal["fast", "deep"],
    colour: Colour,
    tags: List[str],
    scores: Dict[str, float],
    newer: int | None,
    limit: int = 10,
    *rest: Any,
    **extra: Any,
) -> str:
    """Does everything.

    A second paragraph that is not the description.

    Args:
        name: who
        count (int): how many
        limit: at most this many

    Returns:
        nothing useful
    """
    return ""


def test_types_map_like_praisonai() -> None:
    s = input_schema(everything)
    p = s["properties"]
    assert p["name"] == {"type": "string", "description": "who"}
    assert p["count"] == {"type": "integer", "description": "how many"}
    assert p["ratio"] == {"type": "number"}
    assert p["flag"] == {"type": "boolean"}
    assert p["maybe"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert p["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert p["mode"] == {"type": "string", "enum": ["fast", "deep"]}
    assert p["colour"] == {"type": "string", "enum": ["red", "blue"]}
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["newer"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert p["limit"] == {"type": "integer", "description": "at most this many"}
    assert "rest" not in p and "extra" not in p
    assert s["required"] == [
        "name", "count", "ratio", "flag", "either", "mode", "colour", "tags", "scores",
    ]


def test_mixed_literals_have_no_type() -> None:
    assert annotation_schema(Literal[1, "a"]) == {"enum": [1, "a"]}


def test_matches_praisonais_own_builder() -> None:
    schema_mod = need("praisonaiagents.tools.schema")

    def f(
        query: str,
        depth: Optional[int],
        mode: Literal["a", "b"] = "a",
        tags: List[int] | None = None,
    ) -> str:
        """Searches.

        Args:
            query: what to look for
            depth: how deep
        """
        return query

    theirs = schema_mod.build_tool_definition(f)["function"]
    ours = input_schema(f)
    # PraisonAI leaves PEP 604 unions (`X | None`) as strings; ours reads them.
    del theirs["parameters"]["properties"]["tags"], ours["properties"]["tags"]
    assert ours == theirs["parameters"]
