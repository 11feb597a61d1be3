"""The shape of an aggregating SELECT, as Spark's analyser checks it (``CheckAnalysis``,
``ResolveGroupingAnalytics``, ``SubstituteUnresolvedOrdinals``; GROUP BY ALL's
``[UNRESOLVED_ALL_IN_GROUP_BY]`` is the ``missing-aggregation`` rule's):

- ``grouping()`` / ``grouping_id()`` need ``ROLLUP``, ``CUBE`` or ``GROUPING SETS`` in the
  query's GROUP BY (``[UNSUPPORTED_GROUPING_EXPRESSION]``), and in HAVING or ORDER BY a
  grouping set that is not empty (``GROUPING SETS ((), ())`` serves only the select list);
- ``SELECT *`` does not go with ``GROUP BY <position>`` (``[STAR_GROUP_BY_POS]``);
- ``ORDER BY`` an aggregate is not resolved into a query that also computes window functions
  over its groups, nor over ``HAVING`` on a NATURAL join's groups: Spark leaves the aggregate
  in an operator that cannot compute it (``[UNSUPPORTED_EXPR_FOR_OPERATOR]``; over the
  NATURAL join, a column of the ORDER BY may instead be ``[UNRESOLVED_COLUMN]``).


>>> import sqlglot
>>> from runner.lint.sql.spark_dialect import SPARK
>>> q = sqlglot.parse_one("SELECT a, grouping(a) FROM t GROUP BY a", read=SPARK)
>>> [f.message.split("]")[0] for f in grouping_problems(q)]
['[UNSUPPORTED_GROUPING_EXPRESSION']
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import grouping_aggregates, own_nodes
from runner.lint.resolution.shapes import Finding

__all__ = ["GroupingShape", "grouping_problems"]

_ANALYTICS = (exp.Rollup, exp.Cube, exp.GroupingSets)


def grouping_problems(query: exp.Expr) -> Iterator[Finding]:
    """Each aggregating SELECT shape of ``query`` Spark's analyser refuses (see the module)."""
    for select in query.find_all(exp.Select):
        group = select.args.get("group")
        order = select.args.get("order")
        roots = [*select.expressions, select.args.get("having"), order]
        yield from _grouping_calls(group, roots)
        if group is not None and any(isinstance(p, exp.Star) or (
                isinstance(p, exp.Column) and p.is_star) for p in select.expressions):
            ordinal = next((g for g in group.expressions
                            if isinstance(g, exp.Literal) and g.is_int), None)
            if ordinal is not None:
                yield Finding(ordinal, f"[STAR_GROUP_BY_POS] GROUP BY {ordinal.name} names a "
                              "position of a select list with `*`",
                              "group by the columns' names")
        if order is not None:
            yield from _order_by_aggregate(select, order)


def _only_empty_sets(group: exp.Group) -> bool:
    """``GROUP BY GROUPING SETS ((), ())``: two or more grouping sets, every one empty,
    nothing else grouped (Spark's aggregate then has no grouping id for HAVING or ORDER BY to
    read; ``GROUPING SETS (())`` alone it accepts, measured on Spark 4.2's corpus)."""
    sets = group.expressions
    return sum(len(g.expressions) for g in sets if isinstance(g, exp.GroupingSets)) > 1 and all(
        isinstance(g, exp.GroupingSets) and all(
            isinstance(t, exp.Tuple) and not t.expressions for t in g.expressions)
        for g in sets) and not any(group.args.get(k) for k in ("rollup", "cube"))


def _grouping_calls(group: exp.Group | None, roots: list[exp.Expr | None]
                    ) -> Iterator[Finding]:
    needs = "ROLLUP, CUBE or GROUPING SETS in the query's GROUP BY"
    if group is not None and _only_empty_sets(group):
        roots = roots[-2:]  # the select list reads its grouping id, HAVING/ORDER BY cannot
        needs = "a grouping set that is not empty to be read in HAVING or ORDER BY"
    elif group is not None and (group.find(*_ANALYTICS) or any(
            group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))):
        return
    for root in roots:
        for node in own_nodes(root):
            if isinstance(node, (exp.Grouping, exp.GroupingId)):
                name = "grouping" if isinstance(node, exp.Grouping) else "grouping_id"
                yield Finding(node, f"[UNSUPPORTED_GROUPING_EXPRESSION] {name}() needs "
                              f"{needs}",
                              "group by ROLLUP (...) / CUBE (...) / GROUPING SETS (...), or "
                              f"drop {name}(): without them every row is grouped by every "
                              "column")
                return


def _order_by_aggregate(select: exp.Select, order: exp.Order) -> Iterator[Finding]:
    aggregate = next((a for o in order.expressions for a in grouping_aggregates(o)), None)
    if aggregate is None:
        return
    groups = select.args.get("group") is not None or any(
        next(grouping_aggregates(p), None) is not None for p in select.expressions)
    windows = any(isinstance(n, exp.Window) for p in select.expressions for n in own_nodes(p))
    natural = select.args.get("having") is not None and any(
        str(j.args.get("method") or "").upper() == "NATURAL" for j in
        select.args.get("joins") or [])
    if groups and (windows or natural):
        where = "a query with window functions" if windows else "HAVING over a NATURAL join"
        yield Finding(aggregate, f"[UNSUPPORTED_EXPR_FOR_OPERATOR] ORDER BY the aggregate "
                      f"{aggregate.sql()} of {where}: Spark cannot place it",
                      "select the aggregate with an alias and ORDER BY the alias, or sort in"
                      " an outer query")


class GroupingShape(ModelRule):
    """An aggregating SELECT has the shape Spark's analyser resolves: grouping()/grouping_id()
    with ROLLUP, CUBE or GROUPING SETS ([UNSUPPORTED_GROUPING_EXPRESSION]), no `*` with GROUP
    BY a position ([STAR_GROUP_BY_POS]), no ORDER BY an aggregate beside window functions or
    after HAVING over a NATURAL join ([UNSUPPORTED_EXPR_FOR_OPERATOR])."""

    id = "grouping-shape"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.Group, exp.Order, exp.AggFunc):
            return
        yield from self.findings(ctx, grouping_problems(ctx.query))
