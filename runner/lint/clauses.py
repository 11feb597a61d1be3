"""The shape of a query's clauses, as Spark's analyser checks it:

- ``GROUP BY 2`` / ``ORDER BY 3`` name a position of the select list
  (``[GROUP_BY_POS_OUT_OF_RANGE]``, ``[ORDER_BY_POS_OUT_OF_RANGE]``), and a grouped position
  holds no aggregate (``[GROUP_BY_POS_AGGREGATE]``);
- a scalar subquery returns one column
  (``[INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_MORE_THAN_ONE_OUTPUT_COLUMN]``), an
  ``IN (SELECT ...)`` as many as the values it is compared with
  (``[DATATYPE_MISMATCH.IN_SUBQUERY_LENGTH_MISMATCH]``);
- ``QUALIFY`` has a window function in it or in the select list
  (``[QUALIFY_REQUIRES_WINDOW_FUNCTION]``);
- the inputs of UNION / INTERSECT / EXCEPT have as many columns (``[NUM_COLUMNS_MISMATCH]``);
- ``LIMIT`` / ``OFFSET`` are constants, reading no column and nothing random
  (``[INVALID_LIMIT_LIKE_EXPRESSION.IS_UNFOLDABLE]``);
- ``ORDER BY`` of a SELECT that does not aggregate holds no IN/EXISTS subquery
  (``[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.UNSUPPORTED_IN_EXISTS_SUBQUERY]``).

A select list with ``AS (a, b)`` or a generator has a number of columns lint does not count:
ordinals and subqueries over one are left alone; over a ``*``, an ORDER BY / SORT BY position
below 1 is refused, and one past the columns name resolution counted for the model's own
SELECT.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.aggregate_calls import NONDETERMINISTIC
from runner.lint.analysis import _grouping_aggregates
from runner.lint.builtins import signature
from runner.lint.context import ModelContext
from runner.lint.infer import is_generator
from runner.lint.rules import ModelRule

__all__ = ["QueryShape"]

#: Where a subquery is a relation or a predicate's operand, not a scalar value.
_NOT_SCALAR = (exp.From, exp.Join, exp.In, exp.Exists, exp.Any, exp.All, exp.Lateral,
               exp.SetOperation, exp.CTE, exp.Subquery, exp.Table, exp.Values)


def _width(query: exp.Expr) -> int | None:
    """How many columns ``query`` returns, when lint can count them (no ``*``)."""
    while isinstance(query, exp.Subquery):
        query = query.this
    if isinstance(query, exp.SetOperation):
        return _width(query.left)
    if not isinstance(query, exp.Select) or any(_many(p) for p in query.expressions):
        return None
    return len(query.expressions)


def _many(projection: exp.Expr) -> bool:
    """A projection that may be several columns: a ``*``, ``AS (a, b)``, a generator."""
    if isinstance(projection, (exp.Star, exp.Aliases)) or (
            isinstance(projection, exp.Column) and projection.is_star):
        return True
    inner = projection.unalias()
    if is_generator(inner) or isinstance(inner, (exp.Explode, exp.Posexplode, exp.Inline)):
        return True
    name = inner.name if isinstance(inner, exp.Anonymous) else inner.key
    sig = signature(name) if isinstance(inner, exp.Func) else None
    return sig is not None and sig.kind == "generator"


def _star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and projection.is_star)


def _unfoldable(value: exp.Expr) -> bool:
    """A LIMIT / OFFSET value that is surely no constant: it reads a column or calls a
    function whose value differs from call to call."""
    for node in value.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Query))):
        if isinstance(node, exp.Column) or (isinstance(node, exp.Func) and (
                node.name.lower() if isinstance(node, exp.Anonymous)
                else node.sql_name().lower()) in NONDETERMINISTIC):
            return True
    return False


def _ordinal(node: exp.Expr) -> int | None:
    """The integer of a GROUP BY / ORDER BY item that is an integer literal (``-1`` too)."""
    sign = 1
    if isinstance(node, exp.Neg):
        node, sign = node.this, -1
    if isinstance(node, exp.Literal) and node.is_int:
        return sign * int(node.name)
    return None


class QueryShape(ModelRule):
    """GROUP BY and ORDER BY positions are in the select list ([GROUP_BY_POS_OUT_OF_RANGE],
    [ORDER_BY_POS_OUT_OF_RANGE]) and a grouped one holds no aggregate; a scalar subquery
    returns one column and an IN subquery as many as it is compared with; QUALIFY needs a
    window function ([QUALIFY_REQUIRES_WINDOW_FUNCTION]); set operations' inputs have as many
    columns ([NUM_COLUMNS_MISMATCH]); LIMIT and OFFSET are constants
    ([INVALID_LIMIT_LIKE_EXPRESSION]); no IN/EXISTS subquery in a plain SELECT's ORDER BY."""

    id = "query-shape"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        for select in ctx.nodes.of(exp.Select):
            yield from self._ordinals(ctx, select)
            yield from self._qualify(ctx, select)
        for sub in ctx.nodes.of(exp.Subquery):
            width = _width(sub)
            if width is not None and width > 1 and sub.parent is not None and not isinstance(
                    sub.parent, _NOT_SCALAR):
                yield self.at(ctx, sub, "[INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_"
                              f"MORE_THAN_ONE_OUTPUT_COLUMN] this subquery is a value and "
                              f"returns {width} columns, not one",
                              "select one column, or join the subquery instead")
        for node in ctx.nodes.of(exp.In):
            query = node.args.get("query")
            width = _width(query) if query is not None else None
            left = node.this
            count = len(left.expressions) if isinstance(left, exp.Tuple) else 1
            if width is not None and width != count:
                yield self.at(ctx, node, "[DATATYPE_MISMATCH.IN_SUBQUERY_LENGTH_MISMATCH] IN "
                              f"compares {count} value(s) with a subquery of {width} "
                              "column(s)", "select as many columns as the values compared")
        yield from self._set_operations(ctx)
        for limit in ctx.nodes.of(exp.Limit, exp.Offset):
            value = limit.args.get("expression")
            if isinstance(value, exp.Expr) and _unfoldable(value):
                clause = "LIMIT" if isinstance(limit, exp.Limit) else "OFFSET"
                yield self.at(ctx, value, "[INVALID_LIMIT_LIKE_EXPRESSION.IS_UNFOLDABLE] "
                              f"{clause} reads a column or a random value: it must be a "
                              "constant", f"a constant {clause} (a number, or arithmetic on "
                              "numbers)")
        for select in ctx.nodes.of(exp.Select):
            yield from self._predicate_subqueries(ctx, select)

    def _set_operations(self, ctx: ModelContext) -> Iterator[Violation]:
        """UNION / INTERSECT / EXCEPT of inputs with as many columns ([NUM_COLUMNS_MISMATCH]);
        ``BY NAME`` matches by name, not checked."""
        for node in ctx.nodes.of(exp.SetOperation):
            if node.args.get("by_name"):
                continue
            left, right = _width(node.left), _width(node.right)
            if left is not None and right is not None and left != right:
                op = node.key.upper() + (" ALL" if not node.args.get("distinct") else "")
                yield self.at(ctx, node.right, f"[NUM_COLUMNS_MISMATCH] {op} of inputs of "
                              f"{left} and {right} column(s)",
                              "select as many columns on each side")

    def _predicate_subqueries(self, ctx: ModelContext, select: exp.Select
                              ) -> Iterator[Violation]:
        """IN (SELECT ...) / EXISTS in the ORDER BY of a SELECT that does not aggregate
        ([UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.UNSUPPORTED_IN_EXISTS_SUBQUERY])."""
        order = select.args.get("order")
        if order is None or select.args.get("group") is not None or any(
                next(_grouping_aggregates(p), None) is not None for p in select.expressions):
            return
        for node in order.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Query))):
            if isinstance(node, exp.Exists) or (isinstance(node, exp.In) and
                                                node.args.get("query") is not None):
                yield self.at(ctx, node, "[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY."
                              "UNSUPPORTED_IN_EXISTS_SUBQUERY] ORDER BY holds an IN/EXISTS "
                              "subquery", "compute it as a select item (`... AS flag`) and "
                              "order by its alias")
                return

    def _ordinals(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        width = _width(select)
        if width is None:  # a `*`: counted from name resolution's outputs, for the query itself
            yield from self._star_ordinals(ctx, select)
            return
        group = select.args.get("group")
        for item in (group.expressions if group is not None else []):
            n = _ordinal(item)
            if n is None:
                continue
            if not 1 <= n <= width:
                yield self.at(ctx, item, f"[GROUP_BY_POS_OUT_OF_RANGE] GROUP BY {n}: the select"
                              f" list has {width} column(s)", f"a position from 1 to {width}")
            elif next(_grouping_aggregates(select.expressions[n - 1]), None) is not None:
                yield self.at(ctx, item, f"[GROUP_BY_POS_AGGREGATE] GROUP BY {n} names an "
                              "aggregate", "group by the columns the aggregate reads")
        order = select.args.get("order")
        for ordered in (order.expressions if order is not None else []):
            n = _ordinal(ordered.this)
            if n is not None and not 1 <= n <= width:
                yield self.at(ctx, ordered, f"[ORDER_BY_POS_OUT_OF_RANGE] ORDER BY {n}: the "
                              f"select list has {width} column(s)",
                              f"a position from 1 to {width}")

    def _star_ordinals(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        """ORDER BY / SORT BY positions of a select list with a ``*``: a position below 1 is
        out of range whatever the width; above it, when name resolution counted the columns of
        the model's own SELECT."""
        width = None
        if select is ctx.query and ctx.analysis is not None and not ctx.analysis.shape.open \
                and not any(_many(p) and not _star(p) for p in select.expressions):
            width = len(ctx.analysis.outputs)
        for key, clause in (("order", "ORDER BY"), ("sort", "SORT BY")):
            node = select.args.get(key)
            for ordered in (node.expressions if node is not None else []):
                n = _ordinal(ordered.this)
                if n is not None and (n < 1 or (width is not None and n > width)):
                    yield self.at(ctx, ordered, f"[ORDER_BY_POS_OUT_OF_RANGE] {clause} {n}: "
                                  "not a position of the select list",
                                  "a position from 1" + (f" to {width}" if width else ""))

    def _qualify(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        qualify = select.args.get("qualify")
        if qualify is None:
            return
        own = [*select.expressions, qualify]
        if not any(isinstance(n, exp.Window) for root in own
                   for n in root.walk(prune=lambda n: isinstance(n, exp.Subquery))):
            yield self.at(ctx, qualify, "[QUALIFY_REQUIRES_WINDOW_FUNCTION] QUALIFY filters on "
                          "window functions, and neither it nor the select list has one",
                          "filter with WHERE (or HAVING), or compute a window function")
