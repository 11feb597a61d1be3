"""The shape of a recursive CTE, as Spark's analyser checks it (``ResolveWithCTE``,
``CheckAnalysis``).

A CTE of a ``WITH RECURSIVE`` that reads itself must be ``anchor UNION ALL recursion``:

- its body is exactly a two-sided ``UNION ALL`` with no ``ORDER BY``/``LIMIT``/``OFFSET`` of
  its own, and the anchor (the left side) does not read the CTE (``[INVALID_RECURSIVE_CTE]``);
  a deduplicating ``UNION`` is refused as ``[UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE]``;
- in the recursion, the self-reference is not under an aggregate, a window function or an
  ``ORDER BY``, nor on the outer side of an outer, semi or anti join
  (``[INVALID_RECURSIVE_REFERENCE.PLACE]``);
- the recursion's columns have the anchor's types: arithmetic where the anchor has a STRING
  does not merge into it (``[CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE]``).

A CTE that does not read itself is an ordinary CTE, whatever its shape. A body lint cannot read
with certainty (an inner ``WITH`` naming the CTE again, a ``NATURAL``/``USING``/``LATERAL``
join around the reference) is left alone: Spark decides at start-up.

>>> import sqlglot
>>> from runner.lint.sql.spark_dialect import SPARK
>>> q = sqlglot.parse_one("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r) "
...                       "SELECT * FROM r", read=SPARK)
>>> [f.message.split("]")[0] for f in recursive_cte_problems(q)]
['[UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.aggregation import select_sources
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import grouping_aggregates, own_nodes
from runner.lint.resolution.shapes import Finding, Output
from runner.lint.spark_types.infer import is_

__all__ = ["RecursiveCte", "recursive_cte_problems"]

_SHAPE_HINT = ("write it as `anchor UNION ALL recursion`: the anchor (first) reads other "
               "tables only, the recursion reads the CTE once, and ORDER BY/LIMIT go on the "
               "query that reads the CTE")
_PLACE_HINT = ("read the CTE in the recursion's FROM or an inner join, and aggregate, window "
               "or sort in the query that reads the finished CTE")
#: Join kinds by which sides may hold the self-reference: (left allowed, right allowed).
#: Keyed by the join's side (``LEFT``, ...), or its kind for semi and anti joins; an inner or
#: cross join has no side.
_JOIN_SIDES = {"": (True, True), "left": (True, False), "right": (False, True),
               "full": (False, False), "semi": (True, False), "anti": (True, False)}


def recursive_cte_problems(query: exp.Expr, selects: Mapping[int, list[Output]] | None = None
                           ) -> Iterator[Finding]:
    """What Spark refuses in the recursive CTEs of ``query`` (every ``WITH RECURSIVE`` in it);
    ``selects``: the output columns name resolution found of each SELECT."""
    for with_ in query.find_all(exp.With):
        if not with_.args.get("recursive"):
            continue
        for cte in with_.expressions:
            yield from _cte_problems(cte, selects or {})


def _merged_types(anchor: exp.Expr, recursion: exp.Expr, selects: Mapping[int, list[Output]]
                  ) -> Iterator[Finding]:
    """The recursion's columns have the anchor's types: arithmetic (never a STRING) where the
    anchor's column is a STRING cannot merge into it ([CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE])."""
    outputs = selects.get(id(anchor.unnest()))
    items = recursion.unnest().expressions if isinstance(recursion.unnest(), exp.Select) else []
    if outputs is None or len(outputs) != len(items):
        return
    for i, (out, item) in enumerate(zip(outputs, items), start=1):
        if is_(out.type, exp.DType.TEXT, exp.DType.VARCHAR) and isinstance(
                item.unalias(), (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)):
            yield Finding(item, f"[CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE] the recursion's "
                          f"{item.sql('spark')} is a number, the anchor's column {i} a STRING",
                          "cast the anchor's column to the number type (or the recursion's "
                          "value to STRING)")
            return


def _cte_problems(cte: exp.CTE, selects: Mapping[int, list[Output]]) -> Iterator[Finding]:
    name = cte.alias_or_name.lower()
    body = cte.this
    if not name or not isinstance(body, exp.Query) or _redefines(body, name):
        return
    if not _reads(body, name):
        return  # not recursive: an ordinary CTE
    if isinstance(body, exp.Union) and not any(
            body.args.get(k) for k in ("order", "limit", "offset")):
        anchor, recursion = body.this, body.expression
        if _reads(anchor, name):
            yield Finding(_reference(anchor, name), "[INVALID_RECURSIVE_CTE] the anchor of "
                          f"recursive CTE `{name}` (before UNION ALL) reads the CTE itself",
                          _SHAPE_HINT)
        elif body.args.get("distinct"):
            yield Finding(_reference(recursion, name) if _reads(recursion, name) else cte.args[
                "alias"], f"[UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE] recursive CTE `{name}` "
                          "joins its anchor and recursion with UNION: Spark supports UNION ALL "
                          "only", "use UNION ALL (and stop repeats with a depth or visited "
                          "column)")
        else:
            yield from _placement(recursion, name)
            yield from _merged_types(anchor, recursion, selects)
        return
    yield Finding(cte.args["alias"], f"[INVALID_RECURSIVE_CTE] recursive CTE `{name}` reads "
                  "itself but is not `anchor UNION ALL recursion`" + (
                      " (ORDER BY/LIMIT/OFFSET apply to the whole UNION)"
                      if isinstance(body, exp.Union) else ""), _SHAPE_HINT)


def _is_self(table: exp.Table, name: str) -> bool:
    return not table.args.get("db") and not table.args.get("catalog") and \
        table.name.lower() == name


def _reference(node: exp.Expr, name: str) -> exp.Table:
    """The first reference to the table ``name`` under ``node`` (there is one)."""
    return next(t for t in node.find_all(exp.Table) if _is_self(t, name))


def _reads(node: exp.Expr, name: str) -> bool:
    """Whether ``node`` reads the table ``name`` (anywhere under it, subqueries included)."""
    return any(_is_self(t, name) for t in node.find_all(exp.Table))


def _redefines(body: exp.Expr, name: str) -> bool:
    """An inner WITH defines ``name`` again: which reference means which is not lint's call."""
    return any(c.alias_or_name.lower() == name for w in body.find_all(exp.With)
               for c in w.expressions)


def _placement(recursion: exp.Expr, name: str) -> Iterator[Finding]:
    """Self-references the recursion holds where Spark's analyser does not allow them."""
    for select in recursion.find_all(exp.Select):
        sources = select_sources(select)
        if not any(_reads(s, name) for s in sources):
            continue
        why = _over_reference(select)
        if why:
            where = next(_reference(s, name) for s in sources if _reads(s, name))
            yield Finding(where, f"[INVALID_RECURSIVE_REFERENCE.PLACE] the recursion of CTE "
                          f"`{name}` reads it under {why}", _PLACE_HINT)
            return
        side = _outer_side(select, name)
        if side is not None:
            yield Finding(_reference(side, name), "[INVALID_RECURSIVE_REFERENCE.PLACE] the "
                          f"recursion of CTE `{name}` reads it on the outer side of an outer, "
                          "semi or anti join",
                          _PLACE_HINT)
            return


def _over_reference(select: exp.Select) -> str | None:
    """What of ``select`` runs over its FROM and is not allowed over a self-reference."""
    if select.args.get("group") or any(
            next(grouping_aggregates(root), None) is not None
            for root in (*select.expressions, select.args.get("having"))):
        return "an aggregate"
    if any(isinstance(n, exp.Window) for p in select.expressions for n in own_nodes(p)):
        return "a window function"
    if select.args.get("order"):
        return "ORDER BY"
    return None


def _outer_side(select: exp.Select, name: str) -> exp.Expr | None:
    """The relation of ``select``'s FROM/joins that reads ``name`` on a side an outer, semi or
    anti join does not allow (joins apply left to right: everything before a join is its left).
    None when there is none, or when a join lint cannot classify surely is involved."""
    from_ = select.args.get("from_")
    joins = select.args.get("joins") or []
    if from_ is None or not joins or select.args.get("laterals"):
        return None
    left: list[exp.Expr] = [from_.this]
    for join in joins:
        kind = (join.args.get("kind") or "").lower()
        side = (join.args.get("side") or "").lower()
        if join.args.get("method") or join.args.get("using") or isinstance(
                join.this, exp.Lateral):
            return None  # NATURAL/USING/LATERAL: not the plain join Spark checks
        left_ok, right_ok = _JOIN_SIDES.get(kind if kind in ("semi", "anti") else side,
                                            (True, True))
        if not left_ok:
            for rel in left:
                if _reads(rel, name):
                    return rel
        right: exp.Expr = join.this
        if not right_ok and _reads(right, name):
            return right
        left.append(right)
    return None


class RecursiveCte(ModelRule):
    """A recursive CTE that reads itself is `anchor UNION ALL recursion`
    ([INVALID_RECURSIVE_CTE], [UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE]) and its recursion reads it
    outside aggregates, window functions, ORDER BY and the outer side of outer, semi and anti
    joins ([INVALID_RECURSIVE_REFERENCE.PLACE])."""

    id = "recursive-cte"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.With):
            return
        selects = ctx.analysis.selects if ctx.analysis is not None else None
        yield from self.findings(ctx, recursive_cte_problems(ctx.query, selects))
