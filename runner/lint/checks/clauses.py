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
- one ``WITH`` names each of its CTEs once (``[DUPLICATED_CTE_NAMES]``, case-insensitive);
- ``ORDER BY`` over a ``HAVING`` that reads what the select list does not (an aggregate, a
  column) orders by no aggregate and no grouped expression: Spark's analyser puts the select
  list between them and cannot reach the aggregate (``[UNRESOLVED_COLUMN]``; measured on
  Spark 4.2, ``tests/spark/test_lint_resolution_vs_spark.py``);
- ``grouping(a)`` / ``grouping_id(...)`` under grouping sets name their expressions
  (``[GROUPING_COLUMN_MISMATCH]``; without grouping sets: the ``grouping-shape`` rule);
- ``* EXCEPT (a, a)`` / ``* EXCEPT (s.f, s.f.g)``: no item names another or a part of it
  (``[EXCEPT_OVERLAPPING_COLUMNS]``); ``* AS x`` has no alias
  (``[INVALID_USAGE_OF_STAR_OR_REGEX]``);
- ``EXTRACT(field FROM x)`` / ``date_part('field', x)`` name a field Spark extracts
  (``[INVALID_EXTRACT_FIELD]``), of an interval literal one of its units' range
  (``EXTRACT(DAY FROM INTERVAL '2-1' YEAR TO MONTH)`` is refused).

A select list with ``AS (a, b)`` or a generator has a number of columns lint does not count:
ordinals and subqueries over one are left alone; over a ``*``, an ORDER BY / SORT BY position
below 1 is refused, and one past the columns name resolution counted for the model's own
SELECT.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sqlglot import exp
from sqlglot.tokens import TokenType

from runner.errors import Violation
from runner.lint.checks.aggregate_calls import NONDETERMINISTIC
from runner.lint.checks.aggregation import Grouping, column_path, expression_key
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import (
    grouping_aggregates,
    is_aggregate_call,
    is_window_function,
    own_nodes,
)
from runner.lint.resolution.shapes import Output
from runner.lint.resolution.unique import grouping_sets
from runner.lint.spark_types.builtins import signature
from runner.lint.spark_types.infer import is_generator
from runner.lint.sql.spark_dialect import SPARK

__all__ = ["QueryShape"]

#: Where a subquery is a relation or a predicate's operand, not a scalar value.
_NOT_SCALAR = (exp.From, exp.Join, exp.In, exp.Exists, exp.Any, exp.All, exp.Lateral,
               exp.SetOperation, exp.CTE, exp.Subquery, exp.Table, exp.Values)


def _width(query: exp.Expr, counted: Mapping[int, list[Output]] | None = None) -> int | None:
    """How many columns ``query`` returns, when lint can count them (no ``*``, unless name
    resolution ``counted`` its columns: :attr:`~runner.lint.resolution.shapes.Analysis.selects`)."""
    while isinstance(query, exp.Subquery):
        query = query.this
    if isinstance(query, exp.SetOperation):
        return _width(query.left, counted)
    if not isinstance(query, exp.Select) or any(_many(p) for p in query.expressions):
        known = counted.get(id(query)) if counted is not None else None
        return len(known) if known is not None and all(_star(p) for p in query.expressions
                                                        if _many(p)) else None
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


#: The fields EXTRACT and date_part take (Spark's DatePart.parseExtractField), with their
#: other spellings.
_EXTRACT_FIELDS = frozenset({
    "YEAR", "Y", "YEARS", "YR", "YRS", "YEAROFWEEK", "QUARTER", "QTR", "MONTH", "MON", "MONS",
    "MONTHS", "WEEK", "W", "WEEKS", "DAY", "D", "DAYS", "DAYOFWEEK", "DOW", "DAYOFWEEK_ISO",
    "DOW_ISO", "DOY", "HOUR", "H", "HOURS", "HR", "HRS", "MINUTE", "M", "MIN", "MINS",
    "MINUTES", "SECOND", "S", "SEC", "SECONDS", "SECS"})


#: The fields EXTRACT takes of an ANSI interval (Spark's ExtractIntervalPart), by spelling:
#: (year-month or day-time, the unit's place in its type's range).
_INTERVAL_FIELDS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("YEAR", "Y", "YEARS", "YR", "YRS"), ("ym", 0)),
    **dict.fromkeys(("MONTH", "MON", "MONS", "MONTHS"), ("ym", 1)),
    **dict.fromkeys(("DAY", "D", "DAYS"), ("dt", 0)),
    **dict.fromkeys(("HOUR", "H", "HOURS", "HR", "HRS"), ("dt", 1)),
    **dict.fromkeys(("MINUTE", "M", "MIN", "MINS", "MINUTES"), ("dt", 2)),
    **dict.fromkeys(("SECOND", "S", "SEC", "SECONDS", "SECS"), ("dt", 3))}
#: An interval literal's unit (plural folded) -> its place, as :data:`_INTERVAL_FIELDS`.
_INTERVAL_UNITS = {"YEAR": ("ym", 0), "MONTH": ("ym", 1), "DAY": ("dt", 0), "HOUR": ("dt", 1),
                   "MINUTE": ("dt", 2), "SECOND": ("dt", 3)}


def _interval_range(node: exp.Expr) -> tuple[str, int, int] | None:
    """(kind, first, last place) of an ANSI interval literal's type (``INTERVAL '2-1' YEAR TO
    MONTH``: year-month, 0 to 1); None for anything else (a multi-unit literal too)."""
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        return None
    unit = node.args.get("unit")
    ends = [unit.this, unit.expression] if isinstance(unit, exp.IntervalSpan) else [unit]
    places = [_INTERVAL_UNITS.get(e.name.upper().removesuffix("S")) if isinstance(e, exp.Var)
              else None for e in ends]
    if any(p is None for p in places) or len({p[0] for p in places if p}) != 1:
        return None
    first, last = places[0], places[-1]
    assert first is not None and last is not None
    return first[0], first[1], last[1]


def _name(call: exp.Expr) -> str:
    return "grouping_id" if isinstance(call, exp.GroupingId) else "grouping"


def _except_path(item: exp.Expr) -> tuple[str, ...] | None:
    """The lower-cased name parts of a ``* EXCEPT`` item, as written."""
    fields: list[str] = []
    while isinstance(item, exp.Dot) and isinstance(item.expression, exp.Identifier):
        fields.insert(0, item.expression.name.lower())
        item = item.this
    if not isinstance(item, exp.Column):
        return None
    return (*(p.name.lower() for p in item.parts), *fields)


def _reads_beyond_outputs(having: exp.Expr, select: exp.Select) -> bool:
    """HAVING needs a value the select list does not have: an aggregate that is not one of
    its items, or a column that is none of its output names (Spark then computes it in the
    aggregate, hidden, and a projection of the select list's columns follows the filter)."""
    items = {expression_key(p.unalias()) for p in select.expressions}
    names = {p.alias_or_name.lower() for p in select.expressions}
    stack = [having]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.Subquery, exp.Query)) or expression_key(node) in items:
            continue  # a select-list item (SUM(b) + 1 in HAVING SUM(b) + 1 > 0) is its column
        if is_aggregate_call(node) and not is_window_function(node):
            return True
        if isinstance(node, exp.Column) and not node.is_star and node.name.lower() not in names:
            return True
        stack.extend(node.iter_expressions())
    return False


def _written_cte(sql: str, cte: exp.CTE) -> bool:
    """``cte`` is written in a WITH clause (its name follows WITH or a comma), not made by
    sqlglot of a pipe operator (``|> AS t`` names a subquery; two may share a name)."""
    alias = cte.args.get("alias")
    ident = alias.this if isinstance(alias, exp.TableAlias) else None
    meta = ident._meta if isinstance(ident, exp.Identifier) else None  # noqa: SLF001
    start = meta.get("start") if meta else None
    if not isinstance(start, int):
        return False
    before = [t for t in SPARK.tokenizer().tokenize(sql) if t.end < start]
    return bool(before) and before[-1].token_type in (TokenType.WITH, TokenType.COMMA,
                                                      TokenType.RECURSIVE)


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
    ([INVALID_LIMIT_LIKE_EXPRESSION]); no IN/EXISTS subquery in a plain SELECT's ORDER BY; one
    WITH names each CTE once ([DUPLICATED_CTE_NAMES]); ORDER BY over a HAVING that reads what
    the select list does not orders by output columns and grouped columns only
    ([UNRESOLVED_COLUMN]); grouping() and grouping_id() name their grouping sets' expressions;
    * EXCEPT names no column twice ([EXCEPT_OVERLAPPING_COLUMNS]); EXTRACT names a field Spark
    has."""

    id = "query-shape"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        for select in ctx.nodes.of(exp.Select):
            yield from self._ordinals(ctx, select)
            yield from self._qualify(ctx, select)
            yield from self._order_over_having(ctx, select)
            yield from self._grouping_calls(ctx, select)
        for star in ctx.nodes.of(exp.Star):
            yield from self._except(ctx, star)
            holder = star.parent if isinstance(star.parent, exp.Column) else star
            if isinstance(holder.parent, exp.Alias) and holder.parent.this is holder:
                yield self.at(ctx, holder, "[INVALID_USAGE_OF_STAR_OR_REGEX] a star is many "
                              f"columns: it takes no alias ({holder.parent.sql('spark')})",
                              "drop the alias, or alias each column")
        for call in ctx.nodes.of(exp.Extract, exp.Anonymous):
            yield from self._extract(ctx, call)
        for sub in ctx.nodes.of(exp.Subquery):
            width = _width(sub, ctx.analysis.selects if ctx.analysis is not None else None)
            if width is not None and width > 1 and sub.parent is not None and not isinstance(
                    sub.parent, _NOT_SCALAR):
                yield self.at(ctx, sub, "[INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_"
                              f"MORE_THAN_ONE_OUTPUT_COLUMN] this subquery is a value and "
                              f"returns {width} columns, not one",
                              "select one column, or join the subquery instead")
        for with_ in ctx.nodes.of(exp.With):
            yield from self._ctes(ctx, with_)
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
                next(grouping_aggregates(p), None) is not None for p in select.expressions):
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
            elif next(grouping_aggregates(select.expressions[n - 1]), None) is not None:
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
    def _ctes(self, ctx: ModelContext, with_: exp.With) -> Iterator[Violation]:
        seen: set[str] = set()
        for cte in with_.expressions:
            name = cte.alias_or_name
            if name.lower() in seen and _written_cte(ctx.model.sql, cte):
                yield self.at(ctx, cte.args.get("alias") or cte, f"[DUPLICATED_CTE_NAMES] the "
                              f"WITH clause defines '{name}' twice", "give each CTE its own name")
            seen.add(name.lower())

    def _order_over_having(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        having, order = select.args.get("having"), select.args.get("order")
        if having is None or order is None or not _reads_beyond_outputs(having.this, select):
            return
        group = select.args.get("group")
        grouped = {expression_key(e) for e in (group.expressions if group is not None else [])
                   if not isinstance(e, (exp.Column, exp.Literal))}
        for ordered in order.expressions:
            found = next((n for n in own_nodes(ordered.this)
                          if (is_aggregate_call(n) and not is_window_function(n))
                          or (grouped and expression_key(n) in grouped)), None)
            if found is not None:
                text = found.sql(dialect="spark", comments=False)
                yield self.at(ctx, ordered, f"[UNRESOLVED_COLUMN] Spark cannot order by {text}"
                              " here: HAVING reads what the select list does not, and ORDER BY"
                              " then sees the select list's columns and grouped columns only",
                              f"select {text} with an alias and order by the alias")

    def _grouping_calls(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        calls = [n for root in (*select.expressions, select.args.get("having"),
                                select.args.get("order")) for n in own_nodes(root)
                 if isinstance(n, (exp.Grouping, exp.GroupingId))]
        if not calls:
            return
        group = select.args.get("group")
        if not grouping_sets(group):  # the grouping-shape rule's refusal (lint/grouping.py)
            return
        grouped = Grouping(select, {}, {})
        for call in calls:
            for arg in call.expressions:
                path = column_path(arg)
                if expression_key(arg) not in grouped.keys and not (path and any(
                        form in grouped.paths for form in grouped.forms(path))):
                    text = arg.sql(dialect="spark", comments=False)
                    yield self.at(ctx, arg, f"[GROUPING_COLUMN_MISMATCH] {_name(call)}({text})"
                                  f": {text} is not one of the grouping sets' expressions",
                                  "name an expression of GROUP BY")

    def _except(self, ctx: ModelContext, star: exp.Star) -> Iterator[Violation]:
        paths = [_except_path(item) for item in star.args.get("except_") or []]
        for i, path in enumerate(paths):
            other = next((p for p in paths[:i] if p and path and (
                p[:len(path)] == path or path[:len(p)] == p)), None)
            if other is not None and path is not None:
                yield self.at(ctx, star, f"[EXCEPT_OVERLAPPING_COLUMNS] * EXCEPT names "
                              f"{'.'.join(path)} and {'.'.join(other)}, which overlap",
                              "name each column (or field) once")

    def _extract(self, ctx: ModelContext, node: exp.Expr) -> Iterator[Violation]:
        if isinstance(node, exp.Extract):
            unit = node.this
            field = unit.name if isinstance(unit, (exp.Var, exp.Column)) else None
            source = node.expression
        elif node.name.lower() in ("date_part", "datepart") and node.expressions and \
                isinstance(node.expressions[0], exp.Literal) and node.expressions[0].is_string:
            field = node.expressions[0].name
            source = node.expressions[1] if len(node.expressions) > 1 else None
        else:
            return
        if field is not None and field.upper() not in _EXTRACT_FIELDS:
            yield self.at(ctx, node, f"[INVALID_EXTRACT_FIELD] Spark cannot extract "
                          f"'{field}'", "a field such as YEAR, MONTH, DAY, HOUR, MINUTE, "
                          "SECOND, QUARTER, WEEK, DAYOFWEEK, DOY")
            return
        span = _interval_range(source) if field is not None and source is not None else None
        place = _INTERVAL_FIELDS.get(field.upper()) if field is not None else None
        if span is not None and (place is None or place[0] != span[0]
                                 or not span[1] <= place[1] <= span[2]):
            yield self.at(ctx, node, f"[INVALID_EXTRACT_FIELD] Spark cannot extract "
                          f"'{field}' from {source.sql(dialect='spark')}",
                          "extract a unit of the interval's own range")

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
