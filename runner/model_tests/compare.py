"""Compare rows order-insensitively and show the difference as a readable row diff.

>>> ok, lines = diff_rows([{"id": "a", "n": 1}], [{"id": "a", "n": 2}], ["id", "n"])
>>> ok
False
>>> print("\\n".join(lines))
expected 1 row, got 1: 1 missing (-), 1 unexpected (+)
   id   n
-  "a"  1
+  "a"  2
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, cast

__all__ = ["canonical", "diff_rows", "show_value", "json_default"]

_MAX_DIFF_ROWS = 40


def canonical(value: Any) -> Hashable:
    """A hashable form of a value read back from Arrow, equal for equal data.

    Floats compare to 10 significant digits (``0.1 + 0.2`` equals ``0.3``); timestamps compare
    as instants; structs as their fields; maps as sorted entries.
    """
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return float(f"{value:.10g}")
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    if isinstance(value, Mapping):
        return ("{}", tuple(sorted((str(k), canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return cast(Hashable, value)


def json_default(value: Any) -> Any:
    """JSON for what YAML and Arrow hand us beyond JSON's types (timestamps, decimals)."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def show_value(value: Any) -> str:
    """One value as JSON (``null``, ``"text"``, ``12``, ``"2026-01-01T00:00:00Z"``)."""
    text = json.dumps(value, default=json_default, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= 60 else text[:57] + "..."


def diff_rows(expected: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]],
              columns: Sequence[str]) -> tuple[bool, list[str]]:
    """Compare two multisets of rows on ``columns``.

    Returns:
        ``(equal, lines)``; when not equal, ``lines`` holds a summary line and a table of the
        missing (``-``, expected but not written) and unexpected (``+``, written but not
        expected) rows, sorted so that near-identical rows sit next to each other.
    """
    def key(row: Mapping[str, Any]) -> tuple[Hashable, ...]:
        return tuple(canonical(row.get(c)) for c in columns)

    shown: dict[tuple[Hashable, ...], Mapping[str, Any]] = {}
    for row in [*expected, *actual]:
        shown.setdefault(key(row), row)
    want, got = Counter(map(key, expected)), Counter(map(key, actual))
    missing, extra = want - got, got - want
    if not missing and not extra:
        return True, []
    lines = [f"expected {_plural(len(expected), 'row')}, got {len(actual)}: "
             f"{sum(missing.values())} missing (-), {sum(extra.values())} unexpected (+)"]
    diff = [("-", k) for k, n in missing.items() for _ in range(n)]
    diff += [("+", k) for k, n in extra.items() for _ in range(n)]
    cells = [[show_value(shown[k].get(c)) for c in columns] for _, k in diff]
    # rows that share their first value sit together, the expected one (-) first
    diff_cells = sorted(zip(diff, cells), key=lambda d: (d[1][:1], d[0][0] == "+", d[1]))
    if not columns:
        return False, lines
    widths = [max([len(c), *(len(row[i]) for _, row in diff_cells)])
              for i, c in enumerate(columns)]
    lines.append("   " + "  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for (sign, _), shown_row in diff_cells[:_MAX_DIFF_ROWS]:
        lines.append(f"{sign}  " + "  ".join(v.ljust(w)
                                             for v, w in zip(shown_row, widths)).rstrip())
    if len(diff_cells) > _MAX_DIFF_ROWS:
        lines.append(f"  ... and {len(diff_cells) - _MAX_DIFF_ROWS} more")
    return False, lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"
