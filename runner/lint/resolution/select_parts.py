"""The parts of a SELECT that name resolution (:mod:`.resolve`) reads, as pure functions
over sqlglot nodes and a :class:`~.names.Frame`: the columns its joins merge or
hide (USING, NATURAL, SEMI/ANTI), what ``* EXCEPT`` leaves out, a relation of an enclosing
query, the items a GROUP BY with grouping sets groups by, the names a select-list item gives,
the names two output columns share; and the SELECTs whose rows make up a scope's rows.

Kept apart from the :class:`~.resolve.Resolver` so that module holds the walk over
scopes and this one the reading of single clauses (no state, no annotator), which other rules
share (:func:`relation_selects`).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from runner.lint.resolution.names import Frame
from runner.lint.resolution.shapes import OPEN, Output, Shape

__all__ = ["dot_root", "grouping_items", "join_columns", "outer_source", "relation_selects",
           "repeated_names", "select_aliases", "star_except", "using_columns"]


def dot_root(node: exp.Dot) -> exp.Expr:
    """What a chain of field accesses starts from (``f(x)`` in ``f(x).a.b``)."""
    root: exp.Expr = node
    while isinstance(root, exp.Dot):
        root = root.this
    return root


def grouping_items(group: exp.Group) -> list[exp.Expr]:
    """The expressions a GROUP BY with grouping sets groups by (not the plain columns, named
    already), each once."""
    items: list[exp.Expr] = []
    stack = [e for key in ("expressions", "grouping_sets", "cube", "rollup")
             for e in group.args.get(key) or []]
    while stack:
        item = stack.pop(0)
        if isinstance(item, (exp.GroupingSets, exp.Cube, exp.Rollup, exp.Tuple)):
            stack = list(item.expressions) + stack
        elif isinstance(item, exp.Paren):
            stack.insert(0, item.this)
        elif not isinstance(item, (exp.Column, exp.Literal)):
            items.append(item)
    return items


def repeated_names(outputs: list[Output]) -> frozenset[str]:
    """The lower-cased names two different output columns have: not one column selected
    twice (``SELECT x, z, x``: one attribute, which Spark resolves without ambiguity)."""
    origins: dict[str, set[object]] = {}
    for out in outputs:
        origins.setdefault(out.name.lower(), set()).add(out.origin or id(out))
    return frozenset(name for name, seen in origins.items() if len(seen) > 1)


def outer_source(frame: Frame, alias: str) -> Shape | None:
    """The relation ``alias`` of a query ``frame`` is correlated with (the nearest), or None."""
    outer = frame.parent
    while outer is not None:
        src = outer.source(alias)
        if src is not None:
            return src
        outer = outer.parent
    return None


def select_aliases(projection: exp.Expr) -> list[str]:
    """The names a select-list item gives its columns (``AS a``, ``AS (a, b)``)."""
    if isinstance(projection, exp.Alias):
        return [projection.alias]
    if isinstance(projection, exp.Aliases):
        return [i.name for i in projection.expressions]
    return []


def star_except(star: exp.Star, frame: Frame) -> tuple[set[str], set[str], bool]:
    """The lower-cased columns ``* EXCEPT (...)`` leaves out, those it keeps with a field
    dropped, and whether an item names neither: ``a`` and ``t.a`` (``t`` a relation) leave out
    ``a``; ``a.f`` (``a`` a column) and ``t.a.f`` drop the field ``f`` of ``a`` (its type is no
    longer known); ``u.a`` (``u`` a relation name lint does not see, as after ``|> AS u``)
    leaves the columns unsure (nothing is flagged against them)."""
    skip: set[str] = set()
    reshaped: set[str] = set()
    unsure = False
    for item in star.args.get("except_") or []:
        parts: list[str] = []
        node = item
        while isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
            parts.insert(0, node.expression.name.lower())
            node = node.this
        if not isinstance(node, exp.Column):
            continue
        parts = [p.name.lower() for p in node.parts] + parts
        if len(parts) > 1 and frame.source(parts[0]) is not None:
            parts = parts[1:]
        elif len(parts) > 1 and all(src.find(parts[0]) is None for _, src in frame.sources):
            unsure = True
        (skip if len(parts) == 1 else reshaped).add(parts[0])
    return skip, reshaped, unsure


def join_columns(node: exp.Select, scope: Scope, frame: Frame) -> None:
    """Record in ``frame`` the columns ``node``'s joins merge or drop: JOIN USING and NATURAL
    JOIN columns are one column each (the joined relation's copy hidden), a SEMI or ANTI join's
    relation only filters (all its columns hidden). A lateral's frame, whose sources are the
    relations before it, gets those of the joins among them."""
    position = {id(ref): i for i, (_, ref) in enumerate(scope.references)}
    for join in node.args.get("joins") or []:
        index = position.get(id(join.this), position.get(id(join.this.unnest())))
        if index is None or index >= len(frame.sources):
            continue
        for column in using_columns(join, frame, index):
            frame.hidden.add((index, column))
            frame.using.append(column)
        if join.args.get("kind") in ("SEMI", "ANTI"):  # only filters: none of its columns out
            frame.hidden.update((index, n.lower()) for n, _ in frame.sources[index][1].columns)


def using_columns(join: exp.Join, frame: Frame, index: int | None) -> list[str]:
    """The lower-cased columns ``join`` joins on by name: its USING list, or for a NATURAL
    JOIN the columns its relation shares with the relations before it (one column each, as
    Spark resolves them)."""
    if join.args.get("method") != "NATURAL":
        return [ident.name.lower() for ident in join.args.get("using") or []]
    if index is None or index >= len(frame.sources):
        return []
    before = {n.lower() for _, src in frame.sources[:index] for n, _ in src.columns}
    return [n.lower() for n, _ in frame.sources[index][1].columns if n.lower() in before]


def relation_selects(scope: Scope) -> Iterator[exp.Select]:
    """The SELECTs whose rows make up ``scope``'s rows: its CTEs, itself, its UNION branches
    and derived tables, outermost first (not scalar/IN/EXISTS subqueries nor lateral
    subqueries, which only look values up per row)."""
    for cte in scope.cte_scopes:
        yield from relation_selects(cte)
    if isinstance(scope.expression, exp.Select):
        yield scope.expression
    for child in (*scope.set_operation_scopes, *scope.derived_table_scopes):
        yield from relation_selects(child)


def joined_shape(shapes: list[Shape]) -> Shape:
    """The relation ``(a JOIN b) AS j`` makes of its tables' shapes: all their columns; a
    name two of them have is ambiguous (Spark's [AMBIGUOUS_REFERENCE])."""
    if any(s.open for s in shapes):
        return OPEN
    cols = tuple(c for s in shapes for c in s.columns)
    seen = [{n.lower() for n in s.names} for s in shapes]
    return Shape(cols, repeated=frozenset(n for i, names in enumerate(seen) for n in names
                                          if any(n in other for other in seen[i + 1:])))
