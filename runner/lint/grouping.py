"""The shape of an aggregating SELECT, as Spark's analyser checks it (``CheckAnalysis``,
``ResolveGroupingAnalytics``, ``ResolveReferencesInAggregate``' GROUP BY ALL,
``SubstituteUnresolvedOrdinals``):

- ``grouping()`` / ``grouping_id()`` need ``ROLLUP``, ``CUBE`` or ``GROUPING SETS`` in the
  query's GROUP BY (``[UNSUPPORTED_GROUPING_EXPRESSION]``);
- ``GROUP BY ALL`` infers its columns from the select items without an aggregate; when every
  item has one and some item also reads a column outside it (``i + sum(j)``) there are none
  to infer (``[UNRESOLVED_ALL_IN_GROUP_BY]``);
- ``SELECT *`` does not go with ``GROUP BY <position>`` (``[STAR_GROUP_BY_POS]``);
- ``ORDER BY`` an aggregate is not resolved into a query that also computes window functions
  over its groups, nor over ``HAVING`` on a NATURAL join's groups: Spark leaves the aggregate
  in an operator that cannot compute it (``[UNSUPPORTED_EXPR_FOR_OPERATOR]``; over the
  NATURAL join, a column of the ORDER BY may instead be ``[UNRESOLVED_COLUMN]``).

A select list lint cannot read item by item (a ``*`` for GROUP BY ALL, a generator, a lambda,
a column named ``all``) is left to Spark.

>>> import sqlglot
>>> from runner.lint.spark_dialect import SPARK
>>> q = sqlglot.parse_one("SELECT a, grouping(a) FROM t GROUP BY a", read=SPARK)
>>> [f.message.split("]")[0] for f in grouping_problems(q)]
['[UNSUPPORTED_GROUPING_EXPRESSION']
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.analysis import _grouping_aggregates, _is_aggregate, _own
from runner.lint.builtins import signature
from runner.lint.context import ModelContext
from runner.lint.infer import is_generator
from runner.lint.rules import ModelRule
from runner.lint.shapes import Finding

__all__ = ["GroupingShape", "grouping_problems"]

_ANALYTICS = (exp.Rollup, exp.Cube, exp.GroupingSets)


def grouping_problems(query: exp.Expr) -> Iterator[Finding]:
    """Each aggregating SELECT shape of ``query`` Spark's analyser refuses (see the module)."""
    for select in query.find_all(exp.Select):
        group = select.args.get("group")
        order = select.args.get("order")
        roots = [*select.expressions, select.args.get("having"), order]
        yield from _grouping_calls(group, roots)
        if group is not None and group.args.get("all") and not group.expressions:
            yield from _group_by_all(select)
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


def _grouping_calls(group: exp.Group | None, roots: list[exp.Expr | None]
                    ) -> Iterator[Finding]:
    if group is not None and (group.find(*_ANALYTICS) or any(
            group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))):
        return
    for root in roots:
        for node in _own(root):
            if isinstance(node, (exp.Grouping, exp.GroupingId)):
                name = "grouping" if isinstance(node, exp.Grouping) else "grouping_id"
                yield Finding(node, f"[UNSUPPORTED_GROUPING_EXPRESSION] {name}() needs "
                              "ROLLUP, CUBE or GROUPING SETS in the query's GROUP BY",
                              "group by ROLLUP (...) / CUBE (...) / GROUPING SETS (...), or "
                              f"drop {name}(): without them every row is grouped by every "
                              "column")
                return


def _group_by_all(select: exp.Select) -> Iterator[Finding]:
    items = [p.unalias() for p in select.expressions]
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star) for p in items):
        return
    if any(_generator(p) for p in items):
        return  # a generator's arguments are not select items (`stack(2, a, count(b))`)
    if select.find(exp.Lambda) or any(
            n.name.lower() == "all" for n in select.find_all(exp.Column, exp.TableAlias,
                                                             exp.Alias)):
        return  # lambda variables, or a column named `all` that GROUP BY ALL may mean
    if not items or not all(next(_grouping_aggregates(p), None) is not None for p in items):
        return
    reader = next((c for p in items for c in _outside_aggregates(p)), None)
    if reader is not None:
        yield Finding(reader, "[UNRESOLVED_ALL_IN_GROUP_BY] GROUP BY ALL finds no column to "
                      f"group by: every select item aggregates, and `{reader.sql()}` is read "
                      "outside the aggregate", "name the grouping columns (GROUP BY "
                      f"{reader.sql()}), or move `{reader.sql()}` into the aggregate")


def _generator(item: exp.Expr) -> bool:
    if is_generator(item) or isinstance(item, (exp.Explode, exp.Posexplode, exp.Inline)):
        return True
    sig = signature(item.name if isinstance(item, exp.Anonymous) else item.key) \
        if isinstance(item, exp.Func) else None
    return sig is not None and sig.kind == "generator"


def _outside_aggregates(root: exp.Expr) -> Iterator[exp.Column]:
    """Columns of ``root`` read outside any aggregate call and outside nested queries."""
    for node in root.walk(prune=lambda n: _is_aggregate(n) or isinstance(
            n, (exp.Query, exp.Subquery, exp.Window))):
        if isinstance(node, exp.Column) and not node.is_star:
            yield node


def _order_by_aggregate(select: exp.Select, order: exp.Order) -> Iterator[Finding]:
    aggregate = next((a for o in order.expressions for a in _grouping_aggregates(o)), None)
    if aggregate is None:
        return
    groups = select.args.get("group") is not None or any(
        next(_grouping_aggregates(p), None) is not None for p in select.expressions)
    windows = any(isinstance(n, exp.Window) for p in select.expressions for n in _own(p))
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
    with ROLLUP, CUBE or GROUPING SETS ([UNSUPPORTED_GROUPING_EXPRESSION]), GROUP BY ALL with
    a column to infer ([UNRESOLVED_ALL_IN_GROUP_BY]), no `*` with GROUP BY a position
    ([STAR_GROUP_BY_POS]), no ORDER BY an aggregate beside window functions or after HAVING
    over a NATURAL join ([UNSUPPORTED_EXPR_FOR_OPERATOR])."""

    id = "grouping-shape"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.Group, exp.Order, exp.AggFunc):
            return
        yield from self.findings(ctx, grouping_problems(ctx.query))
