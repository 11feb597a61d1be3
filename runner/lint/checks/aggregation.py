"""What an aggregating SELECT aggregates and groups by, as Spark's analyser sees it: which
calls are aggregates (Spark's registry, for the ones sqlglot parses as anonymous calls) and
which are the functions a window applies, the nodes that belong to a SELECT (nested queries
left out), column paths and expression keys compared as Spark compares them (case-insensitive,
commutative operands in one order), and :class:`Grouping`, what a SELECT's GROUP BY covers.

Shared by the rules that check aggregation (:mod:`.analysis`, :mod:`.clauses`,
:mod:`.grouping`, :mod:`.aggregate_calls`, :mod:`.recursive_cte`), so each reads a SELECT's
aggregates and groups one way; which calls are aggregates is
:mod:`runner.lint.resolution.aggregates`'.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import (
    AGGREGATE_NAMES,
)
from runner.lint.resolution.spark_names import aggregate_list, generator_inputs
from runner.lint.resolution.unique import GROUPING_ID, grouping_sets, time_window

__all__ = ["Grouping", "aggregates_or_windows", "column_path", "expression_key", "select_sources",
           "unalias"]


def aggregates_or_windows(ctx: ModelContext) -> bool:
    """Whether the model's query has any aggregate or window call (the shared index: no walk):
    when it has none, the aggregation and window rules have nothing to check."""
    nodes = ctx.nodes
    return nodes.has(exp.AggFunc, exp.WithinGroup, exp.Window, exp.Any) or any(
        n.name.lower() in AGGREGATE_NAMES for n in nodes.of(exp.Anonymous))


def column_path(node: exp.Expr) -> tuple[str, ...] | None:
    """Lower-cased name parts of a column reference with its struct fields, or None."""
    if isinstance(node, exp.Column) and not node.is_star:
        return tuple(p.name.lower() for p in node.parts)
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
        inner = column_path(node.this)
        return None if inner is None else (*inner, node.expression.name.lower())
    return None


#: Operators whose operands Spark's canonical form orders (``1 + a`` is ``a + 1``).
_COMMUTATIVE = (exp.Add, exp.Mul, exp.And, exp.Or, exp.EQ, exp.NullSafeEQ, exp.BitwiseAnd,
                exp.BitwiseOr, exp.BitwiseXor)


def expression_key(node: exp.Expr) -> str:
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


def unalias(node: exp.Expr) -> exp.Expr:
    """What a select-list item computes: the expression under its alias, if any."""
    return node.this if isinstance(node, exp.Alias) else node


class Grouping:
    """What a SELECT groups by: expressions (as keys) and column paths, with relation
    aliases stripped so that ``p.request.endpoint`` and ``request.endpoint`` are one."""

    def __init__(self, select: exp.Select, generated: Mapping[int, str],
                 sources: Mapping[int, object]) -> None:
        self.generated = generated  # Spark's names of expressions without an alias
        self.sources = sources  # id() of a resolved column reference -> its relation
        self.relations = {s.alias_or_name.lower() for s in select_sources(select)}
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
                    self.add(unalias(projections[index]))
                continue
            self.add(item)
            path = column_path(item)
            if path and len(path) == 1 and path[0] in aliases and id(item) not in sources:
                # GROUP BY <select alias>: a column of the FROM clause of that name wins
                self.add(aliases[path[0]])
            if (window := time_window(item)) is not None:  # its column: `window`.start...
                self.paths.add((window,))
        if grouping_sets(group):
            self.paths.add((GROUPING_ID,))

    def add(self, node: exp.Expr) -> None:
        self.keys.add(expression_key(node))
        self.types.add(type(node))
        if id(node) in self.generated:  # its column, by Spark's name (grouping sets)
            self.paths.add((self.generated[id(node)].lower(),))
        path = column_path(node)
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


def select_sources(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_")
    sources = [from_.this] if from_ else []
    sources += [j.this for j in select.args.get("joins") or []]
    return sources + list(select.args.get("laterals") or [])
