"""Where a generator (``explode``, ``posexplode``, ``inline``, ``stack``, ``json_tuple``...) may
stand, as Spark's analyser checks it (``ExtractGenerator``, ``CheckAnalysis``):

- a select item of its own, not inside another expression (``1 + explode(a)``,
  ``explode(explode(a))``: ``[UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS]``);
- in the select list only, not in WHERE, GROUP BY, HAVING, ORDER BY, QUALIFY or a join's ON
  (``[UNSUPPORTED_GENERATOR.OUTSIDE_SELECT]``);
- ``AS (a, b)`` names a generator's columns only (``1 AS (a, b)``:
  ``[MULTI_ALIAS_WITHOUT_GENERATOR]``), and ``posexplode`` gives two columns or more, never
  one alias (``[UDTF_ALIAS_NUMBER_MISMATCH]``);
- in a SELECT that does not aggregate, a generator reads no lateral column alias of an
  earlier select item that is no generator (``SELECT array(1) AS arr, explode(arr) AS x``):
  Spark 4.2 fails on it with ``[INTERNAL_ERROR]`` (with an aggregate, or when the alias is a
  generator's, it takes it).

A generator in FROM or a LATERAL VIEW is a relation, not checked here. A call lint does not know
(a user function) is never taken for a non-generator.

>>> import sqlglot
>>> from runner.lint.sql.spark_dialect import SPARK
>>> q = sqlglot.parse_one("SELECT 1 + explode(array(1, 2)) FROM t", read=SPARK)
>>> [f.message.split("]")[0] for f in generator_problems(q)]
['[UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS']
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import is_aggregate_call, own_nodes
from runner.lint.resolution.shapes import Analysis, Finding
from runner.lint.resolution.spark_names import function_name
from runner.lint.resolution.spark_names import generator_call as registry_generator
from runner.lint.spark_types.builtins import signature
from runner.lint.spark_types.infer import is_generator

__all__ = ["GeneratorUse", "generator_call", "generator_problems"]

#: Clauses of a SELECT where Spark refuses a generator.
_OUTSIDE = {"where": "WHERE", "group": "GROUP BY", "having": "HAVING", "order": "ORDER BY",
            "sort": "SORT BY", "qualify": "QUALIFY"}
_HINT = ("make the generator a select item of its own (`SELECT explode(a) AS x ...`), or use "
         "LATERAL VIEW, and compute on its column in an outer query")


def _spark_name(node: exp.Expr) -> str:
    return function_name(node) if isinstance(node, exp.Func) else node.key


def generator_call(node: exp.Expr) -> bool:
    """``node`` calls a built-in generator (Spark's registry says so, or sqlglot's class)."""
    return is_generator(node) or isinstance(node, (exp.Explode, exp.Posexplode, exp.Inline)) \
        or (isinstance(node, exp.Func) and registry_generator(node) is not None)


def _known_non_generator(node: exp.Expr) -> bool:
    """``node`` is surely no generator: a literal, a column, an operator, a known built-in."""
    if isinstance(node, exp.Func):
        return signature(_spark_name(node)) is not None and not generator_call(node)
    return isinstance(node, (exp.Literal, exp.Column, exp.Binary, exp.Unary, exp.Boolean,
                             exp.Null, exp.Paren))


def _own(root: exp.Expr) -> Iterator[exp.Expr]:
    yield from root.walk(prune=lambda n: isinstance(n, (exp.Query, exp.Subquery, exp.Lambda))
                         and n is not root)


def generator_problems(query: exp.Expr) -> Iterator[Finding]:
    """Each generator of ``query`` placed where Spark refuses it (see the module)."""
    for select in query.find_all(exp.Select):
        for item in select.expressions:
            yield from _item(item)
        for key, clause in _OUTSIDE.items():
            yield from _outside(select.args.get(key), clause)
        for join in select.args.get("joins") or []:
            yield from _outside(join.args.get("on"), "a join's ON")


def _item(item: exp.Expr) -> Iterator[Finding]:
    inner = item.unalias() if isinstance(item, exp.Alias) else (
        item.this if isinstance(item, exp.Aliases) else item)
    for node in _own(inner):
        if node is not inner and generator_call(node):
            yield Finding(node, "[UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS] generator "
                          f"{_spark_name(node)}() inside an expression", _HINT)
            return
    if isinstance(item, exp.Aliases) and _known_non_generator(inner):
        yield Finding(item, "[MULTI_ALIAS_WITHOUT_GENERATOR] `AS (...)` names the columns of a "
                      "generator, and this is no generator", "alias it with one name: AS x")
    elif isinstance(item, exp.Alias) and generator_call(inner) and \
            _spark_name(inner) in ("posexplode", "posexplode_outer"):
        yield Finding(item, f"[UDTF_ALIAS_NUMBER_MISMATCH] {_spark_name(inner)}() gives a "
                      "position and a value (two columns or more): one alias is not enough",
                      "name each column: AS (pos, value)")


def _outside(root: exp.Expr | None, clause: str) -> Iterator[Finding]:
    if root is None:
        return
    for node in _own(root):
        if generator_call(node):
            yield Finding(node, f"[UNSUPPORTED_GENERATOR.OUTSIDE_SELECT] generator "
                          f"{_spark_name(node)}() in {clause}", _HINT)
            return


class GeneratorUse(ModelRule):
    """Generators (explode, posexplode, inline, stack...) are select items of their own
    ([UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS]), in the select list only
    ([UNSUPPORTED_GENERATOR.OUTSIDE_SELECT]); `AS (a, b)` follows a generator only
    ([MULTI_ALIAS_WITHOUT_GENERATOR]) and posexplode takes no single alias
    ([UDTF_ALIAS_NUMBER_MISMATCH])."""

    id = "generator-use"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.Func, exp.Aliases):
            return
        yield from self.findings(ctx, generator_problems(ctx.query))
        if ctx.analysis is not None:
            for select in ctx.query.find_all(exp.Select):
                yield from self.findings(ctx, _lateral_alias_inputs(select, ctx.analysis))


def _closed(select: exp.Select, analysis: Analysis) -> bool:
    """Every relation of ``select`` has columns lint knows all of: ``parsed_events``, or a
    derived table whose columns are known (a name not found there is surely no column)."""
    from_ = select.args.get("from_")
    if from_ is None or select.args.get("joins") or select.args.get("laterals"):
        return False
    rel = from_.this
    if isinstance(rel, exp.Table):
        return rel.name.lower() == "parsed_events" and not rel.args.get("db")
    inner = rel.this if isinstance(rel, exp.Subquery) else None
    return isinstance(inner, exp.Select) and id(inner) in analysis.selects


def _lateral_alias_inputs(select: exp.Select, analysis: Analysis) -> Iterator[Finding]:
    """A generator reading a lateral column alias of an earlier non-generator item, in a
    SELECT without GROUP BY, aggregate or window function (Spark 4.2: [INTERNAL_ERROR])."""
    if select.args.get("group") is not None or select.args.get("having") is not None or any(
            is_aggregate_call(n) or isinstance(n, exp.Window) for p in select.expressions
            for n in own_nodes(p)) or not _closed(select, analysis):
        return
    aliases: set[str] = set()
    for item in select.expressions:
        inner = item.unalias() if isinstance(item, exp.Alias) else (
            item.this if isinstance(item, exp.Aliases) else item)
        if generator_call(inner):
            for node in _own(inner):
                if isinstance(node, exp.Column) and not node.table and \
                        node.name.lower() in aliases and id(node) not in analysis.sources \
                        and id(node) not in analysis.outer_references:
                    yield Finding(node, f"[INTERNAL_ERROR] generator {_spark_name(inner)}() "
                                  f"reads {node.name}, a lateral alias of the select list: "
                                  "Spark 4.2 fails on it", "compute the value in a subquery "
                                  "and explode its column in the outer query")
                    return
        elif isinstance(item, exp.Alias):
            aliases.add(item.alias.lower())
