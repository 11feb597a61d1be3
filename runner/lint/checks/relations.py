"""The relations of FROM, as Spark's analyser checks them (``ResolvePivot``,
``ResolveSubqueryColumnAliases``):

- ``t AS x(a, b)`` / ``(SELECT ...) AS x(a, b)`` / ``WITH x(a, b) AS (...)`` name each column
  of the relation once (``[ASSIGNMENT_ARITY_MISMATCH]``; found by name resolution,
  :mod:`runner.lint.resolution.resolve`, which also resolves a PIVOT's columns against the relation
  it pivots);
- a PIVOT's aggregate reads its columns inside aggregates only (``[_LEGACY_ERROR_TEMP_1006]``:
  ``PIVOT (abs(x) FOR ...)``), pivots a column that has an order (no MAP or VARIANT in it:
  ``[INCOMPARABLE_PIVOT_COLUMN]``), and its values cast to the pivot column's type: one value
  per column, a tuple for ``FOR (a, b)`` (``[PIVOT_VALUE_DATA_TYPE_MISMATCH]``).

What lint cannot type (a column of an open relation) is left to Spark.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.checks.signatures import unorderable
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import is_aggregate_call, is_window_function
from runner.lint.resolution.shapes import Finding
from runner.lint.spark_types.infer import is_, is_known, type_string

__all__ = ["RelationShape", "pivot_problems"]


def pivot_problems(pivot: exp.Pivot) -> Iterator[Finding]:
    """What Spark's ResolvePivot refuses of one PIVOT (an UNPIVOT: nothing)."""
    if pivot.args.get("unpivot"):
        return
    for agg in pivot.expressions:
        column = _outside_aggregate(agg.unalias())
        if column is not None:
            yield Finding(column, f"[_LEGACY_ERROR_TEMP_1006] PIVOT's {agg.sql('spark')} reads"
                          f" {column.sql('spark')} outside an aggregate function",
                          "aggregate in PIVOT: PIVOT (sum(x) FOR ...)")
    for field in pivot.args.get("fields") or []:
        if isinstance(field, exp.In):
            yield from _pivot_values(field)


def _outside_aggregate(node: exp.Expr) -> exp.Column | None:
    """The first column ``node`` reads outside an aggregate call (Spark's
    checkValidAggregateExpression); None as well where lint is unsure (a window, a function
    it does not know, which may be an aggregate)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, exp.Window) or is_window_function(item) or isinstance(
                item, exp.Anonymous) and not is_aggregate_call(item):
            return None
        if is_aggregate_call(item) or isinstance(item, (exp.Query, exp.Subquery)):
            continue
        if isinstance(item, exp.Column) and not item.is_star:
            return item
        stack.extend(reversed(list(item.iter_expressions())))
    return None


def _pivot_values(field: exp.In) -> Iterator[Finding]:
    columns = field.this.unnest()
    many = isinstance(columns, exp.Tuple)
    items = columns.expressions if many else [columns]
    types = [c.type for c in items]
    for column, dtype in zip(items, types):
        bad = unorderable(dtype) if is_known(dtype) else None
        if bad is not None:
            yield Finding(column, f"[INCOMPARABLE_PIVOT_COLUMN] PIVOT's column "
                          f"{column.sql('spark')} is {type_string(dtype)}: a {bad} has no order",
                          "pivot a column of an orderable type (a number, a string, a date)")
            return
    single = types[0] if not many else None
    for value in field.expressions:
        value = value.this if isinstance(value, exp.PivotAlias) else value.unalias()
        literal = isinstance(value, (exp.Literal, exp.Boolean))  # not NULL: casts to any type
        if (many and literal) or (single is not None and isinstance(value, exp.Tuple) and
                                  is_known(single) and not is_(single, exp.DType.STRUCT)):
            want = "a tuple of one value per column" if many else type_string(single)
            yield Finding(value, f"[PIVOT_VALUE_DATA_TYPE_MISMATCH] PIVOT's value "
                          f"{value.sql('spark')} does not cast to the pivot column's type "
                          f"({want})", "one value per pivot column: FOR (a, b) IN ((1, 'x'))")
            return


class RelationShape(ModelRule):
    """The relations of FROM are shaped as Spark's analyser wants: ``AS t(a, b)`` names each
    column once ([ASSIGNMENT_ARITY_MISMATCH]); a PIVOT reads its relation's columns inside
    aggregates only ([_LEGACY_ERROR_TEMP_1006]), pivots an orderable column
    ([INCOMPARABLE_PIVOT_COLUMN]) by values of its type ([PIVOT_VALUE_DATA_TYPE_MISMATCH])."""

    id = "relation-shape"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        if ctx.analysis is not None:
            yield from self.findings(ctx, ctx.analysis.arity_mismatches)
        for pivot in ctx.nodes.of(exp.Pivot):
            yield from self.findings(ctx, pivot_problems(pivot))
