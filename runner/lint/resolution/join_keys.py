"""Which unique column sets survive the joins of one SELECT (for ``merge-key-not-unique``).

The rule, for ``L [INNER|LEFT|RIGHT] JOIN R ON L.a = R.b [AND ...]``: when some unique set of
R is contained in the R columns the ON equates (``=``) with values of L (a column of the
relations joined before R, or a literal), each L row matches at most one R row, so L's unique
sets hold in the join's output (INNER, LEFT); symmetrically R's (INNER, RIGHT). Whatever the
keys, a unique set of L together with one of R holds (each output row is one pair of an L row
and an R row, or one row of the preserved side alone). Any other condition in the ON (another
conjunct, an OR beside them) only matches fewer rows, so it never breaks the proof.

Proved nothing, as the caller then says the key is not provably unique (a false error is
better than duplicate merge keys at run time):

- FULL joins: the rows of either side no row matches add rows whose other side's key is
  null, as many as there are of them;
- NATURAL and other join methods, ``USING`` with RIGHT or FULL (its column is then R's), a
  LATERAL VIEW (which multiplies rows), a relation whose shape is not known, one relation read
  twice (lint's column origins cannot tell its two readings apart);
- ``<=>`` (it matches nulls, so every R row with a null key), a comparison through an
  implicit cast (``'01'`` and ``'1'`` are one number: keys of one type, or both integers,
  only), an expression other than a column or a literal on the L side.

LEFT SEMI and ANTI joins keep each L row at most once: L's sets hold whatever they match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from runner.lint.resolution.shapes import Shape
from runner.lint.spark_types.infer import is_known

__all__ = ["Key", "joined_unique"]

#: A unique set of a join's output: (id(source shape), lower-cased column) pairs.
Key = frozenset[tuple[int, str]]

_INTEGERS = frozenset({exp.DType.TINYINT, exp.DType.SMALLINT, exp.DType.INT, exp.DType.BIGINT})
_STRINGS = frozenset({exp.DType.TEXT, exp.DType.VARCHAR})
_MAX_SETS = 32  # sets of a product kept: enough for any real key, bounded for any SQL


def _conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    if condition is None:
        return []
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        return _conjuncts(condition.this) + _conjuncts(condition.expression)
    return [condition]


def _one_domain(a: exp.DataType | None, b: exp.DataType | None) -> bool:
    """Comparing values of ``a`` and ``b`` casts neither so that two distinct values of one
    become equal: one type, or two integer types (widened without loss)."""
    if not is_known(a) or not is_known(b):
        return False
    if a.this in _INTEGERS and b.this in _INTEGERS:
        return True
    return a.this == b.this and a.sql(dialect="spark") == b.sql(dialect="spark")


class _Joined:
    """The relations of one SELECT joined so far, and what resolves a column to which."""

    def __init__(self, first: Shape, source_of: Mapping[int, Shape],
                 refs_of: Mapping[int, tuple[Shape, str]]) -> None:
        self.seen = [first]
        self.source_of = source_of
        self.refs_of = refs_of
        self.sets: list[Key] = [frozenset((id(first), c) for c in u) for u in first.unique]

    def _side_of(self, node: exp.Expr) -> Shape | None:
        """The relation joined so far that the column reference ``node`` reads, else None."""
        src = self.source_of.get(id(node))
        return src if src is not None and any(src is s for s in self.seen) else None

    def _value_type(self, node: exp.Expr) -> exp.DataType | None:
        if isinstance(node, exp.Literal):
            return exp.DataType.build("STRING" if node.is_string else
                                      "BIGINT" if node.is_int else "DOUBLE")
        return node.type

    def equated(self, join: exp.Join, right: Shape) -> tuple[set[str], set[tuple[int, str]]]:
        """The columns of ``right`` the join equates with a value of the relations before it,
        and the plain columns of those relations equated with a column of ``right``."""
        right_cols: set[str] = set()
        left_cols: set[tuple[int, str]] = set()
        for ident in join.args.get("using") or []:
            name = ident.name.lower()
            having = [s for s in self.seen if s.find(name) is not None]
            col, mine = right.find(name), having[0].find(name) if len(having) == 1 else None
            if col is not None and mine is not None and _one_domain(col[1], mine[1]):
                right_cols.add(name)
                left_cols.add((id(having[0]), name))
        for cond in _conjuncts(join.args.get("on")):
            if not isinstance(cond, exp.EQ):  # <=> matches every null key
                continue
            for mine, theirs in ((cond.this.unnest(), cond.expression.unnest()),
                                 (cond.expression.unnest(), cond.this.unnest())):
                ref = self.refs_of.get(id(theirs))
                if ref is None or ref[0] is not right:
                    continue
                if not (isinstance(mine, exp.Literal) or self._side_of(mine) is not None):
                    continue
                col = right.find(ref[1])
                if col is None or not _one_domain(col[1], self._value_type(mine)):
                    continue
                right_cols.add(ref[1].lower())
                left = self.refs_of.get(id(mine))
                if left is not None:
                    left_cols.add((id(left[0]), left[1].lower()))
        return right_cols, left_cols

    def join(self, join: exp.Join, right: Shape) -> None:
        """Add ``right`` through ``join``: what stays unique (see module doc)."""
        side, kind = join.side.upper(), join.kind.upper()
        method = join.method.upper()
        if kind in ("SEMI", "ANTI") and side in ("", "LEFT") and not method:
            self.seen.append(right)  # only the left rows, each at most once
            return
        right_sets: list[Key] = [frozenset((id(right), c) for c in u) for u in right.unique]
        if method or side == "FULL" or (join.args.get("using") and side == "RIGHT"):
            self.sets = []
        else:
            right_cols, left_cols = self.equated(join, right)
            one_right = any(u <= right_cols for u in right.unique)  # per left row
            one_left = any(u <= left_cols for u in self.sets)  # per right row
            out = [*(self.sets if one_right and side != "RIGHT" else ()),
                   *(right_sets if one_left and side != "LEFT" else ())]
            out += [a | b for a in self.sets for b in right_sets]
            self.sets = list(dict.fromkeys(out))[:_MAX_SETS]
        self.seen.append(right)


def joined_unique(select: exp.Select, relations: Sequence[Shape | None],
                  source_of: Mapping[int, Shape], refs_of: Mapping[int, tuple[Shape, str]]
                  ) -> list[Key]:
    """The unique sets of the rows ``select``'s FROM and JOINs yield (before its WHERE, which
    only drops rows), as (id(source shape), column) pairs.

    Args:
        select: the SELECT, with at least one JOIN.
        relations: the shape of its FROM relation, then of each JOIN's (None: not known).
        source_of: resolved column reference node id -> the relation it reads.
        refs_of: plain column reference node id -> (relation, column name).
    """
    joins = select.args.get("joins") or []
    shapes = [r for r in relations if r is not None]
    if (select.args.get("laterals") or len(shapes) != len(joins) + 1
            or len({id(s) for s in shapes}) != len(shapes)):
        return []
    joined = _Joined(shapes[0], source_of, refs_of)
    for join, right in zip(joins, shapes[1:]):
        joined.join(join, right)
    return joined.sets
