"""Correlated subqueries, as Spark's ``CheckAnalysis.checkSubqueryExpression`` and
``checkCorrelationsInSubquery`` check them:

- an aggregate in a subquery reads the outer query's columns or its own, not both
  (``[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.AGGREGATE_FUNCTION_MIXED_OUTER_LOCAL_REFERENCES]``:
  ``min(t1.a + t2.b)``);
- an aggregate of only outer columns (``EXISTS (SELECT max(t1.a) FROM t2)``) is computed by
  the outer query when that query aggregates; when no enclosing query does, it stays in the
  subquery's aggregate, which cannot host an outer reference
  (``[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.CORRELATED_REFERENCE]``);
- a correlated scalar subquery is a value of a projection, filter or aggregate: not of the
  ORDER BY of a SELECT that does not aggregate (a sort:
  ``[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.UNSUPPORTED_CORRELATED_SCALAR_SUBQUERY]``);
- a correlated ``LATERAL (SELECT ...)`` over a relation of many rows calls nothing random
  (``[UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.NON_DETERMINISTIC_LATERAL_SUBQUERIES]``);
- a subquery in the HAVING of a SELECT grouped by columns reads, outside aggregates, only the
  columns it groups: HAVING filters groups (``[MISSING_ATTRIBUTES.
  RESOLVED_ATTRIBUTE_MISSING_FROM_INPUT]``).

A column is outer when name resolution (:mod:`runner.lint.resolution.resolve`) resolved it in an
enclosing query; only the columns of a subquery's own SELECT are read (a deeper one's are its own
business).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.aggregate_calls import NONDETERMINISTIC
from runner.lint.checks.aggregation import select_sources
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import grouping_aggregates, is_aggregate_call, own_nodes
from runner.lint.resolution.shapes import Analysis, Finding

__all__ = ["SubqueryShape", "subquery_problems"]

_CATEGORY = "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY"
#: Where a subquery is a relation, not an expression.
_RELATION = (exp.From, exp.Join, exp.Lateral, exp.CTE, exp.SetOperation, exp.Subquery,
             exp.Table)


def subquery_problems(query: exp.Expr, analysis: Analysis) -> Iterator[Finding]:
    """What Spark refuses of the correlated subqueries under ``query``."""
    outer = analysis.outer_references
    for select in query.find_all(exp.Select):
        yield from _aggregates(select, analysis)
        yield from _sorted_by_correlated(select, outer)
        yield from _ungrouped_in_having(select, analysis)
    for lateral in query.find_all(exp.Lateral):
        yield from _random_lateral(lateral, outer)


def _columns(node: exp.Expr) -> list[exp.Column]:
    return [c for c in own_nodes(node) if isinstance(c, exp.Column) and not c.is_star]


def _aggregates(select: exp.Select, analysis: Analysis) -> Iterator[Finding]:
    outer = analysis.outer_references
    host = _expression_subquery(select)
    parts = [*select.expressions, select.args.get("having")]
    for call in (c for p in parts for c in grouping_aggregates(p)):
        columns = _columns(call)
        outside = [c for c in columns if id(c) in outer]
        if not outside:
            continue
        local = [c for c in columns if id(c) not in outer and id(c) in analysis.sources]
        if local:
            yield Finding(call, f"[{_CATEGORY}.AGGREGATE_FUNCTION_MIXED_OUTER_LOCAL_REFERENCES] "
                          f"{call.sql('spark')} reads the outer query's "
                          f"{outside[0].sql('spark')} and the subquery's "
                          f"{local[0].sql('spark')}", "aggregate the subquery's columns only; "
                          "compare the result with the outer column outside the aggregate")
        elif len(outside) == len(columns) and host is not None and not any(
                _aggregating(s) for s in _enclosing(host)):
            yield Finding(call, f"[{_CATEGORY}.CORRELATED_REFERENCE] {call.sql('spark')} "
                          "aggregates the outer query's columns, and no enclosing query "
                          "aggregates", "aggregate in the outer query, or read the outer "
                          "column in the subquery's WHERE")


def _expression_subquery(select: exp.Select) -> exp.Expr | None:
    """The subquery expression (scalar, IN, EXISTS) whose query ``select`` is (its Subquery
    node, or the EXISTS), if any."""
    node: exp.Expr = select
    while isinstance(node.parent, exp.SetOperation):
        node = node.parent
    parent = node.parent
    if isinstance(parent, exp.Exists):
        return parent
    if isinstance(parent, exp.Subquery) and not isinstance(parent.parent, _RELATION):
        return parent
    return None


def _enclosing(node: exp.Expr) -> Iterator[exp.Select]:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Select):
            yield parent
        parent = parent.parent


def _aggregating(select: exp.Select) -> bool:
    return select.args.get("group") is not None or any(
        next(grouping_aggregates(p), None) is not None
        for p in [*select.expressions, select.args.get("having")])


def _sorted_by_correlated(select: exp.Select, outer: set[int]) -> Iterator[Finding]:
    order = select.args.get("order")
    if order is None or _aggregating(select):
        return
    for sub in order.find_all(exp.Subquery):
        if isinstance(sub.parent, (exp.Exists, exp.In, *_RELATION)):
            continue
        inner = sub.unnest()
        column = next((c for c in _columns(inner) if id(c) in outer), None) \
            if isinstance(inner, exp.Select) else None
        if column is not None:
            yield Finding(column, f"[{_CATEGORY}.UNSUPPORTED_CORRELATED_SCALAR_SUBQUERY] ORDER "
                          f"BY holds a subquery that reads the query's {column.sql('spark')}",
                          "compute it as a select item (`... AS v`) and order by its alias")
            return


def _ungrouped_in_having(select: exp.Select, analysis: Analysis) -> Iterator[Finding]:
    """A subquery in the HAVING of a SELECT grouped by columns reads, outside an aggregate,
    a column of that SELECT's relations it does not group: HAVING filters the groups, which
    have no such column ([MISSING_ATTRIBUTES.RESOLVED_ATTRIBUTE_MISSING_FROM_INPUT])."""
    group, having = select.args.get("group"), select.args.get("having")
    keys = group.expressions if group is not None else []
    if having is None or not keys or group is None or any(
            group.args.get(k) for k in ("all", "cube", "rollup", "grouping_sets")) or \
            not all(isinstance(k, exp.Column) for k in keys):
        return
    grouped = {k.name.lower() for k in keys}
    shapes = [analysis.sources[id(c)] for c in _columns(select) if id(c) in analysis.sources]
    aliases = {s.alias_or_name.lower() for s in select_sources(select)}
    for inner in having.find_all(exp.Select):
        for col in _columns(inner):
            if id(col) not in analysis.outer_references or col.name.lower() in grouped or \
                    any(is_aggregate_call(a) for a in _between(col, inner)):
                continue
            source = analysis.sources.get(id(col))  # the relation it resolved to is the
            if any(source is s for s in shapes) and (  # SELECT's, and the name is not another's
                    col.table.lower() in aliases if col.table else True):
                yield Finding(col, "[MISSING_ATTRIBUTES.RESOLVED_ATTRIBUTE_MISSING_FROM_INPUT] "
                              f"a subquery in HAVING reads {col.sql('spark')}, which the "
                              "groups do not have", "group by it too, or aggregate it")
                return


def _between(node: exp.Expr, top: exp.Expr) -> Iterator[exp.Expr]:
    """The ancestors of ``node`` below ``top``."""
    parent = node.parent
    while parent is not None and parent is not top:
        yield parent
        parent = parent.parent


def _random_lateral(lateral: exp.Lateral, outer: set[int]) -> Iterator[Finding]:
    inner = lateral.this.unnest() if isinstance(lateral.this, exp.Query) else None
    select = lateral.parent.parent if isinstance(lateral.parent, exp.Join) else None
    if not isinstance(inner, exp.Select) or not isinstance(select, exp.Select) or \
            not any(id(c) in outer for c in _columns(inner)) or not _many_rows(select):
        return
    random = next((n for n in own_nodes(inner) if isinstance(n, exp.Func) and (
        n.name if isinstance(n, exp.Anonymous) else n.sql_name()).lower() in NONDETERMINISTIC),
        None)
    if random is not None:
        yield Finding(random, f"[{_CATEGORY}.NON_DETERMINISTIC_LATERAL_SUBQUERIES] a "
                      f"correlated LATERAL subquery calls {random.sql('spark')}, whose value "
                      "differs from call to call", "compute the random value in the outer "
                      "query and read it in the subquery")


def _many_rows(select: exp.Select) -> bool:
    """The FROM relation of ``select`` surely has no bound of one row: a table, or a SELECT
    with a FROM that neither aggregates without GROUP BY nor has a LIMIT."""
    from_ = select.args.get("from_")
    relation = from_.this if from_ is not None else None
    if isinstance(relation, exp.Table):
        return not relation.args.get("pivots")
    query = relation.unnest() if isinstance(relation, exp.Subquery) else None
    return isinstance(query, exp.Select) and query.args.get("from_") is not None and \
        query.args.get("limit") is None and (query.args.get("group") is not None or not any(
            is_aggregate_call(n) for p in query.expressions for n in own_nodes(p)))


class SubqueryShape(ModelRule):
    """Correlated subqueries are what Spark decorrelates: an aggregate reads outer or local
    columns, not both ([...AGGREGATE_FUNCTION_MIXED_OUTER_LOCAL_REFERENCES]), and only outer
    ones when an enclosing query aggregates ([...CORRELATED_REFERENCE]); no correlated
    scalar subquery in a plain SELECT's ORDER BY ([...UNSUPPORTED_CORRELATED_SCALAR_SUBQUERY]);
    nothing random in a correlated LATERAL subquery
    ([...NON_DETERMINISTIC_LATERAL_SUBQUERIES]); a subquery in HAVING reads the grouped
    columns of its SELECT only ([MISSING_ATTRIBUTES.RESOLVED_ATTRIBUTE_MISSING_FROM_INPUT])."""

    id = "subquery-shape"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is not None and ctx.analysis is not None and \
                ctx.analysis.outer_references:
            yield from self.findings(ctx, subquery_problems(ctx.query, ctx.analysis))
