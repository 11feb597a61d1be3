"""One walk of a model's sqlglot tree, shared by everything that looks for nodes by type.

Compile asks the same tree many questions: the guard wants its tables and calls, the ANSI rules
its indexes, divisions and casts, the analyzer rules its SELECTs and comparisons,
:func:`runner.compile.reads.reads_from` its tables, CTEs, stars and identifiers. Walking a tree
(sqlglot's ``walk``/``find_all``) costs a generator step and an ``iter_expressions`` call per
node; :class:`TreeIndex` walks it once and files every node under its class, so each question
is a lookup over the few nodes of the types asked for.

The index is a snapshot: a tree changed after it was built (nodes replaced or added) needs a
new one. Setting a node's type (name resolution, sqlglot's annotator) changes no structure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from sqlglot import exp

E = TypeVar("E", bound=exp.Expr)

__all__ = ["TreeIndex"]


class TreeIndex:
    """Every node of ``trees`` (their roots included) by class, in source order: a depth-first
    preorder walk, the order of ``walk(bfs=False)`` over each tree in turn.

    >>> import sqlglot
    >>> index = TreeIndex([sqlglot.parse_one("SELECT a / b, CAST(c AS INT) FROM t", read="spark")])
    >>> [n.sql("spark") for n in index.of(exp.Div, exp.Cast)]
    ['a / b', 'CAST(c AS INT)']
    >>> [n.name for n in index.of(exp.Table)]
    ['t']
    """

    __slots__ = ("_by_class", "_cache")

    def __init__(self, trees: Iterable[exp.Expr]) -> None:
        by_class: dict[type, list[tuple[int, exp.Expr]]] = {}
        stack = list(trees)
        stack.reverse()
        position = 0
        expr = exp.Expr
        while stack:  # iterative preorder: children pushed last-first
            node = stack.pop()
            entries = by_class.get(type(node))
            if entries is None:
                by_class[type(node)] = entries = []
            entries.append((position, node))
            position += 1
            for value in reversed(node.args.values()):
                if type(value) is list:
                    for item in reversed(value):
                        if isinstance(item, expr):
                            stack.append(item)
                elif isinstance(value, expr):
                    stack.append(value)
        self._by_class = by_class
        self._cache: dict[tuple[type, ...], list[exp.Expr]] = {}

    def of(self, *types: type[E]) -> list[E]:
        """The nodes that are instances of any of ``types`` (subclasses included), in source
        order. Do not change the list: it is shared by every caller asking the same."""
        found = self._cache.get(types)
        if found is None:
            lists = [entries for cls, entries in self._by_class.items() if issubclass(cls, types)]
            if len(lists) == 1:
                found = [node for _, node in lists[0]]
            else:
                found = [node for _, node in sorted((e for es in lists for e in es),
                                                    key=_position)]
            self._cache[types] = found
        return found  # type: ignore[return-value]  # every node is one of ``types``

    def has(self, *types: type[exp.Expr]) -> bool:
        """Whether any node is an instance of any of ``types``."""
        return any(issubclass(cls, types) for cls in self._by_class)


def _position(entry: tuple[int, exp.Expr]) -> int:
    return entry[0]
