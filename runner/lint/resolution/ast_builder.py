"""What Spark's AST builder refuses after its grammar accepted the text, found on sqlglot's
tree (Spark's ``AstBuilder`` throws these as parse errors, before any analysis):

- an empty grouping set ``()`` inside ``ROLLUP (...)`` or ``CUBE (...)``
  (``[_LEGACY_ERROR_TEMP_0051]``; ``GROUPING SETS (..., ())`` is fine);
- ``LIKE ANY ()`` / ``LIKE ALL ()`` / ``ILIKE ...`` with no pattern (``[_LEGACY_ERROR_TEMP_0064]``);
- a window frame bound that is not a literal (``[_LEGACY_ERROR_TEMP_0064]``, "Frame bound value
  must be a literal"): one that reads a column, calls a function (``CURRENT_DATE``) or adds
  interval literals of different units (``INTERVAL '23' DAYS + INTERVAL '4' HOURS``, which is
  unresolved until the analyser widens it).

Interval literals Spark's AST builder refuses are :mod:`runner.lint.checks.literals`' (on tokens).
Anything else in a frame bound (a cast, arithmetic on literals) is left to Spark.

>>> import sqlglot
>>> from runner.lint.sql.spark_dialect import SPARK
>>> q = sqlglot.parse_one("SELECT a FROM t GROUP BY ROLLUP (a, ())", read=SPARK)
>>> [f.message for f in ast_builder_refusals(q)]
['[_LEGACY_ERROR_TEMP_0051] Empty set in ROLLUP grouping sets is not supported']
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.lint.resolution.shapes import Finding

__all__ = ["ast_builder_refusals"]

#: Calls sqlglot makes of Spark's literal syntax (``DATE '...'`` is a cast, ``INTERVAL``).
_LITERAL_CALLS = (exp.Cast, exp.TryCast, exp.Interval)


def ast_builder_refusals(query: exp.Expr) -> Iterator[Finding]:
    """Each thing in ``query`` that Spark's AST builder refuses (see the module's docstring)."""
    for node in query.find_all(exp.Rollup, exp.Cube, exp.Any, exp.All, exp.WindowSpec):
        if isinstance(node, (exp.Rollup, exp.Cube)):
            empty = next((e for e in node.expressions
                          if isinstance(e, exp.Tuple) and not e.expressions), None)
            if empty is not None:
                kind = "ROLLUP" if isinstance(node, exp.Rollup) else "CUBE"
                yield Finding(node, f"[_LEGACY_ERROR_TEMP_0051] Empty set in {kind} grouping "
                              "sets is not supported",
                              f"drop the `()`: {kind} adds the grand total by itself")
        elif isinstance(node, (exp.Any, exp.All)):
            if isinstance(node.parent, (exp.Like, exp.ILike)) and node.parent.expression is \
                    node and isinstance(node.this, exp.Tuple) and not node.this.expressions:
                yield Finding(node.parent, "[_LEGACY_ERROR_TEMP_0064] Expected something "
                              "between '(' and ')' in LIKE ANY/ALL",
                              "list at least one pattern, or drop the condition")
        else:
            for key in ("start", "end"):
                bound = node.args.get(key)
                if isinstance(bound, exp.Expr) and _not_literal(bound):
                    yield Finding(bound, "[_LEGACY_ERROR_TEMP_0064] Frame bound value must be "
                                  "a literal", "use a literal offset (`INTERVAL '1' DAY`, `5`),"
                                  " or UNBOUNDED / CURRENT ROW")


def _not_literal(bound: exp.Expr) -> bool:
    """A frame bound Spark's parser does not take for a resolved constant, surely."""
    for node in bound.walk():
        if isinstance(node, (exp.Column, exp.Query, exp.Subquery)):
            return True
        if isinstance(node, exp.Func) and not isinstance(node, _LITERAL_CALLS):
            return True
        if isinstance(node, (exp.Add, exp.Sub)) and all(
                isinstance(side, exp.Interval) for side in (node.this, node.expression)) and \
                None not in (_unit(node.this), _unit(node.expression)) and \
                _unit(node.this) != _unit(node.expression):
            return True
    return False


def _unit(interval: exp.Interval) -> str | None:
    """The unit of an interval literal (``DAY``, ``DAY TO SECOND``), plural folded."""
    unit = interval.args.get("unit")
    return None if unit is None else unit.sql().upper().rstrip("S")
