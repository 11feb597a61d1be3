"""Spark analyzer errors caught offline: what ``spark.sql`` would refuse when the stream starts.

Each rule mirrors one of Spark's analysis error classes, so that a pull request fails at
``runner compile`` instead of the stream failing at run time:

- ``missing-aggregation``: ``[MISSING_AGGREGATION]`` / ``[MISSING_GROUP_BY]``, a column that
  is neither grouped nor inside an aggregate in an aggregating SELECT
  (``[UNRESOLVED_ALL_IN_GROUP_BY]`` under GROUP BY ALL);
- ``misplaced-aggregate``: aggregates or window functions in WHERE, JOIN ... ON or GROUP BY,
  and an aggregate nested in another (``[NESTED_AGGREGATE_FUNCTION]``);
- ``window-order``: ranking and offset window functions without ORDER BY;
- ``ambiguous-column``: ``[AMBIGUOUS_REFERENCE]``, found by name resolution;
- ``type-mismatch``: comparing a struct, array or map with a value of another kind.

When in doubt a rule does not flag: a name it cannot place is left to ``unknown-column``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from sqlglot import exp

from runner.errors import Violation
from runner.lint.builtins import aggregate_names
from runner.lint.context import ModelContext
from runner.lint.infer import is_, is_known, type_string
from runner.lint.rules import ModelRule, time_column
from runner.lint.spark_names import aggregate_list, generator_call, generator_inputs
from runner.lint.unique import GROUPING_ID, grouping_sets, time_window

__all__ = ["AmbiguousColumn", "MisplacedAggregate", "MissingAggregation", "TypeMismatch",
           "WindowOrder"]

#: Spark's aggregate functions (for the ones sqlglot parses as anonymous calls), from its registry.
_AGGREGATE_NAMES = aggregate_names()
_NESTED = (exp.Query, exp.Subquery)


def _is_aggregate(node: exp.Expr) -> bool:
    """An aggregate call (window functions included: the caller knows which it walks)."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in _AGGREGATE_NAMES
    if isinstance(node, exp.Filter):  # count(*) FILTER (WHERE ...): the filter is inside
        return _is_aggregate(node.this)
    if isinstance(node, exp.Any):  # any(x) is bool_or; x = ANY (...), LIKE ANY (...) are not
        return not (isinstance(node.parent, exp.Predicate) and node.parent.expression is node)
    return isinstance(node, (exp.AggFunc, exp.WithinGroup))


def _window_function(node: exp.Expr) -> bool:
    """``node`` is the function a window applies (``sum(x)`` in ``sum(x) OVER (...)``)."""
    parent = node.parent
    while isinstance(parent, (exp.IgnoreNulls, exp.RespectNulls, exp.WithinGroup, exp.Filter)) \
            and parent.this is node:  # percentile_cont(p) WITHIN GROUP (...) OVER (...)
        node, parent = parent, parent.parent
    return isinstance(parent, exp.Window) and parent.this is node


def _aggregates_or_windows(ctx: ModelContext) -> bool:
    """Whether the model's query has any aggregate or window call (the shared index: no walk):
    when it has none, the aggregation and window rules have nothing to check."""
    nodes = ctx.nodes
    return nodes.has(exp.AggFunc, exp.WithinGroup, exp.Window, exp.Any) or any(
        n.name.lower() in _AGGREGATE_NAMES for n in nodes.of(exp.Anonymous))


def _own(root: exp.Expr | None) -> Iterator[exp.Expr]:
    """Nodes under ``root`` that belong to its SELECT (nested queries left out)."""
    if root is None:
        return
    yield from root.walk(prune=lambda n: isinstance(n, _NESTED) and n is not root)


def _grouping_aggregates(root: exp.Expr | None) -> Iterator[exp.Expr]:
    """Aggregate calls under ``root`` that aggregate its SELECT's rows (not window functions)."""
    for node in _own(root):
        if _is_aggregate(node) and not _window_function(node):
            yield node


def _path(node: exp.Expr) -> tuple[str, ...] | None:
    """Lower-cased name parts of a column reference with its struct fields, or None."""
    if isinstance(node, exp.Column) and not node.is_star:
        return tuple(p.name.lower() for p in node.parts)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        inner = _path(node.this)
        return None if inner is None else (*inner, node.expression.name.lower())
    return None


#: Operators whose operands Spark's canonical form orders (``1 + a`` is ``a + 1``).
_COMMUTATIVE = (exp.Add, exp.Mul, exp.And, exp.Or, exp.EQ, exp.NullSafeEQ, exp.BitwiseAnd,
                exp.BitwiseOr, exp.BitwiseXor)


def _key(node: exp.Expr) -> str:
    """Spark SQL text of ``node`` with identifiers lower-cased (Spark's names are
    case-insensitive) and the operands of commutative operators in one order (as Spark
    compares expressions, canonicalized), to compare expressions."""
    copy = node.copy().transform(
        lambda n: exp.to_identifier(n.name.lower()) if isinstance(n, exp.Identifier) else n)
    for op in reversed(list(copy.find_all(*_COMMUTATIVE))):  # inner operators first
        a, b = op.this, op.expression
        if a is not None and b is not None and \
                a.sql(dialect="spark", comments=False) > b.sql(dialect="spark", comments=False):
            op.set("this", b)
            op.set("expression", a)
    return copy.sql(dialect="spark", comments=False)


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


class _Grouping:
    """What a SELECT groups by: expressions (as keys) and column paths, with relation
    aliases stripped so that ``p.request.endpoint`` and ``request.endpoint`` are one."""

    def __init__(self, select: exp.Select, generated: Mapping[int, str],
                 sources: Mapping[int, object]) -> None:
        self.generated = generated  # Spark's names of expressions without an alias
        self.sources = sources  # id() of a resolved column reference -> its relation
        self.relations = {s.alias_or_name.lower() for s in _sources(select)}
        self.keys: set[str] = set()
        self.types: set[type] = set()  # of the grouped expressions: others are not compared
        self.paths: set[tuple[str, ...]] = set()  # grouped paths, with and without relation
        #: grouped paths written with their relation (``v1.col1``) and resolved to it:
        #: (id(relation), column, field...); the paths of the others
        self.sourced: set[tuple[object, ...]] = set()
        self.loose: set[tuple[str, ...]] = set()
        projections = aggregate_list(select)  # what GROUP BY ordinals count
        aliases: dict[str, exp.Expr] = {}
        for p in select.expressions:  # GROUP BY a: the first select-list a
            if isinstance(p, exp.Alias):
                aliases.setdefault(p.alias.lower(), p.this)
            elif id(p) in generated:  # GROUP BY `concat_ws( , a, b)`
                aliases.setdefault(generated[id(p)].lower(), p)
            for name, arg in generator_inputs(p):
                aliases.setdefault(name, arg)
        group = select.args.get("group")
        items: list[exp.Expr] = []
        for key in ("expressions", "grouping_sets", "cube", "rollup"):
            items += group.args.get(key) or [] if group else []
        stack = list(items)
        while stack:
            item = stack.pop()
            if isinstance(item, (exp.GroupingSets, exp.Cube, exp.Rollup, exp.Tuple)):
                stack += item.expressions
                continue
            if isinstance(item, exp.Paren):
                stack.append(item.this)
                continue
            if isinstance(item, exp.Literal) and item.is_int:
                index = int(item.name) - 1
                if 0 <= index < len(projections):
                    self.add(_unalias(projections[index]))
                continue
            self.add(item)
            path = _path(item)
            if path and len(path) == 1 and path[0] in aliases and id(item) not in sources:
                # GROUP BY <select alias>: a column of the FROM clause of that name wins
                self.add(aliases[path[0]])
            if (window := time_window(item)) is not None:  # its column: `window`.start...
                self.paths.add((window,))
        if grouping_sets(group):
            self.paths.add((GROUPING_ID,))

    def add(self, node: exp.Expr) -> None:
        self.keys.add(_key(node))
        self.types.add(type(node))
        if id(node) in self.generated:  # its column, by Spark's name (grouping sets)
            self.paths.add((self.generated[id(node)].lower(),))
        path = _path(node)
        if path:
            self.paths.update(self.forms(path))
            if self._qualified(path) and id(node) in self.sources:
                self.sourced.add(self._sourced(node, path))
            else:
                self.loose.update(self.forms(path))

    def _qualified(self, path: tuple[str, ...]) -> bool:
        return len(path) > 1 and path[0] in self.relations

    def _sourced(self, node: exp.Expr, path: tuple[str, ...]) -> tuple[object, ...]:
        return (id(self.sources[id(node)]), *self.forms(path)[-1])

    def forms(self, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        """``path`` and, when its first part names a relation, the path without it."""
        if len(path) > 1 and path[0] in self.relations:
            return [path, path[1:]]
        return [path]

    def covers(self, path: tuple[str, ...], node: exp.Expr | None = None) -> bool:
        """The column is grouped, or is a field of a grouped column (``user.country`` when
        grouping by ``user``). A column resolved to a relation is grouped when that
        relation's column is: ``v2.col1`` is not ``v1.col1``, though both are ``col1``."""
        paths = self.paths
        if node is not None and self._qualified(path) and id(node) in self.sources:
            key = self._sourced(node, path)
            if any(key[:i] in self.sourced for i in range(2, len(key) + 1)):
                return True
            paths = self.loose  # not another relation's column of the same name
        return any(form[:i] in paths for form in self.forms(path)
                   for i in range(1, len(form) + 1))


def _sources(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_")
    sources = [from_.this] if from_ else []
    sources += [j.this for j in select.args.get("joins") or []]
    return sources + list(select.args.get("laterals") or [])


class MissingAggregation(ModelRule):
    """In a SELECT that aggregates (GROUP BY, or an aggregate function), every column outside
    an aggregate must be in GROUP BY: Spark refuses the query ([MISSING_AGGREGATION])."""

    id = "missing-aggregation"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        aggregating = _aggregates_or_windows(ctx)
        for select in ctx.nodes.of(exp.Select):
            if aggregating or select.args.get("group") is not None:
                yield from self._select(ctx, select)

    def _select(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        group = select.args.get("group")
        if group is not None and group.args.get("all"):
            yield from self._group_by_all(ctx, select)
            return
        clauses = [*select.expressions, select.args.get("having"), select.args.get("order")]
        if group is None and not any(next(_grouping_aggregates(c), None) for c in clauses):
            return
        grouping = _Grouping(select, ctx.analysis.generated if ctx.analysis else {},
                             ctx.analysis.sources if ctx.analysis else {})
        aliases: set[str] = set()
        seen: set[str] = set()
        # a name that does not resolve is unknown-column's finding, not this rule's; a name
        # of an enclosing query is one value per group of this one
        unknown = {id(f.node) for f in ctx.analysis.unknown_columns} | \
            ctx.analysis.outer_references if ctx.analysis else set()
        for projection in select.expressions:
            for node in self._ungrouped(projection, grouping, aliases):
                if any(id(n) in unknown for n in node.walk()):
                    continue
                if _key(node) not in seen:
                    seen.add(_key(node))
                    yield self._violation(ctx, node, group is not None)
            if isinstance(projection, exp.Alias):  # lateral column aliases, then HAVING/ORDER
                aliases.add(projection.alias.lower())
            elif id(projection) in grouping.generated:  # ORDER BY `count(1)`
                aliases.add(grouping.generated[id(projection)].lower())
        for clause in clauses[-2:]:
            for node in self._ungrouped(clause, grouping, aliases):
                if any(id(n) in unknown for n in node.walk()):
                    continue
                if _key(node) not in seen:
                    seen.add(_key(node))
                    yield self._violation(ctx, node, group is not None)

    def _group_by_all(self, ctx: ModelContext, select: exp.Select) -> Iterator[Violation]:
        """GROUP BY ALL groups by the select-list items without an aggregate; an item with
        an aggregate and a column outside it that none of those groups is what Spark cannot
        infer ([UNRESOLVED_ALL_IN_GROUP_BY]: ``SELECT id + count(*) ... GROUP BY ALL``)."""
        analysis = ctx.analysis
        if analysis is None:
            return
        items = [p for p in select.expressions if not isinstance(p, exp.Star)]
        with_aggregate = [p for p in items if next(_grouping_aggregates(p), None) is not None]
        if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
               for p in select.expressions):
            return
        grouping = _Grouping(select, analysis.generated, analysis.sources)
        for p in items:
            call = generator_call(p)
            if call is not None:  # its arguments without an aggregate are grouped
                for arg in call.iter_expressions():
                    if next(_grouping_aggregates(arg), None) is None:
                        grouping.add(arg)
            elif p not in with_aggregate:
                grouping.add(_unalias(p))
        with_aggregate = [p for p in with_aggregate if generator_call(p) is None]
        aliases = {p.alias.lower() for p in items if isinstance(p, exp.Alias)}
        skip = {id(f.node) for f in analysis.unknown_columns} | analysis.outer_references
        for item in with_aggregate:
            for node in self._ungrouped(item, grouping, aliases):
                if any(id(n) in skip for n in node.walk()):
                    continue
                text = node.sql(dialect="spark", comments=False)
                yield self.at(ctx, node, f"[UNRESOLVED_ALL_IN_GROUP_BY] GROUP BY ALL cannot "
                              f"group by this item: '{text}' is outside its aggregate",
                              "list the GROUP BY columns, or aggregate the column too")
                break
        for clause in (select.args.get("having"), select.args.get("order")):
            # HAVING / ORDER BY read the groups: a column no item groups is not there
            for node in self._ungrouped(clause, grouping, aliases):
                if any(id(n) in skip for n in node.walk()):
                    continue
                text = node.sql(dialect="spark", comments=False)
                yield self.at(ctx, node, f"[UNRESOLVED_COLUMN] '{text}' is not grouped by "
                              "GROUP BY ALL (the select list's items without an aggregate) "
                              "nor inside an aggregate", "select it, or aggregate it")
                break

    def _violation(self, ctx: ModelContext, node: exp.Expr, grouped: bool) -> Violation:
        text = node.sql(dialect="spark", comments=False)
        where = "in GROUP BY" if grouped else "grouped (the SELECT aggregates all rows)"
        return self.at(ctx, node, f"'{text}' is neither {where} nor inside an aggregate "
                       "function", f"add {text} to GROUP BY, or aggregate it, e.g. "
                       f"any_value({text})")

    def _ungrouped(self, root: exp.Expr | None, grouping: _Grouping,
                   aliases: set[str]) -> Iterator[exp.Expr]:
        """Column references under ``root`` that are neither grouped nor aggregated."""
        stack = [root] if root is not None else []
        while stack:
            node = stack.pop()
            if isinstance(node, _NESTED) or (type(node) in grouping.types
                                             and _key(node) in grouping.keys):
                continue
            path = _path(node)
            if path is not None:
                if not grouping.covers(path, node) and not (len(path) == 1
                                                            and path[0] in aliases):
                    yield node
                continue
            if _is_aggregate(node) and not _window_function(node):
                continue
            stack.extend(reversed(list(node.iter_expressions())))


_CLAUSES = (("where", "WHERE", "filters rows before they are grouped",
             "filter on the aggregate in HAVING"),
            ("group", "GROUP BY", "defines the groups the aggregates run over",
             "group by the column itself"))


class MisplacedAggregate(ModelRule):
    """Aggregate and window functions belong in the select list, HAVING, QUALIFY or ORDER BY:
    not in WHERE, JOIN ... ON or GROUP BY, and an aggregate cannot contain another."""

    id = "misplaced-aggregate"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not _aggregates_or_windows(ctx):
            return
        for select in ctx.nodes.of(exp.Select):
            clauses = [(select.args.get(k), name, why, fix) for k, name, why, fix in _CLAUSES]
            clauses += [(j.args.get("on"), "JOIN ... ON", "matches rows before they are "
                         "grouped", "aggregate in a subquery, then join it")
                        for j in select.args.get("joins") or []]
            for clause, name, why, fix in clauses:
                for node in _own(clause):
                    if isinstance(node, exp.Window):
                        yield self.at(ctx, node, f"window function in {name}: {name} {why}",
                                      "compute it in a subquery, or filter with QUALIFY")
                    elif _is_aggregate(node) and not _window_function(node) \
                            and not _outer_aggregate(node, select):
                        yield self.at(ctx, node, f"aggregate function {_name(node)} in "
                                      f"{name}: {name} {why}", fix)
            yield from self._grouped_aggregate_alias(ctx, select)
            for node in _grouping_aggregates(select):
                if isinstance(node, (exp.Filter, exp.WithinGroup)):
                    continue  # wrappers: the aggregate inside is checked itself
                inner = next((n for n in _grouping_aggregates(node) if n is not node), None)
                if inner is not None:
                    yield self.at(ctx, inner, f"aggregate function {_name(inner)} inside "
                                  f"{_name(node)}: aggregates cannot be nested",
                                  "aggregate in a subquery first, or make the outer one a "
                                  "window function (... OVER ())")


    def _grouped_aggregate_alias(self, ctx: ModelContext, select: exp.Select
                                 ) -> Iterator[Violation]:
        """``SELECT count(b) AS k ... GROUP BY k``: the alias (no column of the FROM clause
        has that name) is the aggregate, which Spark cannot group by ([GROUP_BY_AGGREGATE])."""
        group = select.args.get("group")
        if group is None or ctx.analysis is None:
            return
        aliases: dict[str, exp.Expr] = {}
        for p in select.expressions:
            if isinstance(p, exp.Alias):
                aliases.setdefault(p.alias.lower(), p.this)
        unknown = {id(f.node) for f in ctx.analysis.unknown_columns}
        for item in group.expressions:
            if not isinstance(item, exp.Column) or item.table or id(item) in \
                    ctx.analysis.sources or id(item) in unknown:
                continue
            target = aliases.get(item.name.lower())
            aggregate = next(_grouping_aggregates(target), None) if target else None
            if aggregate is not None:
                yield self.at(ctx, item, f"[GROUP_BY_AGGREGATE] GROUP BY {item.name} names the "
                              f"select list's aggregate {_name(aggregate)}: GROUP BY "
                              "defines the groups the aggregates run over",
                              "group by the column itself")


def _outer_aggregate(node: exp.Expr, select: exp.Select) -> bool:
    """``node``, in a subquery's clause, aggregates only columns of an enclosing query: it is
    that query's aggregate (``HAVING (SELECT 1 WHERE max(t.a) = 1) = 1``), not the subquery's."""
    if select.find_ancestor(exp.Select) is None:
        return False
    own = {s.alias_or_name.lower() for s in _sources(select)}
    columns = [c for c in node.find_all(exp.Column) if not c.is_star]
    return bool(columns) and all(
        (c.table.lower() not in own) if c.table else not own for c in columns)


def _name(node: exp.Expr) -> str:
    return node.sql(dialect="spark", comments=False).split("(")[0].lower() + "()"


_NEEDS_ORDER = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist,
                exp.Ntile, exp.Lag, exp.Lead)


class WindowOrder(ModelRule):
    """Ranking and offset window functions (row_number, rank, dense_rank, percent_rank,
    cume_dist, ntile, lag, lead) need ORDER BY in their window."""

    id = "window-order"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.Window):
            return
        for select in ctx.nodes.of(exp.Select):
            named = {w.name.lower(): w for w in select.args.get("windows") or []}
            for window in _own(select):
                if not isinstance(window, exp.Window) or window.parent is select and (
                        window in (select.args.get("windows") or [])):
                    continue
                func = window.this
                while isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
                    func = func.this
                if not isinstance(func, _NEEDS_ORDER) or window.args.get("order"):
                    continue
                alias = window.args.get("alias")
                base = named.get(alias.name.lower()) if alias else None
                if alias and (base is None or base.args.get("order")):
                    continue  # ordered by its named window, or one we cannot see
                name = _name(func)
                ts = time_column(ctx, events_first=True)
                yield self.at(ctx, window, f"window function {name} needs ORDER BY in its "
                              "window: without one its result is not defined",
                              f"{name} OVER (PARTITION BY ... ORDER BY {ts})")


class AmbiguousColumn(ModelRule):
    """An unqualified column must name a column of exactly one of the joined relations:
    qualify it (alias.column) when two have it."""

    id = "ambiguous-column"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.analysis is not None:
            yield from self.findings(ctx, ctx.analysis.ambiguous_columns)


_COMPLEX = (exp.DType.STRUCT, exp.DType.ARRAY, exp.DType.MAP)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)


def _operand_type(node: exp.Expr) -> exp.DataType | None:
    if isinstance(node, exp.Literal):
        return exp.DataType.build("STRING" if node.is_string else "DOUBLE")
    dtype = node.type
    return dtype if is_known(dtype) and not is_(dtype, exp.DType.NULL) else None


class TypeMismatch(ModelRule):
    """A comparison needs comparable sides: a struct, array or map cannot be compared with a
    value of another kind, and maps cannot be compared at all."""

    id = "type-mismatch"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or ctx.analysis is None:
            return
        for node in ctx.nodes.of(*_COMPARISONS):
            left, right = _operand_type(node.this), _operand_type(node.expression)
            if left is None or right is None:
                continue
            kinds = {t.this for t in (left, right) if t.this in _COMPLEX}
            if not kinds or (len(kinds) == 1 and left.this == right.this
                             and exp.DType.MAP not in kinds):
                continue
            side = node.this if left.this in _COMPLEX else node.expression
            text = side.sql(dialect="spark", comments=False)
            yield self.at(ctx, node, f"cannot compare {type_string(left)} with "
                          f"{type_string(right)}", f"compare a field or an element of {text} "
                          f"instead (e.g. {text}.<field>, {text}[0])")
