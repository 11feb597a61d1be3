"""A pydantic validation error of a ``models/*.yml`` file, worded for its author: the line
and the key path as the file spells them, with a "did you mean" for unknown keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from runner.errors import did_you_mean
from runner.model_tests.yml_lines import dotted, locate

__all__ = ["explain"]


def _keys_of(loc: tuple[str | int, ...], root: Sequence[str], top: type[BaseModel]
             ) -> list[str]:
    """Valid keys of the mapping that holds ``loc``'s last element (``root``: at the top)."""
    current: Any = top
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = (current.model_fields.get(part)
                 if isinstance(current, type) and issubclass(current, BaseModel) else None)
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        current = next((a for a in (annotation, *args)
                        if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if current is None:
            return []
    if current is top:
        return list(root)
    return (list(current.model_fields)
            if isinstance(current, type) and issubclass(current, BaseModel) else [])


def explain(err: Any, *, text: str, prefix: tuple[str | int, ...], root: Sequence[str],
            top: type[BaseModel]) -> tuple[int | None, str]:
    """(line, message) of one pydantic error, worded for a YAML author."""
    inner = tuple(p for p in err["loc"] if not (isinstance(p, str) and (
        p.startswith("function-") or p in ("str", "dict[str,any]"))))
    loc = (*prefix, *inner)
    spelled, line = locate(text, loc)
    where = dotted(spelled[:-1])
    head = f"{where}: " if where else ""
    if err["type"] == "extra_forbidden":
        name = str(loc[-1])
        return line, f"{head}unknown key '{name}'" + did_you_mean(name, _keys_of(inner, root, top))
    if err["type"] == "missing":
        return line, f"{head}missing required key '{loc[-1]}'"
    message = str(err["msg"]).removeprefix("Value error, ")
    shown = f"{dotted(spelled)}: {message}" if loc else message
    if err["type"] != "value_error" and "input" in err and \
            not isinstance(err["input"], (dict, list, tuple)):
        shown += f" (got {err['input']!r})"
    return line, shown
