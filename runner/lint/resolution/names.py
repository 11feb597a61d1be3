"""Resolving one name in a frame (the relations one SELECT reads), the way Spark does.

A column reference is tried as ``alias.column[.field...]`` against the frame's relations, then
as ``column[.field...]`` (struct access: ``user.userId``), then as a select-list alias where
Spark allows one, then in the enclosing frames (correlated subqueries). Lambda parameters of
higher-order functions are typed from the array (or map) they range over, so ``x.errorCode``
in ``transform(errors, x -> x.errorCode)`` is checked too.

When in doubt it does not flag: a name is only unknown when every relation it could come
from has a fully known set of columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from sqlglot import exp

from runner.errors import did_you_mean
from runner.lint.resolution.shapes import OPEN, Analysis, Finding, Shape
from runner.lint.spark_types.infer import (
    element_type,
    field_type,
    is_,
    is_known,
    make_annotator,
    parse_type,
    type_string,
)

__all__ = ["NILADIC", "Frame", "NameResolver", "listing"]

_Lambdas = Mapping[str, "exp.DataType | None"]
_NO_LAMBDAS: _Lambdas = {}
_INDEX_LAMBDAS = (exp.Transform, exp.ArrayFilter)
# Functions Spark calls without parentheses when no column has the name (sqlglot parses a few
# of them as columns). Spark 4.2's grammar has these; current_schema, current_database,
# current_catalog, current_timezone and localtimestamp need their parentheses (measured).
NILADIC = {"current_date": "DATE", "current_timestamp": "TIMESTAMP", "current_time": "TIME",
           "current_user": "STRING", "user": "STRING", "session_user": "STRING",
           "current_path": "STRING"}


@dataclass
class Frame:
    """What the column references of one scope resolve against: the relations it reads
    (lower-cased alias, shape; in FROM/JOIN/LATERAL VIEW order), its select-list aliases, and
    the frame of the query it is correlated with (None at the top or for a derived table)."""

    parent: Frame | None
    sources: list[tuple[str, Shape]] = field(default_factory=list)
    aliases: dict[str, exp.DataType] = field(default_factory=dict)
    alias_ok: bool = False
    hidden: set[tuple[int, str]] = field(default_factory=set)  # JOIN USING duplicates
    #: ``window`` / ``session_window`` -> their struct, when GROUP BY has such a call (Spark
    #: names the grouping column after the function: ``SELECT window.start ...``), and
    #: ``grouping__id`` when it has grouping sets (CUBE, ROLLUP, GROUPING SETS)
    time_windows: dict[str, exp.DataType] = field(default_factory=dict)
    using: list[str] = field(default_factory=list)  # JOIN USING column names, in order

    def source(self, alias: str) -> Shape | None:
        return next((s for a, s in self.sources if a == alias), None)


class NameResolver:
    """Resolves and types the column references of expressions in a :class:`Frame`
    (:class:`.resolve.Resolver` builds the frames from sqlglot's scopes).

    Args:
        events: the shape of ``parsed_events``.
        event_fields: lower-cased -> declared name of the schema's top-level fields.
    """

    def __init__(self, *, events: Shape, event_fields: Mapping[str, str]) -> None:
        self.events = events
        self.event_fields = event_fields
        self.annotator = make_annotator()
        self.analysis = Analysis(shape=OPEN, outputs=[])
        self.refs_of: dict[int, tuple[Shape, str]] = {}  # plain column node -> (source, column)
        self.source_of = self.analysis.sources  # resolved column node -> its relation
        self.names: dict[int, str] = {}  # resolved reference node -> Spark's name for it
        #: resolved reference of a relation's column -> Spark's text of it in a generated name
        #: (``user.country``: the column and its fields, without the relation)
        self.paths: dict[int, str] = {}
        self.tainted = 0  # references resolved to an unresolved column (Shape.unresolved)

    # -- expressions --------------------------------------------------------------------------
    def walk(self, root: exp.Expr | list[Any] | None, frame: Frame,
             lambdas: _Lambdas = _NO_LAMBDAS) -> None:
        """Resolve every reference under ``root`` (pre-order, siblings in argument order).

        Queries under ``root`` are child scopes, resolved before this one: skipped here.
        """
        if root is None:
            return
        roots = root if isinstance(root, list) else [root]
        stack: list[tuple[exp.Expr, _Lambdas]] = [(r, lambdas) for r in reversed(roots)]
        while stack:
            node, lams = stack.pop()
            if isinstance(node, exp.Column):
                self.resolve_column(node, frame, lams)
            elif isinstance(node, exp.Query):  # Subquery too
                continue
            elif isinstance(node, exp.Dot):
                root_ = node
                fields: list[exp.Identifier] = []
                while isinstance(root_, exp.Dot) and isinstance(root_.expression, exp.Identifier):
                    fields.insert(0, root_.expression)
                    root_ = root_.this
                if isinstance(root_, exp.Identifier) and root_.name.lower() in lams:
                    self._descend(node, lams[root_.name.lower()], fields, root_.name)
                else:
                    stack.append((node.this, lams))
            elif isinstance(node, exp.Identifier):
                dtype = lams.get(node.name.lower())
                if is_known(dtype):
                    node.type = dtype
            elif isinstance(node, exp.Lambda):
                stack.append((node.this, self._bind(node, lams)))
            elif not isinstance(node, (exp.Star, exp.DataType)):
                stack.extend((c, lams) for c in reversed(list(node.iter_expressions())))

    def _bind(self, lam: exp.Lambda, lams: _Lambdas) -> _Lambdas:
        """Lambda parameters with their types: the array's element, an index, a map's key..."""
        func = lam.parent
        args = [a for a in func.iter_expressions() if a is not lam] if func else []
        for arg in args[:2]:
            self.annotator.annotate_expression(arg)
        first = args[0].type if args else None
        types: list[exp.DataType | None]
        if isinstance(func, exp.Reduce):
            types = [func.args["initial"].type, element_type(first)]
        elif first is not None and is_(first, exp.DType.MAP) and len(first.expressions) == 2:
            types = list(first.expressions)
        elif isinstance(func, exp.Anonymous) and func.name.lower() == "zip_with" and len(args) > 1:
            types = [element_type(first), element_type(args[1].type)]
        elif isinstance(func, _INDEX_LAMBDAS):
            types = [element_type(first), parse_type("INT")]
        else:
            types = [element_type(first)]
        bound = dict(lams)
        for param, dtype in zip_longest(lam.expressions, types[:len(lam.expressions)]):
            bound[param.name.lower()] = dtype
        return bound

    def resolve_column(self, node: exp.Column, frame: Frame,
                       lams: _Lambdas = _NO_LAMBDAS) -> None:
        """Resolve, type and check one column reference (and the struct fields after it)."""
        if node.is_star:
            return  # t.* / struct.* are expanded (and checked) as outputs
        idents = [p for p in node.parts if isinstance(p, exp.Identifier)]
        top: exp.Expr = node
        while (isinstance(top.parent, exp.Dot) and top.parent.this is top
               and isinstance(top.parent.expression, exp.Identifier)):
            top = top.parent
            idents.append(top.expression)
        first = idents[0].name.lower()
        if first in lams:
            self._descend(top, lams[first], idents[1:], idents[0].name)
            return
        missed: tuple[Shape, exp.Identifier, str] | None = None
        sc: Frame | None = frame  # then the frames it is correlated with
        while sc is not None:
            if len(idents) > 1 and (src := sc.source(first)) is not None:
                col = src.find(idents[1].name)
                if col is not None:
                    self._resolved(top, src, col, idents, 2)
                    self._correlated(top, sc, frame)
                    self._same_alias(idents, sc)
                    self._twice(idents[1], src, sc)
                    return
                if src.open:
                    return
                missed = missed or (src, idents[1], idents[0].name)
            for _, src in sc.sources:
                col = src.find(first)
                if col is not None:
                    if (len(idents) > 1 and sc is frame and sc.alias_ok and first in sc.aliases
                            and field_type(col[1], idents[1].name)[0] is None
                            and field_type(sc.aliases[first], idents[1].name)[0] is not None):
                        # ORDER BY col1.a: the select list's col1 has the field, the source's
                        # does not: Spark resolves it against the select list
                        self._descend(top, sc.aliases[first], idents[1:], idents[0].name)
                        return
                    self._resolved(top, src, col, idents, 1)
                    self._ambiguous(idents[0], sc)
                    self._correlated(top, sc, frame)
                    self._twice(idents[0], src, sc)
                    return
            if first in sc.time_windows:
                self._descend(top, sc.time_windows[first], idents[1:], idents[0].name)
                return
            if sc is frame and sc.alias_ok and first in sc.aliases:
                self._descend(top, sc.aliases[first], idents[1:], idents[0].name)
                return
            if any(src.open for _, src in sc.sources):
                return
            sc = sc.parent
        if len(idents) == 1 and first in NILADIC:
            node.type = parse_type(NILADIC[first])
            return
        if missed is not None:
            src, ident, alias = missed
            self._unknown(ident, f"unknown column '{ident.name}' in '{alias}'"
                          + did_you_mean(ident.name, src.suggestions),
                          f"columns of '{alias}': {listing(src.names)}")
            return
        candidates = [n for _, src in frame.sources for n in src.suggestions]
        if frame.alias_ok:
            candidates += list(frame.aliases)
        self._unknown(idents[0], f"unknown column '{idents[0].name}'"
                      + did_you_mean(idents[0].name, candidates))

    def _correlated(self, top: exp.Expr, found: Frame, frame: Frame) -> None:
        """Record a reference resolved in an enclosing query's frame (an outer reference:
        one value per row of that query, a constant to the aggregates of this one)."""
        if found is not frame:
            self.analysis.outer_references.add(id(top))

    def _twice(self, ident: exp.Identifier, src: Shape, scope: Frame) -> None:
        """Record a name one relation has twice (``SELECT col1 FROM (SELECT 1 AS col1, 2 AS
        col1)``: Spark's [AMBIGUOUS_REFERENCE]), unless a select-list alias of that name is
        what it names (ORDER BY col1 after ``3 AS col1``)."""
        low = ident.name.lower()
        if low in src.repeated and not (scope.alias_ok and low in scope.aliases):
            self.analysis.ambiguous_columns.append(Finding(
                ident, f"column '{ident.name}' is ambiguous: its relation has two columns of "
                "that name", "give one of them another alias where the relation is made"))

    def _same_alias(self, idents: list[exp.Identifier], scope: Frame) -> None:
        """Record ``t.a`` when two relations of the scope are named ``t`` and both have ``a``
        (``WITH t AS (...) SELECT t.a FROM (...) AS t CROSS JOIN t``: Spark's
        [AMBIGUOUS_REFERENCE])."""
        alias, column = idents[0].name.lower(), idents[1].name
        having = [src for a, src in scope.sources if a == alias and src.find(column) is not None]
        if len(having) > 1:
            self.analysis.ambiguous_columns.append(Finding(
                idents[1], f"column '{idents[0].name}.{column}' is ambiguous: two relations are "
                f"named '{idents[0].name}'", "give one of the relations another alias"))

    def _ambiguous(self, ident: exp.Identifier, scope: Frame) -> None:
        """Record an unqualified name that two of the scope's relations have (Spark's
        [AMBIGUOUS_REFERENCE]); JOIN ... USING columns are one column."""
        low = ident.name.lower()
        having = [alias for i, (alias, src) in enumerate(scope.sources)
                  if (i, low) not in scope.hidden and src.find(low) is not None]
        if len(having) > 1:
            self.analysis.ambiguous_columns.append(Finding(
                ident, f"column '{ident.name}' is ambiguous: "
                + " and ".join(f"'{a}'" for a in having) + " both have it",
                f"qualify it: {having[0]}.{ident.name}"))

    def _resolved(self, top: exp.Expr, src: Shape, col: tuple[str, exp.DataType],
                  idents: list[exp.Identifier], used: int) -> None:
        name, dtype = col
        if name.lower() in src.unresolved:
            self.tainted += 1  # a column computed from a typo upstream: so is this one
        if src is self.events and name.lower() in self.event_fields:
            self.analysis.used_fields.add(name)
        self.source_of[id(top)] = src
        if used == len(idents):
            self.refs_of[id(top)] = (src, name)
        path = self._descend(top, dtype, idents[used:], name)
        if path is not None:
            self.paths[id(top)] = path

    def _descend(self, top: exp.Expr, dtype: exp.DataType | None,
                 fields: list[exp.Identifier], name: str) -> str | None:
        """Follow struct field access from a value of ``dtype``; type ``top`` with the result.
        Returns the path followed (``name.field...``), None when a field is not there."""
        path = name
        for ident in fields:
            nxt, canonical, candidates = field_type(dtype, ident.name)
            if nxt is None:
                if candidates:
                    self._unknown(ident, f"unknown field '{ident.name}' in struct '{path}'"
                                  + did_you_mean(ident.name, candidates),
                                  f"fields of '{path}': {listing(candidates)}")
                elif candidates is not None:
                    self._unknown(ident, f"'{path}' is {type_string(dtype)}, not a struct: it "
                                  f"has no field '{ident.name}'")
                return None
            dtype, name = nxt, canonical or ident.name
            path = f"{path}.{name}"
        if is_known(dtype):
            top.type = dtype
        self.names[id(top)] = name
        return path

    def _unknown(self, node: exp.Expr, message: str, hint: str | None = None) -> None:
        self.analysis.unknown_columns.append(Finding(node, message, hint))


def listing(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")
