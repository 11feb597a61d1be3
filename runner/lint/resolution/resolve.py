"""Name resolution over one parsed query: relations, scopes and output columns.

The scope tree (CTEs, derived tables, subqueries, UNION branches, lateral views) is sqlglot's
(:func:`sqlglot.optimizer.scope.build_scope`), resolved children first, so a scope's relations
have their shapes when it is reached. Per scope, every table reference is resolved against
``parsed_events``, the ref'd models' inferred columns and the CTEs; every column reference is
resolved (see :mod:`.names`); and the output columns of each SELECT are inferred: names as Spark
gives them, types from sqlglot's annotator.

Why not sqlglot's ``qualify`` for the column part (checked on sqlglot 30.30):

- it lower-cases every identifier (``normalize_identifiers``), losing the spelling Spark keeps
  for output columns (``userId``); lookups here are case-insensitive instead.
- it raises on the first unresolved column, without candidates; lint reports every unknown
  name with "did you mean" and the relation's columns.
- it accepts any struct field once the column resolves (``user.contry``); fields are checked
  here against the schema's struct types (arrays of structs included).
- it types LATERAL VIEW columns as UNKNOWN (``explode``) or wrongly (``posexplode``'s ``pos``
  as the array); here they are the element type, ``INT``, a map's key and value.
- it leaves lambda parameters untyped (``x -> x.errorCode``); here they are typed from the
  array or map the higher-order function ranges over, so their fields are checked.
- it expands select-list aliases in WHERE, which Spark rejects; Spark's own rules (aliases in
  the select list, GROUP BY, HAVING, ORDER BY only) are applied here.
- it rewrites the tree (qualified, quoted, stars expanded) while rules point at the user's nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import takewhile

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, ScopeType

from runner.errors import did_you_mean
from runner.lint.resolution.aggregates import grouping_aggregates
from runner.lint.resolution.join_keys import joined_unique
from runner.lint.resolution.names import NILADIC, Frame, NameResolver
from runner.lint.resolution.select_parts import (
    dot_root,
    grouping_items,
    join_columns,
    joined_shape,
    outer_source,
    repeated_names,
    select_aliases,
    star_except,
)
from runner.lint.resolution.shapes import OPEN, Analysis, Finding, Output, Shape
from runner.lint.resolution.spark_names import (
    cast_column,
    generator_call,
    generator_inputs,
    pretty_name,
)
from runner.lint.resolution.unique import (
    GROUPING_ID,
    grouping_sets,
    time_window,
    unique_sets,
)
from runner.lint.spark_types.infer import (
    UNKNOWN,
    generator_columns,
    is_,
    is_generator,
    is_known,
    parse_type,
    struct_fields,
)

#: The column ``GROUP BY window(ts, ...)`` / ``session_window(...)`` gives a SELECT.
_WINDOW_STRUCT = "STRUCT<start: TIMESTAMP, end: TIMESTAMP>"

__all__ = ["Resolver"]

_RENAMED_BY_ALIAS = (ScopeType.CTE, ScopeType.DERIVED_TABLE)  # WITH c(a, b) / (...) AS t(a, b)


class Resolver(NameResolver):
    """Resolves one model's query. Create one per model.

    Args:
        events: the shape of ``parsed_events``.
        event_fields: lower-cased -> declared name of the schema's top-level fields.
        refs: lower-cased name -> shape of each model this one ref()s (None: not known).
        models: lower-cased -> name of every model of the project.
        sql: the SQL text the query was parsed from (Spark names a column after the text of
            its expression: :func:`~.spark_names.pretty_name`).
    """

    def __init__(self, *, events: Shape, event_fields: Mapping[str, str],
                 refs: Mapping[str, Shape | None], models: Mapping[str, str],
                 sql: str = "") -> None:
        super().__init__(events=events, event_fields=event_fields)
        self.refs = refs
        self.models = models
        self.sql = sql
        self._outputs: dict[int, list[Output]] = {}  # id(SELECT) -> its output columns
        self._shapes: dict[int, Shape] = {}  # id(sqlglot scope) -> the relation it yields
        self._frames: dict[int, Frame] = {}  # id(sqlglot scope) -> what its names resolve in
        self._sources: dict[int, tuple[str, Shape]] = {}  # id(FROM/JOIN/LATERAL node) -> source

    def run(self, root: Scope) -> Analysis:
        """Resolve every scope of the query whose root scope is ``root``."""
        for scope in root.traverse():  # children first
            shape = self._scope(scope)
            if scope.scope_type in _RENAMED_BY_ALIAS and scope.outer_columns:
                shape = self._renamed(shape, scope.outer_columns, scope.expression.parent)
            self._shapes[id(scope)] = shape
        self.analysis.shape = self._shapes[id(root)]
        leftmost = root.expression
        while isinstance(leftmost, (exp.Subquery, exp.SetOperation)):
            leftmost = leftmost.this
        self.analysis.outputs = self._outputs.get(id(leftmost), [])
        return self.analysis

    # -- scopes and their relations -----------------------------------------------------------
    def _scope(self, scope: Scope) -> Shape:
        node = scope.expression
        if isinstance(node, exp.Select):
            return self.select(node, scope)
        if isinstance(node, exp.SetOperation) and len(scope.set_operation_scopes) == 2:
            left, right = (self._shapes.get(id(s), OPEN) for s in scope.set_operation_scopes)
            cols = tuple((n, t if is_known(t) and not is_(t, exp.DType.NULL) else rt)
                         for (n, t), (_, rt) in zip(left.columns, right.columns))
            distinct = isinstance(node, exp.Union) and bool(node.args.get("distinct"))
            unique = (frozenset(n.lower() for n, _ in cols),) if distinct else ()
            shape = Shape(cols, open=left.open or right.open, unique=unique)
            self._set_order(node, shape)
            return shape
        if isinstance(node, exp.Lateral):
            return self._lateral(node, scope)
        return OPEN  # VALUES, a table function in FROM: named by their alias columns, if any

    def _set_order(self, node: exp.SetOperation, shape: Shape) -> None:
        """ORDER BY after UNION/EXCEPT/INTERSECT sees the result's columns (the first branch's
        names): a bare name that is none of them is unknown (a qualified one names the first
        branch's relation: left alone)."""
        order = node.args.get("order")
        if order is None or shape.open:
            return
        for col in order.walk(prune=lambda n: isinstance(n, (exp.Query, exp.Subquery,
                                                             exp.Lambda))):
            if isinstance(col, exp.Column) and not col.is_star and len(col.parts) == 1 \
                    and shape.find(col.name) is None and col.name.lower() not in NILADIC:
                self._unknown(col.this, f"unknown column '{col.name}': ORDER BY after "
                              f"{node.key.upper()} sees the columns of its result"
                              + did_you_mean(col.name, shape.suggestions),
                              f"columns: {', '.join(shape.names)}")

    def _frame(self, scope: Scope) -> Frame:
        """The frame of ``scope``, made on first use (a correlated subquery, resolved before
        its enclosing query, needs that query's frame)."""
        frame = self._frames.get(id(scope))
        if frame is None:
            node = scope.expression
            if isinstance(node, exp.Lateral) and scope.parent is not None:
                # a lateral view sees the relations before it in the enclosing FROM
                owner = scope.parent
                refs = list(takewhile(lambda r: r[1] is not node, owner.references))
            else:
                owner, refs = scope, scope.references
            sources = [self._source(owner, name, ref) for name, ref in refs]
            frame = self._frames[id(scope)] = Frame(self._outer(scope), sources)
            if owner is not scope and isinstance(owner.expression, exp.Select):
                join_columns(owner.expression, owner, frame)
        return frame

    def _outer(self, scope: Scope) -> Frame | None:
        """The frame a scope is correlated with: a subquery's enclosing query; a derived table,
        CTE, UNION branch or lateral view sees what its enclosing query sees from outside."""
        while scope.parent is not None and scope.scope_type is not ScopeType.SUBQUERY:
            scope = scope.parent
        return self._frame(scope.parent) if scope.parent is not None else None

    def _source(self, scope: Scope, name: str, node: exp.Expr) -> tuple[str, Shape]:
        """(lower-cased alias, shape) of one relation of ``scope``'s FROM/JOIN/LATERAL VIEW
        (``name``, ``node``: one of sqlglot's ``scope.references``)."""
        known = self._sources.get(id(node))
        if known is not None:
            return known
        joins = node.args.get("joins") if isinstance(node, exp.Table) and isinstance(
            node.parent, exp.Subquery) and node.parent.alias else None
        if joins:  # (a JOIN b) AS j (USING, NATURAL: open)
            shape = OPEN if any(j.args.get("using") or j.args.get("method") for j in joins) \
                else joined_shape([self._table(t, scope) if isinstance(t, exp.Table) and
                                   isinstance(t.this, exp.Identifier) and
                                   not t.alias_column_names else OPEN
                                   for t in (node, *(j.this for j in joins))])
            if (outer := node.parent) is not None and outer.alias_column_names:  # AS j(x, y)
                shape = self._renamed(shape, outer.alias_column_names, outer)
        elif isinstance(node, exp.Table):
            shape = self._table(node, scope) if isinstance(node.this, exp.Identifier) else OPEN
        else:
            inner = node.unnest()
            child = next((s for s in scope.table_scopes if s.expression is inner), None)
            shape = self._shapes.get(id(child), OPEN) if child is not None else OPEN
        if node.args.get("pivots"):
            if shape is self.events:  # a PIVOT groups by every other column: all are read
                self.analysis.star_over_events = True
            self._pivot(node, name, shape)
            shape = OPEN  # PIVOT / UNPIVOT reshape the columns: not inferred
        columns = node.alias_column_names
        if columns and isinstance(node, (exp.Table, exp.Values, exp.Func)):
            # derived tables and CTEs: see _RENAMED_BY_ALIAS
            shape = self._renamed(shape, columns, node) if isinstance(node, exp.Table) \
                else shape.renamed(columns)
        alias = node.alias if isinstance(node, exp.Lateral) else name  # not AS e(column)
        source = self._sources[id(node)] = (alias.lower(), shape)
        return source

    def _renamed(self, shape: Shape, names: list[str], node: exp.Expr | None) -> Shape:
        """``shape`` seen through ``AS t(a, b)``: Spark's ResolveSubqueryColumnAliases wants
        one name per column ([ASSIGNMENT_ARITY_MISMATCH])."""
        alias = node.args.get("alias") if node is not None else None
        if not shape.open and len(names) != len(shape.columns) and alias is not None:
            at = alias.this if isinstance(alias, exp.TableAlias) else alias
            self.analysis.arity_mismatches.append(Finding(
                at, f"[ASSIGNMENT_ARITY_MISMATCH] {len(names)} column name(s) for a relation "
                f"of {len(shape.columns)} column(s): {', '.join(shape.names)}",
                "name each column of the relation once"))
        return shape.renamed(names)

    def _pivot(self, node: exp.Expr, name: str, shape: Shape) -> None:
        """A PIVOT's aggregates and FOR columns read the relation it pivots, nothing else."""
        if shape.open:
            return
        frame = Frame(None, [(name.lower(), shape)])
        for pivot in node.args["pivots"]:
            if not pivot.args.get("unpivot"):  # an UNPIVOT's IN lists columns
                parts = [*pivot.expressions, *(f.this for f in pivot.args.get("fields") or [])]
                self.walk(parts, frame)
                for part in parts:
                    self.annotator.annotate_expression(part)

    def _table(self, node: exp.Table, scope: Scope) -> Shape:
        """The shape of a named relation; an unknown or qualified one is OPEN (the guard,
        :mod:`.guard`, reports it)."""
        ident = node.this
        low = ident.name.lower()
        if node.args.get("db") or node.args.get("catalog"):
            return OPEN
        # Spark names are case-insensitive: sqlglot's own CTE lookup is not.
        ctes = {name.lower(): cte for name, cte in scope.cte_sources.items()}
        if low in ctes:
            return self._shapes.get(id(ctes[low]), OPEN)  # a recursive CTE is not traversed
        if low == "parsed_events":
            return self.events
        return self.refs.get(low) or OPEN

    def _lateral(self, node: exp.Lateral, scope: Scope) -> Shape:
        func = node.this
        names = node.alias_column_names
        if isinstance(func, exp.Query):  # LATERAL (SELECT ...): its subquery scope
            inner = func.unnest()
            child = next((s for s in scope.subquery_scopes if s.expression is inner), None)
            shape = self._shapes.get(id(child), OPEN) if child is not None else OPEN
            return shape.renamed(names) if names else shape
        self.walk(func, self._frame(scope))
        self.annotator.annotate_expression(func)
        cols = generator_columns(func) if is_generator(func) else None
        if names:
            types = [t for _, t in cols] if cols and len(cols) == len(names) else None
            return Shape(tuple(zip(names, types or [UNKNOWN] * len(names))))
        return Shape(tuple(cols)) if cols else OPEN

    def select(self, node: exp.Select, scope: Scope) -> Shape:
        frame = self._frame(scope)
        joins = node.args.get("joins") or []
        join_columns(node, scope, frame)
        for join in joins:
            self.walk(join.args.get("on"), frame)

        group = node.args.get("group")
        for key in group.expressions if group is not None else ():
            if (name := time_window(key)) is not None:
                frame.time_windows[name] = parse_type(_WINDOW_STRUCT)
        if grouping_sets(group):  # Spark's virtual column of the grouping set a row is of
            frame.time_windows[GROUPING_ID] = parse_type("BIGINT")
        frame.alias_ok = True
        outputs: list[Output] = []
        open_ = False
        unresolved: set[str] = set()
        # a generator's aliases are seen by the whole select list, before and after it; in an
        # aggregating SELECT the generator runs after the aggregate: neither the select list
        # nor GROUP BY sees them
        generated = {name.lower() for p in node.expressions if generator_call(p) is not None
                     for name in select_aliases(p)}
        aggregating = group is not None or any(
            next(grouping_aggregates(p), None) is not None for p in node.expressions)
        pending = set() if aggregating else set(generated)
        after_group: dict[str, exp.DataType] = {}
        for name in pending:
            frame.aliases.setdefault(name, UNKNOWN)
        for projection in node.expressions:
            before = (len(self.analysis.unknown_columns), self.tainted)
            self.walk(projection, frame)
            self.annotator.annotate_expression(projection)
            outs, more = self._outputs_of(projection, frame)
            open_ = open_ or more
            outputs.extend(outs)
            if (len(self.analysis.unknown_columns), self.tainted) != before:
                unresolved.update(o.name.lower() for o in outs)
            hidden = aggregating and generator_call(projection) is not None
            for out in outs:
                if hidden:
                    after_group.setdefault(out.name.lower(), out.type)
                    continue
                if out.name.lower() in pending:
                    pending.discard(out.name.lower())
                    frame.aliases[out.name.lower()] = out.type
                frame.aliases.setdefault(out.name.lower(), out.type)
        frame.alias_ok = False
        self.walk(node.args.get("where"), frame)
        frame.alias_ok = True
        # GROUP BY alone sees the inputs Spark moves out of a generator (_gen_input_<i>)
        inputs = {name: arg.type or UNKNOWN for p in node.expressions
                  for name, arg in generator_inputs(p) if name not in frame.aliases}
        frame.aliases.update(inputs)
        self.walk(group, frame)
        for name in inputs:
            del frame.aliases[name]
        for name, dtype in after_group.items():  # HAVING, ORDER BY: left as before
            frame.aliases.setdefault(name, dtype)
        if group is not None and grouping_sets(group):  # each expression is a column then
            for item in grouping_items(group):
                self.annotator.annotate_expression(item)
                name = self._generated(item)
                if name is not None:
                    frame.aliases.setdefault(name.lower(), item.type or UNKNOWN)
        for key in ("having", "qualify", "order", "windows", "distribute", "sort", "cluster"):
            self.walk(node.args.get(key), frame)
        self._outputs[id(node)] = outputs
        if not open_:
            self.analysis.selects[id(node)] = outputs
        single = frame.sources[0][1] if len(frame.sources) == 1 else None
        joined = joined_unique(node, self._relations(node), self.source_of, self.refs_of) \
            if node.args.get("joins") else []
        unique, rownums = unique_sets(node, outputs, single, self.refs_of, joined)
        return Shape(tuple((o.name, o.type) for o in outputs), open=open_, unique=unique,
                     rownums=rownums, unresolved=frozenset(unresolved),
                     repeated=repeated_names(outputs))

    def _relations(self, node: exp.Select) -> list[Shape | None]:
        """The shapes of ``node``'s FROM relation and of each JOIN's, in order (None: not
        resolved as a relation of its scope)."""
        from_ = node.args.get("from_")
        nodes = ([from_.this] if from_ is not None else []) + [
            j.this for j in node.args.get("joins") or []]
        found = (self._sources.get(id(n)) or self._sources.get(id(n.unnest())) for n in nodes)
        return [f[1] if f is not None else None for f in found]

    # -- outputs ------------------------------------------------------------------------------
    def _outputs_of(self, proj: exp.Expr, frame: Frame) -> tuple[list[Output], bool]:
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
            idents = proj.expressions
            types = [t for _, t in cols] if cols and len(cols) == len(idents) else None
            return [Output(i.name, t, i, True, proj.this)
                    for i, t in zip(idents, types or [UNKNOWN] * len(idents))], False
        if isinstance(proj, exp.Star):
            return self._expand_all(proj, frame)
        if isinstance(proj, exp.Column) and proj.is_star:
            return self._expand_one(proj, frame)
        if isinstance(proj, exp.Column) or (isinstance(proj, exp.Dot)
                                            and isinstance(dot_root(proj), exp.Column)):
            # a column, or a field of one: named after the column or the field; a field of
            # any other value (from_json(a).b) is named after its text, as an expression
            name = self.names.get(id(proj)) or proj.output_name
            return [Output(name, proj.type or UNKNOWN, proj, True, proj,
                           self._origin(proj))], False
        column = cast_column(proj)
        if column is not None and id(column) in self.refs_of:  # CAST(a AS INT) is named a
            return [Output(self.names.get(id(column)) or column.name, proj.type or UNKNOWN,
                           proj, True, proj)], False
        if is_generator(proj):
            cols = generator_columns(proj)
            return [Output(n, t, proj, True, proj) for n, t in cols or ()], cols is None
        text = self._generated(proj)
        if text is None:  # not known: sqlglot's text of it
            text = proj.sql(dialect="spark", comments=False)
        return [Output(text, proj.type or UNKNOWN, proj, False, proj)], False

    def _generated(self, node: exp.Expr) -> str | None:
        """The name Spark gives the column of ``node`` (no alias), recorded for the rules."""
        name = pretty_name(node, sql=self.sql, paths=self.paths,
                           outer=self.analysis.outer_references)
        if name is not None:
            self.analysis.generated[id(node)] = name
        return name

    def _origin(self, node: exp.Expr) -> tuple[int, str] | None:
        ref = self.refs_of.get(id(node))
        return (id(ref[0]), ref[1].lower()) if ref else None

    def _expand_all(self, star: exp.Star, frame: Frame) -> tuple[list[Output], bool]:
        skip, reshaped, unsure = star_except(star, frame)
        if not unsure and frame.sources and not any(src.open for _, src in frame.sources):
            known = {n.lower() for _, src in frame.sources for n in src.names}
            for item in star.args.get("except_") or []:
                column = item
                while isinstance(column, exp.Dot):
                    column = column.this
                if isinstance(column, exp.Column) and column.parts and \
                        column.parts[0].name.lower() not in known and \
                        frame.source(column.parts[0].name.lower()) is None:
                    ident = column.parts[0]
                    self._unknown(ident, f"unknown column '{ident.name}' in * EXCEPT"
                                  + did_you_mean(ident.name, sorted(known)))
        outs: list[Output] = []
        for i, (_, src) in enumerate(frame.sources):
            if src is self.events:
                self.analysis.star_over_events = True
            outs += [Output(n, UNKNOWN if n.lower() in reshaped else t, star,
                            origin=(id(src), n.lower())) for n, t in src.columns
                     if (i, n.lower()) not in frame.hidden and n.lower() not in skip]
        if frame.using:  # JOIN ... USING (k): Spark puts the USING columns first, once
            using = list(dict.fromkeys(frame.using))
            first = [next((o for o in outs if o.name.lower() == u), None) for u in using]
            front = [o for o in first if o is not None]
            outs = front + [o for o in outs if all(o is not f for f in front)]
        return outs, unsure or any(src.open for _, src in frame.sources) or not frame.sources

    def _expand_one(self, col: exp.Column, frame: Frame) -> tuple[list[Output], bool]:
        prefix = [p for p in col.parts if isinstance(p, exp.Identifier)]
        src = frame.source(prefix[0].name.lower()) if len(prefix) == 1 else None
        if src is None and len(prefix) == 1 and all(
                s.find(prefix[0].name) is None for _, s in frame.sources):
            src = outer_source(frame, prefix[0].name.lower())  # t.* of an enclosing query's t
        if src is not None:
            if src is self.events:
                self.analysis.star_over_events = True
            return [Output(n, t, col, origin=(id(src), n.lower())) for n, t in src.columns], \
                src.open
        # ``s.*`` of a struct column: resolve the prefix as a column (copies keep positions)
        parts = dict(zip(("this", "table", "db", "catalog"), (p.copy() for p in reversed(prefix))))
        probe = exp.Column(**parts)
        self.resolve_column(probe, frame)
        fields = struct_fields(probe.type)
        return [Output(n, t, col) for n, t in fields], not fields
