"""Spark analyzer errors caught offline: what ``spark.sql`` would refuse when the stream starts.

Each rule mirrors one of Spark's analysis error classes, so that a pull request fails at
``runner compile`` instead of the stream failing at run time:

- ``missing-aggregation``: ``[MISSING_AGGREGATION]`` / ``[MISSING_GROUP_BY]``, a column that
  is neither grouped nor inside an aggregate in an aggregating SELECT
  (``[UNRESOLVED_ALL_IN_GROUP_BY]`` under GROUP BY ALL);
- ``misplaced-aggregate``: aggregates or window functions in WHERE, JOIN ... ON or GROUP BY,
  and an aggregate nested in another (``[NESTED_AGGREGATE_FUNCTION]``);
- ``window-order``: ranking and offset window functions without ORDER BY;
- ``ambiguous-column``: ``[AMBIGUOUS_REFERENCE]``, found by name resolution;
- ``type-mismatch``: comparing a struct, array or map with a value of another kind.

When in doubt a rule does not flag: a name it cannot place is left to ``unknown-column``.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.aggregation import (
    Grouping,
    aggregates_or_windows,
    column_path,
    expression_key,
    select_sources,
    unalias,
)
from runner.lint.checks.rules import ModelRule, time_column
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import (
    NESTED,
    grouping_aggregates,
    is_aggregate_call,
    is_window_function,
    own_nodes,
)
from runner.lint.resolution.shapes import Analysis
from runner.lint.resolution.spark_names import generator_call
from runner.lint.spark_types.infer import is_, is_known, type_string

__all__ = ["AmbiguousColumn", "MisplacedAggregate", "MissingAggregation", "TypeMismatch",
           "WindowOrder"]

class MissingAggregation(ModelRule):
    """In a SELECT that aggregates (GROUP BY, or an aggregate function), every column outside
    an aggregate must be in GROUP BY: Spark refuses the query ([MISSING_AGGREGATION])."""

    id = "missing-aggregation"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        aggregating = aggregates_or_windows(ctx)
        for select in ctx.nodes.of(exp.Select):
            if aggregating or select.args.get("group") is not None:
                yield from self._select(ctx, select)

    def _select(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        group = select.args.get("group")
        if group is not None and group.args.get("all"):
            yield from self._group_by_all(ctx, select)
            return
        clauses = [*select.expressions, select.args.get("having"), select.args.get("order")]
        if group is None and not any(next(grouping_aggregates(c), None) for c in clauses):
            return
        grouping = Grouping(select, ctx.analysis.generated if ctx.analysis else {},
                             ctx.analysis.sources if ctx.analysis else {})
        aliases: set[str] = set()
        seen: set[str] = set()
        # a name that does not resolve is unknown-column's finding, not this rule's; a name
        # of an enclosing query is one value per group of this one
        unknown = {id(f.node) for f in ctx.analysis.unknown_columns} | \
            ctx.analysis.outer_references if ctx.analysis else set()
        for projection in select.expressions:
            for node in self._ungrouped(projection, grouping, aliases):
                if any(id(n) in unknown for n in node.walk()):
                    continue
                if expression_key(node) not in seen:
                    seen.add(expression_key(node))
                    yield self._violation(ctx, node, group is not None)
            if isinstance(projection, exp.Alias):  # lateral column aliases, then HAVING/ORDER
                aliases.add(projection.alias.lower())
            elif id(projection) in grouping.generated:  # ORDER BY `count(1)`
                aliases.add(grouping.generated[id(projection)].lower())
        for clause in clauses[-2:]:
            for node in self._ungrouped(clause, grouping, aliases):
                if any(id(n) in unknown for n in node.walk()):
                    continue
                if expression_key(node) not in seen:
                    seen.add(expression_key(node))
                    yield self._violation(ctx, node, group is not None)

    def _group_by_all(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        """GROUP BY ALL groups by the select-list items without an aggregate; an item with
        an aggregate and a column outside it that none of those groups is what Spark cannot
        infer ([UNRESOLVED_ALL_IN_GROUP_BY]: ``SELECT id + count(*) ... GROUP BY ALL``)."""
        analysis = ctx.analysis
        if analysis is None:
            return
        items = [p for p in select.expressions if not isinstance(p, exp.Star)]
        with_aggregate = [p for p in items if next(grouping_aggregates(p), None) is not None]
        if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
               for p in select.expressions):
            return
        grouping = Grouping(select, analysis.generated, analysis.sources)
        for p in items:
            call = generator_call(p)
            if call is not None:  # its arguments without an aggregate are grouped
                for arg in call.iter_expressions():
                    if next(grouping_aggregates(arg), None) is None:
                        grouping.add(arg)
            elif p not in with_aggregate:
                grouping.add(unalias(p))
        with_aggregate = [p for p in with_aggregate if generator_call(p) is None]
        aliases = {p.alias.lower() for p in items if isinstance(p, exp.Alias)}
        skip = {id(f.node) for f in analysis.unknown_columns} | analysis.outer_references
        for item in with_aggregate:
            for node in self._ungrouped(item, grouping, aliases):
                if any(id(n) in skip for n in node.walk()):
                    continue
                text = node.sql(dialect="spark", comments=False)
                yield self.at(ctx, node, f"[UNRESOLVED_ALL_IN_GROUP_BY] GROUP BY ALL cannot "
                              f"group by this item: '{text}' is outside its aggregate",
                              "list the GROUP BY columns, or aggregate the column too")
                break
        if items and len(with_aggregate) == len(items):  # no item to group by
            column = next((c for p in items for c in _correlated(p, select, analysis)), None)
            if column is not None:
                yield self.at(ctx, column, "[UNRESOLVED_ALL_IN_GROUP_BY] GROUP BY ALL finds no "
                              f"item without an aggregate, and a subquery reads {column.sql()}"
                              " outside one", "list the GROUP BY columns")
        for clause in (select.args.get("having"), select.args.get("order")):
            # HAVING / ORDER BY read the groups: a column no item groups is not there
            for node in self._ungrouped(clause, grouping, aliases):
                if any(id(n) in skip for n in node.walk()):
                    continue
                text = node.sql(dialect="spark", comments=False)
                yield self.at(ctx, node, f"[UNRESOLVED_COLUMN] '{text}' is not grouped by "
                              "GROUP BY ALL (the select list's items without an aggregate) "
                              "nor inside an aggregate", "select it, or aggregate it")
                break

    def _violation(self, ctx: ModelContext, node: exp.Expr, grouped: bool) -> Violation:
        text = node.sql(dialect="spark", comments=False)
        where = "in GROUP BY" if grouped else "grouped (the SELECT aggregates all rows)"
        return self.at(ctx, node, f"'{text}' is neither {where} nor inside an aggregate "
                       "function", f"add {text} to GROUP BY, or aggregate it, e.g. "
                       f"any_value({text})")

    def _ungrouped(self, root: exp.Expr | None, grouping: Grouping,
                   aliases: set[str]) -> Iterator[exp.Expr]:
        """Column references under ``root`` that are neither grouped nor aggregated."""
        stack = [root] if root is not None else []
        while stack:
            node = stack.pop()
            if isinstance(node, NESTED) or (type(node) in grouping.types
                                             and expression_key(node) in grouping.keys):
                continue
            path = column_path(node)
            if path is not None:
                if not grouping.covers(path, node) and not (len(path) == 1
                                                            and path[0] in aliases):
                    yield node
                continue
            if is_aggregate_call(node) and not is_window_function(node):
                continue
            stack.extend(reversed(list(node.iter_expressions())))


def _correlated(item: exp.Expr, select: exp.Select, analysis: Analysis
                ) -> Iterator[exp.Column]:
    """Columns of ``select``'s relations that a subquery in ``item`` reads (qualified by an
    alias of ``select``'s FROM that the subquery does not name itself): to Spark, attributes
    of the select list outside any aggregate."""
    own = {s.alias_or_name.lower() for s in select_sources(select)}
    for sub in item.walk(prune=lambda n: isinstance(n, NESTED)):
        if not isinstance(sub, NESTED):
            continue
        inner = {t.alias_or_name.lower() for t in sub.find_all(exp.Table, exp.Subquery)
                 if id(t) != id(sub)}
        for col in sub.find_all(exp.Column):
            if id(col) in analysis.outer_references and col.table and \
                    col.table.lower() in own - inner:
                yield col


_CLAUSES = (("where", "WHERE", "filters rows before they are grouped",
             "filter on the aggregate in HAVING"),
            ("group", "GROUP BY", "defines the groups the aggregates run over",
             "group by the column itself"))


class MisplacedAggregate(ModelRule):
    """Aggregate and window functions belong in the select list, HAVING, QUALIFY or ORDER BY:
    not in WHERE, JOIN ... ON or GROUP BY, and an aggregate cannot contain another."""

    id = "misplaced-aggregate"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not aggregates_or_windows(ctx):
            return
        for select in ctx.nodes.of(exp.Select):
            clauses = [(select.args.get(k), name, why, fix) for k, name, why, fix in _CLAUSES]
            clauses += [(j.args.get("on"), "JOIN ... ON", "matches rows before they are "
                         "grouped", "aggregate in a subquery, then join it")
                        for j in select.args.get("joins") or []]
            for clause, name, why, fix in clauses:
                for node in own_nodes(clause):
                    if isinstance(node, exp.Window):
                        yield self.at(ctx, node, f"window function in {name}: {name} {why}",
                                      "compute it in a subquery, or filter with QUALIFY")
                    elif is_aggregate_call(node) and not is_window_function(node) \
                            and not _outer_aggregate(node, select):
                        yield self.at(ctx, node, f"aggregate function {_name(node)} in "
                                      f"{name}: {name} {why}", fix)
            yield from self._grouped_aggregate_alias(ctx, select)
            for node in grouping_aggregates(select):
                if isinstance(node, (exp.Filter, exp.WithinGroup)):
                    continue  # wrappers: the aggregate inside is checked itself
                inner = next((n for n in grouping_aggregates(node) if n is not node), None)
                if inner is not None:
                    yield self.at(ctx, inner, f"aggregate function {_name(inner)} inside "
                                  f"{_name(node)}: aggregates cannot be nested",
                                  "aggregate in a subquery first, or make the outer one a "
                                  "window function (... OVER ())")


    def _grouped_aggregate_alias(self, ctx: ModelContext, select: exp.Select
                                 ) -> Iterator[Violation]:
        """``SELECT count(b) AS k ... GROUP BY k``: the alias (no column of the FROM clause
        has that name) is the aggregate, which Spark cannot group by ([GROUP_BY_AGGREGATE])."""
        group = select.args.get("group")
        if group is None or ctx.analysis is None:
            return
        aliases: dict[str, exp.Expr] = {}
        for p in select.expressions:
            if isinstance(p, exp.Alias):
                aliases.setdefault(p.alias.lower(), p.this)
        unknown = {id(f.node) for f in ctx.analysis.unknown_columns}
        for item in group.expressions:
            if not isinstance(item, exp.Column) or item.table or id(item) in \
                    ctx.analysis.sources or id(item) in unknown:
                continue
            target = aliases.get(item.name.lower())
            aggregate = next(grouping_aggregates(target), None) if target else None
            if aggregate is not None:
                yield self.at(ctx, item, f"[GROUP_BY_AGGREGATE] GROUP BY {item.name} names the "
                              f"select list's aggregate {_name(aggregate)}: GROUP BY "
                              "defines the groups the aggregates run over",
                              "group by the column itself")


def _outer_aggregate(node: exp.Expr, select: exp.Select) -> bool:
    """``node``, in a subquery's clause, aggregates only columns of an enclosing query: it is
    that query's aggregate (``HAVING (SELECT 1 WHERE max(t.a) = 1) = 1``), not the subquery's."""
    if select.find_ancestor(exp.Select) is None:
        return False
    own = {s.alias_or_name.lower() for s in select_sources(select)}
    columns = [c for c in node.find_all(exp.Column) if not c.is_star]
    return bool(columns) and all(
        (c.table.lower() not in own) if c.table else not own for c in columns)


def _name(node: exp.Expr) -> str:
    return node.sql(dialect="spark", comments=False).split("(")[0].lower() + "()"


_NEEDS_ORDER = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist,
                exp.Ntile, exp.Lag, exp.Lead)


class WindowOrder(ModelRule):
    """Ranking and offset window functions (row_number, rank, dense_rank, percent_rank,
    cume_dist, ntile, lag, lead) need ORDER BY in their window."""

    id = "window-order"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.Window):
            return
        for select in ctx.nodes.of(exp.Select):
            named = {w.name.lower(): w for w in select.args.get("windows") or []}
            for window in own_nodes(select):
                if not isinstance(window, exp.Window) or window.parent is select and (
                        window in (select.args.get("windows") or [])):
                    continue
                func = window.this
                while isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
                    func = func.this
                if not isinstance(func, _NEEDS_ORDER) or window.args.get("order"):
                    continue
                alias = window.args.get("alias")
                base = named.get(alias.name.lower()) if alias else None
                if alias and (base is None or base.args.get("order")):
                    continue  # ordered by its named window, or one we cannot see
                name = _name(func)
                ts = time_column(ctx, events_first=True)
                yield self.at(ctx, window, f"window function {name} needs ORDER BY in its "
                              "window: without one its result is not defined",
                              f"{name} OVER (PARTITION BY ... ORDER BY {ts})")


class AmbiguousColumn(ModelRule):
    """An unqualified column must name a column of exactly one of the joined relations:
    qualify it (alias.column) when two have it."""

    id = "ambiguous-column"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.analysis is not None:
            yield from self.findings(ctx, ctx.analysis.ambiguous_columns)


_COMPLEX = (exp.DType.STRUCT, exp.DType.ARRAY, exp.DType.MAP)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)


def _operand_type(node: exp.Expr) -> exp.DataType | None:
    if isinstance(node, exp.Literal):
        return exp.DataType.build("STRING" if node.is_string else "DOUBLE")
    dtype = node.type
    return dtype if is_known(dtype) and not is_(dtype, exp.DType.NULL) else None


class TypeMismatch(ModelRule):
    """A comparison needs comparable sides: a struct, array or map cannot be compared with a
    value of another kind, and maps cannot be compared at all."""

    id = "type-mismatch"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or ctx.analysis is None:
            return
        for node in ctx.nodes.of(*_COMPARISONS):
            left, right = _operand_type(node.this), _operand_type(node.expression)
            if left is None or right is None:
                continue
            kinds = {t.this for t in (left, right) if t.this in _COMPLEX}
            if not kinds or (len(kinds) == 1 and left.this == right.this
                             and exp.DType.MAP not in kinds):
                continue
            side = node.this if left.this in _COMPLEX else node.expression
            text = side.sql(dialect="spark", comments=False)
            yield self.at(ctx, node, f"cannot compare {type_string(left)} with "
                          f"{type_string(right)}", f"compare a field or an element of {text} "
                          f"instead (e.g. {text}.<field>, {text}[0])")
