"""Name resolution over one parsed query: relations, scopes and output columns.

Walks the query scope by scope (CTEs, derived tables, subqueries, lateral views), resolves
every table reference against ``parsed_events``, the ref'd models' inferred columns and the
CTEs, resolves every column reference (see :mod:`.names`), and infers the output columns of
each SELECT: names as Spark gives them and types from sqlglot's annotator.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Mapping

from sqlglot import exp

from ..config import did_you_mean
from .infer import UNKNOWN, generator_columns, is_, is_generator, is_known, struct_fields
from .names import NameResolver, Scope
from .shapes import OPEN, Analysis, Finding, Output, Shape
from .unique import unique_sets

__all__ = ["Resolver"]


class Resolver(NameResolver):
    """Resolves one model's query. Create one per model.

    Args:
        events: the shape of ``parsed_events``.
        event_fields: lower-cased -> declared name of the schema's top-level fields.
        refs: lower-cased name -> shape of each model this one ref()s (None: not known).
        models: lower-cased -> name of every model of the project.
    """

    def __init__(self, *, events: Shape, event_fields: Mapping[str, str],
                 refs: Mapping[str, Shape | None], models: Mapping[str, str]) -> None:
        super().__init__(events=events, event_fields=event_fields)
        self.refs = refs
        self.models = models
        self._outputs: dict[int, list[Output]] = {}

    def run(self, query: exp.Expression) -> Analysis:
        self.analysis.shape = self.query(query, {}, None)
        leftmost = query
        while isinstance(leftmost, (exp.Subquery, exp.SetOperation)):
            leftmost = leftmost.this
        self.analysis.outputs = self._outputs.get(id(leftmost), [])
        return self.analysis

    # -- relations ----------------------------------------------------------------------------
    def query(self, node: exp.Expression, ctes: dict[str, Shape], outer: Scope | None) -> Shape:
        while isinstance(node, exp.Subquery):
            node = node.this
        if not isinstance(node, exp.Query):
            return OPEN
        ctes = self._ctes(node, ctes, outer)
        if isinstance(node, exp.Select):
            return self.select(node, ctes, outer)
        if isinstance(node, exp.SetOperation):
            left = self.query(node.this, ctes, outer)
            right = self.query(node.expression, ctes, outer)
            cols = tuple((n, t if is_known(t) and not is_(t, exp.DType.NULL) else rt)
                         for (n, t), (_, rt) in zip(left.columns, right.columns))
            distinct = isinstance(node, exp.Union) and bool(node.args.get("distinct"))
            unique = (frozenset(n.lower() for n, _ in cols),) if distinct else ()
            return Shape(cols, open=left.open or right.open, unique=unique)
        return OPEN

    def _ctes(self, node: exp.Expression, ctes: dict[str, Shape], outer: Scope | None
              ) -> dict[str, Shape]:
        with_ = node.args.get("with_")
        if not with_:
            return ctes
        ctes = dict(ctes)
        if with_.args.get("recursive"):
            ctes.update({cte.alias.lower(): OPEN for cte in with_.expressions})
        for cte in with_.expressions:
            shape = self.query(cte.this, ctes, outer)
            names = cte.alias_column_names
            ctes[cte.alias.lower()] = shape.renamed(names) if names else shape
        return ctes

    def select(self, node: exp.Select, ctes: dict[str, Shape], outer: Scope | None) -> Shape:
        scope = Scope(outer, ctes)
        from_ = node.args.get("from_")
        if from_ is not None:
            self._add_source(from_.this, scope)
        joins = node.args.get("joins") or []
        for join in joins:
            self._add_source(join.this, scope)
            for ident in join.args.get("using") or []:
                scope.hidden.add((len(scope.sources) - 1, ident.name.lower()))
                scope.using.append(ident.name.lower())
        for lateral in node.args.get("laterals") or []:
            self._add_source(lateral, scope)
        for join in joins:
            self.walk(join.args.get("on"), scope)

        scope.alias_ok = True
        outputs: list[Output] = []
        open_ = False
        for projection in node.expressions:
            self.walk(projection, scope)
            self.annotator.annotate_expression(projection)
            outs, more = self._outputs_of(projection, scope)
            open_ = open_ or more
            outputs.extend(outs)
            for out in outs:
                scope.aliases.setdefault(out.name.lower(), out.type)
        scope.alias_ok = False
        self.walk(node.args.get("where"), scope)
        scope.alias_ok = True
        for key in ("group", "having", "qualify", "order", "windows", "distribute", "sort",
                    "cluster"):
            self.walk(node.args.get(key), scope)
        self._outputs[id(node)] = outputs
        single = scope.sources[0][1] if len(scope.sources) == 1 else None
        unique, rownums = unique_sets(node, outputs, single, self.refs_of)
        return Shape(tuple((o.name, o.type) for o in outputs), open=open_, unique=unique,
                     rownums=rownums)

    def _add_source(self, node: exp.Expression, scope: Scope) -> None:
        if isinstance(node, exp.Table):
            shape = self._table(node, scope) if isinstance(node.this, exp.Identifier) else OPEN
        elif isinstance(node, exp.Subquery):
            shape = self.query(node.this, scope.ctes, scope.parent)
        elif isinstance(node, exp.Lateral):
            shape = self._lateral(node, scope)
        else:
            shape = OPEN
        if node.args.get("pivots"):
            if shape is self.events:  # a PIVOT groups by every other column: all are read
                self.analysis.star_over_events = True
            shape = OPEN  # PIVOT / UNPIVOT reshape the columns: not inferred
        names = node.alias_column_names
        if names and not isinstance(node, exp.Lateral):
            shape = shape.renamed(names)
        scope.sources.append((node.alias_or_name.lower(), shape))

    def _table(self, node: exp.Table, scope: Scope) -> Shape:
        ident = node.this
        low = ident.name.lower()
        if node.args.get("db") or node.args.get("catalog"):
            self._table_finding(node, node.sql(dialect="spark"), scope)
            return OPEN
        if low in scope.ctes:
            return scope.ctes[low]
        if low == "parsed_events":
            return self.events
        if low in self.refs:
            return self.refs[low] or OPEN
        if low in self.models:
            name = self.models[low]
            self.analysis.unknown_tables.append(Finding(
                ident, f"model '{name}' is read without ref()",
                f"write {{{{ ref('{name}') }}}}: it makes '{name}' run first in each batch"))
            return OPEN
        self._table_finding(ident, ident.name, scope)
        return OPEN

    def _table_finding(self, node: exp.Expression, name: str, scope: Scope) -> None:
        candidates = ["parsed_events", *self.refs, *scope.ctes, *self.models.values()]
        self.analysis.unknown_tables.append(Finding(
            node, f"unknown table '{name}'" + did_you_mean(name, candidates),
            "a model reads parsed_events, {{ ref('model') }} or a CTE"))

    def _lateral(self, node: exp.Lateral, scope: Scope) -> Shape:
        func = node.this
        names = node.alias_column_names
        if isinstance(func, (exp.Subquery, exp.Query)):
            shape = self.query(func, scope.ctes, scope)
            return shape.renamed(names) if names else shape
        self.walk(func, scope)
        self.annotator.annotate_expression(func)
        cols = generator_columns(func) if is_generator(func) else None
        if names:
            types = [t for _, t in cols] if cols and len(cols) == len(names) else []
            return Shape(tuple((n, t) for n, t in zip_longest(names, types, fillvalue=UNKNOWN)))
        return Shape(tuple(cols)) if cols else OPEN

    # -- outputs ------------------------------------------------------------------------------
    def _outputs_of(self, proj: exp.Expression, scope: Scope) -> tuple[list[Output], bool]:
        """The output columns of one projection, and whether there may be more than we know."""
        if isinstance(proj, exp.Alias):
            inner = proj.this
            dtype = inner.type
            if is_generator(inner):
                cols = generator_columns(inner)
                dtype = cols[0][1] if cols and len(cols) == 1 else UNKNOWN
            return [Output(proj.alias, dtype or UNKNOWN, proj.args["alias"], True, inner,
                           self._origin(inner))], False
        if isinstance(proj, exp.Aliases):
            cols = generator_columns(proj.this) if is_generator(proj.this) else None
            types = [t for _, t in cols] if cols and len(cols) == len(proj.expressions) else []
            return [Output(i.name, t, i, True, proj.this) for i, t in
                    zip_longest(proj.expressions, types, fillvalue=UNKNOWN)], False
        if isinstance(proj, exp.Star):
            return self._expand_all(proj, scope)
        if isinstance(proj, exp.Column) and proj.is_star:
            return self._expand_one(proj, scope)
        if isinstance(proj, (exp.Column, exp.Dot)):
            name = self.names.get(id(proj)) or proj.output_name
            return [Output(name, proj.type or UNKNOWN, proj, True, proj,
                           self._origin(proj))], False
        if is_generator(proj):
            cols = generator_columns(proj)
            return [Output(n, t, proj, True, proj) for n, t in cols or ()], cols is None
        text = proj.sql(dialect="spark", comments=False)
        return [Output(text, proj.type or UNKNOWN, proj, False, proj)], False

    def _origin(self, node: exp.Expression) -> tuple[int, str] | None:
        ref = self.refs_of.get(id(node))
        return (id(ref[0]), ref[1].lower()) if ref else None

    def _expand_all(self, star: exp.Star, scope: Scope) -> tuple[list[Output], bool]:
        skip = {c.name.lower() for c in star.args.get("except_") or []}
        outs: list[Output] = []
        for i, (_, src) in enumerate(scope.sources):
            if src is self.events:
                self.analysis.star_over_events = True
            outs += [Output(n, t, star, origin=(id(src), n.lower())) for n, t in src.columns
                     if (i, n.lower()) not in scope.hidden and n.lower() not in skip]
        if scope.using:  # JOIN ... USING (k): Spark puts the USING columns first, once
            using = list(dict.fromkeys(scope.using))
            first = [next((o for o in outs if o.name.lower() == u), None) for u in using]
            front = [o for o in first if o is not None]
            outs = front + [o for o in outs if all(o is not f for f in front)]
        return outs, any(src.open for _, src in scope.sources) or not scope.sources

    def _expand_one(self, col: exp.Column, scope: Scope) -> tuple[list[Output], bool]:
        prefix = [p for p in col.parts if isinstance(p, exp.Identifier)]
        src = scope.source(prefix[0].name.lower()) if len(prefix) == 1 else None
        if src is not None:
            if src is self.events:
                self.analysis.star_over_events = True
            return [Output(n, t, col, origin=(id(src), n.lower())) for n, t in src.columns], \
                src.open
        # ``s.*`` of a struct column: resolve the prefix as a column (copies keep positions)
        parts = dict(zip(("this", "table", "db", "catalog"), (p.copy() for p in reversed(prefix))))
        probe = exp.Column(**parts)
        self.resolve_column(probe, scope)
        fields = struct_fields(probe.type)
        return [Output(n, t, col) for n, t in fields], not fields
