"""A function's JSON schema from its type hints and docstring, built the
way PraisonAI's ``@tool`` builds it, so a governed function reads the same
to the model as the same function given to an agent directly:

- ``str``/``int``/``float``/``bool``/``list``/``dict`` map to their JSON
  types, anything unknown to ``string``;
- ``Optional[T]`` is ``{"anyOf": [T, {"type": "null"}]}`` and not required;
  ``Union`` (and ``X | Y``) is ``anyOf``;
- ``Literal[...]`` and ``Enum`` subclasses are ``enum`` (typed when all
  values share a JSON type);
- ``List[T]`` is an array of ``T`` (``items`` defaults to strings, as
  strict providers want one), ``Dict[K, V]`` an object of ``V``;
- a parameter with a default is not required;
- the docstring's first paragraph is the description, and its ``Args:``
  section gives each parameter's ``description``.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from typing import Any, Callable, Literal, Union, get_args, get_origin

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
    type(None): "null",
}
_NULL = {"type": "null"}


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {type(v) for v in values}
    if len(kinds) == 1:
        (kind,) = kinds
        if kind in (str, int, float, bool):
            return {"type": _JSON_TYPES[kind], "enum": values}
    return {"enum": values}


def annotation_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema of one type annotation."""
    if annotation is type(None):
        return dict(_NULL)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Union or origin is types.UnionType:
        schemas = [annotation_schema(a) for a in args]
        rest = [s for s in schemas if s != _NULL]
        if len(rest) == 1 and len(rest) < len(schemas):
            return {"anyOf": [rest[0], dict(_NULL)]}
        return {"anyOf": schemas}
    if origin is Literal:
        return _enum_schema(list(args))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([m.value for m in annotation])
    if origin is list:
        return {"type": "array", "items": annotation_schema(args[0]) if args else {"type": "string"}}
    if origin is dict:
        if len(args) >= 2:
            return {"type": "object", "additionalProperties": annotation_schema(args[1])}
        return {"type": "object"}
    if annotation is list:
        return {"type": "array", "items": {"type": "string"}}
    return {"type": _JSON_TYPES.get(annotation, "string")}


def _optional(annotation: Any) -> bool:
    origin = get_origin(annotation)
    return (origin is Union or origin is types.UnionType) and type(None) in get_args(annotation)


def docstring_args(doc: str | None) -> dict[str, str]:
    """``{name: description}`` from a docstring's ``Args:`` section."""
    out: dict[str, str] = {}
    if not doc:
        return out
    parts = re.split(r"\s*Args:\s*", doc, maxsplit=1)
    if len(parts) < 2:
        return out
    for line in parts[1].split("\n"):
        line = line.strip()
        if re.match(r"^(Returns|Raises|Yields|Examples?|Notes?):", line):
            break
        if line and ":" in line:
            name, desc = line.split(":", 1)
            # `count (int): ...` names `count`.
            out[name.split("(")[0].strip()] = desc.strip()
    return out


def description(fn: Callable[..., Any]) -> str:
    """The docstring's first paragraph, else ``Function <name>``."""
    doc = inspect.getdoc(fn)
    return doc.split("\n\n")[0].strip() if doc else f"Function {fn.__name__}"


def hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The resolved type hints, or the raw annotations when a forward
    reference cannot be resolved."""
    try:
        return typing.get_type_hints(fn)
    except (NameError, TypeError, AttributeError):
        return dict(getattr(fn, "__annotations__", {}) or {})


def input_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The ``inputSchema`` of ``fn``'s parameters (``*args``, ``**kwargs``,
    ``self`` and ``cls`` are left out: a model never names them)."""
    sig = inspect.signature(fn)
    found = hints(fn)
    described = docstring_args(inspect.getdoc(fn))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in sig.parameters.items():
        if name in ("self", "cls") or param.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            continue
        annotation = found.get(name, str)
        prop = annotation_schema(annotation)
        if name in described:
            prop["description"] = described[name]
        properties[name] = prop
        if param.default is inspect.Parameter.empty and not _optional(annotation):
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}
