"""Where a key path is in a YAML file, as the file spells it (``data_tests`` may be written
``tests``, dbt's older spelling): the line every ``models/*.yml`` message names."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["dotted", "locate"]


def _compose(text: str) -> Any:
    try:
        return yaml.compose(text)
    except yaml.YAMLError:
        return None


def locate(text: str, loc: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], int | None]:
    """``loc`` as the file spells it (``data_tests`` may be written ``tests``, dbt's older
    spelling) and the 1-based line of its deepest part the file has (None: not even the
    first)."""
    node = _compose(text)
    spelled: list[str | int] = []
    line = None
    for n, part in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            names = [str(part)] + (["tests"] if part == "data_tests" else [])
            match = next(((k, v) for name in names for k, v in node.value if k.value == name),
                         None)
            if match is None:
                return (*spelled, *loc[n:]), line
            spelled.append(match[0].value)
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and 0 <= part < len(node.value):
            node = node.value[part]
            spelled.append(part)
            line = node.start_mark.line + 1
        else:
            return (*spelled, *loc[n:]), line
    return tuple(spelled), line


def dotted(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


