"""Which calls are aggregates, and which SELECT they aggregate, as Spark's analyser sees it.

One test for the whole linter (name resolution, uniqueness, the streaming rules and the
aggregation rules): sqlglot's aggregate classes, the aggregates of Spark's registry that sqlglot
parses as anonymous calls, ``FILTER``/``WITHIN GROUP`` around them, ``any(x)`` as ``bool_or``;
a function a window applies is not an aggregate of its SELECT, but an aggregate inside a
window's arguments is (``sum(max(x)) OVER ()`` aggregates the SELECT).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.lint.spark_types.builtins import aggregate_names

__all__ = ["AGGREGATE_NAMES", "NESTED", "grouping_aggregates", "is_aggregate_call",
           "is_window_function", "own_nodes"]

#: Spark's aggregate functions (for the ones sqlglot parses as anonymous calls), from its registry.
AGGREGATE_NAMES = aggregate_names()
#: Nested queries: their nodes belong to their own SELECT.
NESTED = (exp.Query, exp.Subquery)


def is_aggregate_call(node: exp.Expr) -> bool:
    """An aggregate call (window functions included: the caller knows which it walks)."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in AGGREGATE_NAMES
    if isinstance(node, exp.Filter):  # count(*) FILTER (WHERE ...): the filter is inside
        return is_aggregate_call(node.this)
    if isinstance(node, exp.Any):  # any(x) is bool_or; x = ANY (...), LIKE ANY (...) are not
        return not (isinstance(node.parent, exp.Predicate) and node.parent.expression is node)
    return isinstance(node, (exp.AggFunc, exp.WithinGroup))


def is_window_function(node: exp.Expr) -> bool:
    """``node`` is the function a window applies (``sum(x)`` in ``sum(x) OVER (...)``)."""
    parent = node.parent
    while isinstance(parent, (exp.IgnoreNulls, exp.RespectNulls, exp.WithinGroup, exp.Filter)) \
            and parent.this is node:  # percentile_cont(p) WITHIN GROUP (...) OVER (...)
        node, parent = parent, parent.parent
    return isinstance(parent, exp.Window) and parent.this is node


def own_nodes(root: exp.Expr | None) -> Iterator[exp.Expr]:
    """Nodes under ``root`` that belong to its SELECT (nested queries left out)."""
    if root is None:
        return
    yield from root.walk(prune=lambda n: isinstance(n, NESTED) and n is not root)


def grouping_aggregates(root: exp.Expr | None) -> Iterator[exp.Expr]:
    """Aggregate calls under ``root`` that aggregate its SELECT's rows (not window functions)."""
    for node in own_nodes(root):
        if is_aggregate_call(node) and not is_window_function(node):
            yield node
