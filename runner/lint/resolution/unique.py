"""Which output columns of a SELECT are provably unique per micro-batch.

Proofs recognised (sets of lower-cased output column names):

- ``GROUP BY g1, g2`` (names, aliases or ordinals of projected columns) -> ``{g1, g2}``;
  ``GROUP BY ALL`` -> the non-aggregate projections; an aggregate without GROUP BY -> ``{}``
  (one row);
- ``SELECT DISTINCT`` -> all output columns;
- ``QUALIFY row_number() OVER (PARTITION BY p) = 1`` -> ``{p}`` (also rank/dense_rank);
- ``WHERE rn = 1`` over a single source whose ``rn`` is such a row number -> ``{p}``;
- a single source's unique sets, when its columns pass through unchanged;
- the unique sets of joined relations that a join keeps (:mod:`.join_keys`: a join on a
  unique key of the other side), when their columns pass through unchanged.

A merge key K is unique when some proven set is a subset of K.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from sqlglot import exp

from runner.lint.resolution.aggregates import grouping_aggregates
from runner.lint.resolution.join_keys import Key
from runner.lint.resolution.shapes import Output, Shape

__all__ = ["GROUPING_ID", "grouping_sets", "identifies_window", "time_window", "unique_sets"]

_RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank)
_TIME_WINDOWS = frozenset({"window", "session_window"})
_BOUNDS = frozenset({"start", "end"})


def time_window(node: exp.Expr) -> str | None:
    """``'window'`` / ``'session_window'`` when ``node`` is that call (the name of the struct
    column Spark gives it in a GROUP BY), else None."""
    if isinstance(node, exp.Anonymous) and node.name.lower() in _TIME_WINDOWS:
        return node.name.lower()
    return None


#: The virtual column Spark gives a query with grouping sets: which set a row is of.
GROUPING_ID = "grouping__id"


def grouping_sets(group: exp.Group | None) -> bool:
    """Whether ``group`` has grouping sets (CUBE, ROLLUP, GROUPING SETS, WITH CUBE/ROLLUP):
    Spark then has the ``grouping__id`` column."""
    if group is None:
        return False
    if group.args.get("cube") or group.args.get("rollup") or group.args.get("grouping_sets"):
        return True
    return any(isinstance(e, (exp.Cube, exp.Rollup, exp.GroupingSets)) for e in group.expressions)


def identifies_window(expr: exp.Expr, name: str, call: str) -> bool:
    """``expr`` is the time window ``name`` (the call's text ``call``), or its start or end:
    ``window``, ``window.start``, ``window(ts, '1 minute').end``."""
    expr = expr.unnest()
    if isinstance(expr, exp.Column) and not expr.args.get("db"):
        if not expr.table:
            return expr.name.lower() == name
        return expr.table.lower() == name and expr.name.lower() in _BOUNDS
    if isinstance(expr, exp.Dot) and isinstance(expr.expression, exp.Identifier):
        return (expr.expression.name.lower() in _BOUNDS
                and expr.this.sql(comments=False).lower() == call)
    return False


def _conjuncts(condition: exp.Expr | None) -> Iterator[exp.Expr]:
    if condition is None:
        return
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        yield from _conjuncts(condition.this)
        yield from _conjuncts(condition.expression)
    else:
        yield condition


def _is_int(node: exp.Expr, value: int) -> bool:
    return isinstance(node, exp.Literal) and node.is_int and int(node.name) == value


def _unnested(node: exp.Expr) -> exp.Expr:
    """``node`` without the parentheses around it."""
    inner: exp.Expr = node.unnest()
    return inner


def _first_row_filter(cond: exp.Expr) -> exp.Expr | None:
    """``x = 1``, ``1 = x``, ``x <= 1``, ``x < 2`` -> ``x``."""
    if isinstance(cond, exp.EQ):
        if _is_int(cond.expression, 1):
            return _unnested(cond.this)
        if _is_int(cond.this, 1):
            return _unnested(cond.expression)
    if isinstance(cond, exp.LTE) and _is_int(cond.expression, 1):
        return _unnested(cond.this)
    if isinstance(cond, exp.LT) and _is_int(cond.expression, 2):
        return _unnested(cond.this)
    return None


def _ranked_partition(node: exp.Expr | None) -> list[exp.Expr] | None:
    if isinstance(node, exp.Window) and isinstance(node.this, _RANKS):
        return list(node.args.get("partition_by") or [])
    return None


class _OutputNames:
    """Which output column (lower-cased) an expression of the SELECT is: by the source column
    it passes on, its position (``GROUP BY 1``), its name, or its SQL text."""

    def __init__(self, outputs: list[Output], single: Shape | None,
                 refs_of: Mapping[int, tuple[Shape, str]]) -> None:
        self.outputs = outputs
        self.single = single
        self.refs_of = refs_of
        self.names = [o.name.lower() for o in outputs]
        self.by_expr: dict[str, str] = {}  # filled on first use: generating SQL is not free
        self.by_origin = {o.origin: o.name.lower() for o in outputs if o.origin is not None}

    def output_of(self, e: exp.Expr) -> str | None:
        """The output column ``e`` is, or None."""
        ref = self.refs_of.get(id(e))
        if ref is not None and (id(ref[0]), ref[1].lower()) in self.by_origin:
            return self.by_origin[(id(ref[0]), ref[1].lower())]
        if isinstance(e, exp.Literal) and e.is_int:
            i = int(e.name) - 1
            return self.names[i] if 0 <= i < len(self.names) else None
        if isinstance(e, exp.Column) and not e.table and e.name.lower() in self.names:
            return e.name.lower()
        if not self.by_expr:
            self.by_expr.update((o.expr.sql(comments=False).lower(), o.name.lower())
                                for o in self.outputs if o.expr is not None)
        call = e.sql(comments=False).lower()  # a comment is not part of the key
        window = time_window(e)
        if call not in self.by_expr and window is not None:
            return next((o.name.lower() for o in self.outputs if o.expr is not None
                         and identifies_window(o.expr, window, call)), None)
        return self.by_expr.get(call)

    def all_mapped(self, exprs: list[exp.Expr]) -> frozenset[str] | None:
        """The output columns ``exprs`` are; None unless every one of them is one."""
        mapped = [self.output_of(e) for e in exprs]
        return None if any(m is None for m in mapped) else frozenset(m for m in mapped if m)

    def passing(self, key: Key) -> frozenset[str] | None:
        """The output columns that pass on the sources' columns ``key`` (id(source shape),
        column); None unless all of them are passed on."""
        mapped = [self.by_origin.get(pair) for pair in key]
        return None if any(m is None for m in mapped) else frozenset(m for m in mapped if m)

    def through(self, cols: frozenset[str]) -> frozenset[str] | None:
        """The output columns that pass on the single source's columns ``cols``; None
        unless all of them are passed on."""
        if self.single is None:
            return None
        mapped = [self.by_origin.get((id(self.single), c)) for c in cols]
        return None if any(m is None for m in mapped) else frozenset(m for m in mapped if m)


def _aggregated(outputs: list[Output]) -> bool:
    return any(next(grouping_aggregates(o.expr), None) is not None
               for o in outputs if o.expr is not None)


def _grouping_sets(select: exp.Select, names: _OutputNames, aggregated: bool
                   ) -> list[frozenset[str] | None]:
    """What GROUP BY (its keys), a global aggregate (the empty set: one row) and DISTINCT
    (every output) make unique."""
    unique: list[frozenset[str] | None] = []
    group = select.args.get("group")
    if group is not None:
        if group.args.get("all"):
            unique.append(frozenset(
                o.name.lower() for o in names.outputs
                if o.expr is None or next(grouping_aggregates(o.expr), None) is None))
        else:
            unique.append(names.all_mapped(group.expressions))
    elif aggregated:
        unique.append(frozenset())
    distinct = select.args.get("distinct")
    if distinct is not None and not distinct.args.get("on"):
        unique.append(frozenset(names.names))
    return unique


def _first_row_sets(select: exp.Select, names: _OutputNames) -> list[frozenset[str] | None]:
    """What a first-row filter makes unique: ``QUALIFY row_number() OVER (PARTITION BY k
    ...) = 1`` (its partition), or a WHERE on a row-number column of the single source."""
    unique: list[frozenset[str] | None] = []
    qualify = select.args.get("qualify")
    for cond in _conjuncts(qualify.this if qualify is not None else None):
        partition = _ranked_partition(_first_row_filter(cond))
        if partition is not None:
            unique.append(names.all_mapped(partition))
    single, where = names.single, select.args.get("where")
    if single is not None:
        for cond in _conjuncts(where.this if where is not None else None):
            ref = names.refs_of.get(id(_first_row_filter(cond)))
            if ref is not None and ref[0] is single and ref[1].lower() in single.rownums:
                unique.append(names.through(single.rownums[ref[1].lower()]))
    return unique


def unique_sets(select: exp.Select, outputs: list[Output], single: Shape | None,
                refs_of: Mapping[int, tuple[Shape, str]], joined: Sequence[Key] = ()
                ) -> tuple[tuple[frozenset[str], ...], dict[str, frozenset[str]]]:
    """The unique column sets of ``select`` and its row-number columns (see module doc).

    Args:
        select: the SELECT.
        outputs: its output columns.
        single: its only source, when it reads exactly one relation.
        refs_of: plain column reference node id -> (source shape, column name).
        joined: the unique sets of the rows its FROM and JOINs yield
            (:func:`~.join_keys.joined_unique`).
    """
    names = _OutputNames(outputs, single, refs_of)
    aggregated = _aggregated(outputs)
    unique = [*_grouping_sets(select, names, aggregated), *_first_row_sets(select, names)]
    if single is not None and select.args.get("group") is None and not aggregated:
        unique.extend(names.through(u) for u in single.unique)  # the source's keys, passed on
    if select.args.get("group") is None and not aggregated:
        unique.extend(names.passing(k) for k in joined)  # keys a join keeps, passed on

    rownums: dict[str, frozenset[str]] = {}
    for o in outputs:
        expr = o.expr.unnest() if o.expr is not None else None
        partition = _ranked_partition(expr)
        if partition is not None and (cols := names.all_mapped(partition)) is not None:
            rownums[o.name.lower()] = cols
    return tuple(u for u in unique if u is not None), rownums
