"""``common-type``: inputs Spark must merge into one type have one
(:mod:`runner.lint.spark_types.coercion`'s ANSI rules), or its analyser refuses the model:

- ``coalesce``/``nvl``/``ifnull``, ``IF``/``nvl2``, ``CASE`` results, ``array()``, ``IN``
  lists, ``greatest``/``least`` (no string promotion), ``concat`` of arrays, ``map_concat``,
  ``listagg``'s value and separator: ``[DATATYPE_MISMATCH.DATA_DIFF_TYPES]``; ``map()``'s
  keys and values: ``[DATATYPE_MISMATCH.CREATE_MAP_KEY_DIFF_TYPES]``,
  ``[...CREATE_MAP_VALUE_DIFF_TYPES]``;
- ``UNION``/``INTERSECT``/``EXCEPT`` columns: ``[INCOMPATIBLE_COLUMN_TYPE]``, strings of two
  collations too (ANSI's string promotion merges none; ``listagg``'s value and separator
  likewise: ``[DATATYPE_MISMATCH.DATA_DIFF_TYPES]``), where lint is sure of both
  (:func:`~runner.lint.spark_types.expr_types.collation_of`);
- an array function's element and value (``array_contains``, ``array_insert``...):
  ``[DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES]``; ``map_contains_key``'s key:
  ``[DATATYPE_MISMATCH.MAP_FUNCTION_DIFF_TYPES]``; ``map_zip_with``'s keys:
  ``[DATATYPE_MISMATCH.MAP_ZIP_WITH_DIFF_TYPES]``;
- a recursive CTE's recursive query, whose columns must cast to its anchor query's types:
  ``[CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE]``;
- ``pmod`` and operators whose operands lint types only here (expressions, not the
  literals, columns and casts :class:`~.signatures.ArgumentType` judges):
  ``[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES]``.

Types are Spark's, worked out here for the expressions whose types sqlglot's annotator
spells differently (literals, casts, the merging functions themselves, arithmetic); columns,
fields and elements are typed by name resolution (:mod:`runner.lint.resolution.resolve`). An input
whose type is not known, or is one :mod:`runner.lint.spark_types.coercion` does not model, settles
nothing: the rule passes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.shapes import Output
from runner.lint.spark_types import coercion as co
from runner.lint.spark_types.builtins import arg_type
from runner.lint.spark_types.coercion import SparkType
from runner.lint.spark_types.expr_types import (
    case_values,
    collation_of,
    if_values,
    known_collation,
    known_types,
    map_parts,
    spark_type,
)
from runner.lint.spark_types.infer import is_known

__all__ = ["CommonType", "spark_type"]


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark", comments=False)


# -- the rule -------------------------------------------------------------------------------

def _first_mismatch(types: Sequence[SparkType], *, strings: bool = True
                    ) -> tuple[SparkType, SparkType] | None:
    """The type merged so far and the first input it has no common type with, or None when
    all merge (or all are one type already: Spark casts nothing then)."""
    if all(co.same_type(t, types[0]) for t in types):
        return None
    find = co.wider if strings else co.wider_without_string
    found: SparkType = co.NULL
    for t in types:
        merged = find(found, t)
        if merged is None:
            return found, t
        found = merged
    return None


#: Operand types of ``+ - * /`` Spark resolves as arithmetic (not date or interval functions).
_PLAIN = frozenset({"void", "boolean", "binary", "string", "tinyint", "smallint", "int",
                    "bigint", "float", "double", "decimal"})
_ARRAY_FUNCTIONS = frozenset({"array_contains", "array_position", "array_remove",
                              "array_insert", "array_append", "array_prepend"})


def _call(node: exp.Expr) -> tuple[str, list[exp.Expr]] | None:
    """``(lower-cased name, arguments)`` of a function call as sqlglot keeps it."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower(), list(node.expressions)
    if isinstance(node, exp.Func):
        args = [a for a in (node.args.get(k) for k in node.arg_types) if a is not None]
        flat: list[exp.Expr] = []
        for a in args:
            flat.extend(x for x in (a if isinstance(a, list) else [a])
                        if isinstance(x, exp.Expr))
        return node.sql_name().lower(), flat
    return None


class CommonType(ModelRule):
    """Inputs Spark merges into one type must have one (ANSI type coercion): coalesce, IF,
    CASE, array(), IN, greatest/least, concat of arrays, map_concat
    ([DATATYPE_MISMATCH.DATA_DIFF_TYPES]), map() keys and values
    ([DATATYPE_MISMATCH.CREATE_MAP_KEY_DIFF_TYPES]...), UNION/INTERSECT/EXCEPT columns
    ([INCOMPATIBLE_COLUMN_TYPE]; strings of two collations too, as listagg's value and
    separator), array and map functions' elements and keys
    ([DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES], [...MAP_FUNCTION_DIFF_TYPES],
    [...MAP_ZIP_WITH_DIFF_TYPES]), an operator's operands
    ([DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES]), a recursive CTE's recursive columns
    ([CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE]). Only where lint knows every input's type."""

    id = "common-type"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or ctx.analysis is None:
            return
        yield from self._merging(ctx)
        yield from self._in_lists(ctx)
        yield from self._in_subqueries(ctx, ctx.analysis.selects)
        yield from self._functions(ctx)
        yield from self._operators(ctx)
        yield from self._set_operations(ctx, ctx.analysis.selects)
        yield from self._recursive_ctes(ctx, ctx.analysis.selects)

    def _diff(self, ctx: ModelContext, node: exp.Expr, what: str, inputs: Sequence[exp.Expr],
              *, strings: bool = True, error: str = "DATA_DIFF_TYPES") -> Iterator[Violation]:
        types = known_types(inputs)
        found = _first_mismatch(types, strings=strings) if types else None
        if found is None:
            return
        a, b = found
        yield self.at(ctx, node, f"[DATATYPE_MISMATCH.{error}] {what}: the inputs "
                      f"have no common type ({a} and {b}): {_sql(node)}",
                      f"cast the {b} input to {a} (or both to one type)")

    def _merging(self, ctx: ModelContext) -> Iterator[Violation]:
        nodes = ctx.nodes.of(exp.Coalesce, exp.Greatest, exp.Least, exp.If, exp.Nvl2,
                             exp.Case, exp.Array, exp.VarMap)
        for node in nodes:
            if isinstance(node, exp.Coalesce):
                yield from self._diff(ctx, node, "coalesce", [node.this, *node.expressions])
            elif isinstance(node, (exp.Greatest, exp.Least)):
                name = "greatest" if isinstance(node, exp.Greatest) else "least"
                yield from self._diff(ctx, node, name, [node.this, *node.expressions],
                                      strings=False)
            elif isinstance(node, (exp.If, exp.Nvl2)) and not isinstance(node.parent,
                                                                          exp.Case):
                yield from self._diff(ctx, node, "if", if_values(node))
            elif isinstance(node, exp.Case):
                yield from self._diff(ctx, node, "CASE", case_values(node))
            elif isinstance(node, exp.Array) and not isinstance(node.parent, exp.VarMap):
                yield from self._diff(ctx, node, "array", node.expressions)
            elif isinstance(node, exp.VarMap):
                keys, values = map_parts(node)
                yield from self._diff(ctx, node, "map keys", keys,
                                      error="CREATE_MAP_KEY_DIFF_TYPES")
                yield from self._diff(ctx, node, "map values", values,
                                      error="CREATE_MAP_VALUE_DIFF_TYPES")

    def _in_lists(self, ctx: ModelContext) -> Iterator[Violation]:
        for node in ctx.nodes.of(exp.In):
            items = node.expressions
            if not items or node.args.get("query") is not None or isinstance(node.parent,
                                                                             exp.Pivot):
                continue  # a PIVOT's values are cast to its column (runner.lint.checks.relations)
            types = known_types([node.this, *items])
            if types is None or all(co.same_type(t, types[0], names=False) for t in types):
                continue  # IN compares structs by their fields' types, not their names
            yield from self._diff(ctx, node, "IN", [node.this, *items])

    def _in_subqueries(self, ctx: ModelContext, selects: Mapping[int, list[Output]]
                       ) -> Iterator[Violation]:
        """``(a, b) IN (SELECT x, y ...)``: each value and its column need a common type."""
        for node in ctx.nodes.of(exp.In):
            query = node.args.get("query")
            if not isinstance(query, exp.Expr):
                continue
            values = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
            columns = _branch_types(query, selects)
            if columns is None or len(columns) != len(values):
                continue
            for value, column in zip(values, columns):
                a = spark_type(value)
                if a is None or column is None or co.wider(a, column) is not None:
                    continue
                yield self.at(ctx, node, f"[DATATYPE_MISMATCH.IN_SUBQUERY_DATA_TYPE_MISMATCH] "
                              f"{_sql(value)} ({a}) and the subquery's column ({column}) have "
                              "no common type", "cast the value or the subquery's column")
                break

    def _listagg(self, ctx: ModelContext) -> Iterator[Violation]:
        """``listagg(x, sep)``/``string_agg``: a BINARY value with a STRING separator (or
        the other way round) has no common type; nor have strings of two collations
        (``ListAgg.checkInputDataTypes`` wants one type, and ``CollationTypeCoercion`` does
        not merge listagg's inputs: ``listagg(x COLLATE utf8_lcase, ',')`` is refused)."""
        for node in ctx.nodes.of(exp.GroupConcat):
            value, separator = node.this, node.args.get("separator")
            while isinstance(value, (exp.Order, exp.Distinct)):
                value = value.this if isinstance(value, exp.Order) else (
                    value.expressions[0] if len(value.expressions) == 1 else None)
            a = spark_type(value) if isinstance(value, exp.Expr) else None
            b = spark_type(separator) if isinstance(separator, exp.Expr) else None
            if a is not None and b is not None and {a.name, b.name} == {"binary", "string"}:
                yield self.at(ctx, node, f"[DATATYPE_MISMATCH.DATA_DIFF_TYPES] listagg: the "
                              f"value ({a}) and the separator ({b}) have no common type",
                              "a BINARY value takes a BINARY separator (X'2C'), a STRING one "
                              "a STRING separator")
                continue
            collations = _collations([value, separator])
            if collations is not None:
                yield self.at(ctx, node, "[DATATYPE_MISMATCH.DATA_DIFF_TYPES] listagg: the "
                              f"value ({_string(collations[0])}) and the separator "
                              f"({_string(collations[1])}) differ in collation",
                              f"give the separator the value's: '...' COLLATE {collations[0]} "
                              "(listagg does not merge collations)")

    def _functions(self, ctx: ModelContext) -> Iterator[Violation]:
        yield from self._listagg(ctx)
        for node in ctx.nodes.of(exp.Anonymous, exp.Concat, exp.ArrayContains,
                                 exp.ArrayPosition, exp.ArrayRemove, exp.ArrayInsert,
                                 exp.ArrayAppend, exp.ArrayPrepend, exp.MapContainsKey):
            call = _call(node)
            if call is None:
                continue
            name, args = call
            if name in ("concat", "map_concat"):
                types = known_types(args)
                kind = "array" if name == "concat" else "map"
                if types and all(t.name == kind for t in types):
                    yield from self._diff(ctx, node, name, args)
            elif name in _ARRAY_FUNCTIONS or name == "map_contains_key":
                yield from self._element(ctx, node, name, args)
            elif name == "map_zip_with" and len(args) == 3:
                yield from self._map_zip_with(ctx, node, args)
            elif name == "pmod" and len(args) == 2:
                yield from self._binary(ctx, exp.Mod(this=args[0], expression=args[1]),
                                        args[0], args[1], at=node)

    def _element(self, ctx: ModelContext, node: exp.Expr, name: str, args: list[exp.Expr]
                 ) -> Iterator[Violation]:
        """``array_contains(arr, v)``...: the element type and the value's must have a
        common type without string promotion (``findWiderTypeWithoutStringPromotionForTwo``);
        ``map_contains_key``: the key's."""
        if len(args) < 2:
            return
        value_arg = args[2] if name == "array_insert" else args[1]
        if name == "array_insert" and len(args) != 3:
            return
        container, value = spark_type(args[0]), spark_type(value_arg)
        kind = "map" if name == "map_contains_key" else "array"
        if container is None or value is None or container.name != kind or \
                value.name == "void":
            return
        inner = container.args[0]
        if co.same_type(inner, value) or co.wider_without_string(inner, value) is not None:
            return
        error = "MAP_FUNCTION_DIFF_TYPES" if kind == "map" else "ARRAY_FUNCTION_DIFF_TYPES"
        what = "key" if kind == "map" else "element"
        yield self.at(ctx, node, f"[DATATYPE_MISMATCH.{error}] {name}(): the {kind}'s {what} "
                      f"type {inner} and {_sql(value_arg)} ({value}) have no common type",
                      f"cast {_sql(value_arg)} to {inner}")

    def _map_zip_with(self, ctx: ModelContext, node: exp.Expr, args: list[exp.Expr]
                      ) -> Iterator[Violation]:
        left, right = spark_type(args[0]), spark_type(args[1])
        if left is None or right is None or left.name != "map" or right.name != "map":
            return
        a, b = left.args[0], right.args[0]
        merged = co.wider(a, b)
        if co.same_type(a, b) or (merged is not None and not co.force_nullable(a, merged)
                                  and not co.force_nullable(b, merged)):
            return
        yield self.at(ctx, node, f"[DATATYPE_MISMATCH.MAP_ZIP_WITH_DIFF_TYPES] map_zip_with(): "
                      f"the maps' key types {a} and {b} have no common type",
                      "cast one map's keys to the other's key type")

    def _operators(self, ctx: ModelContext) -> Iterator[Violation]:
        for node in ctx.nodes.of(exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.EQ,
                                 exp.NEQ, exp.NullSafeEQ, exp.LT, exp.LTE, exp.GT, exp.GTE):
            if arg_type(node.this) is not None and arg_type(node.expression) is not None:
                continue  # literals, columns, casts: the argument-type rule's operator table
            yield from self._binary(ctx, node, node.this, node.expression)
        for between in ctx.nodes.of(exp.Between):  # x >= low AND x <= high
            for bound in (between.args.get("low"), between.args.get("high")):
                if isinstance(bound, exp.Expr):
                    found = list(self._binary(ctx, exp.GTE(this=between.this, expression=bound),
                                              between.this, bound, at=between))
                    yield from found[:1]
                    if found:
                        break
        for case in ctx.nodes.of(exp.Case):  # CASE x WHEN v: x = v
            operand = case.this
            for branch in case.args.get("ifs") or [] if isinstance(operand, exp.Expr) else []:
                found = list(self._binary(
                    ctx, exp.EQ(this=operand, expression=branch.this), operand, branch.this,
                    at=branch.this, text=f"CASE {_sql(operand)} WHEN {_sql(branch.this)}"))
                yield from found
                if found:
                    break

    def _binary(self, ctx: ModelContext, node: exp.Expr, left: exp.Expr, right: exp.Expr, *,
                at: exp.Expr | None = None, text: str | None = None) -> Iterator[Violation]:
        """Spark's binary operators cast both operands to a common type (ANSI string
        promotion, decimal precision, then the tightest common type); none: refused.
        ``+ - * /`` with a date, time or interval operand are left alone (Spark rewrites
        those into date and interval functions first), but for ``NULL / <interval>``."""
        a, b = spark_type(left), spark_type(right)
        if a is None or b is None or co.same_type(a, b):
            return
        where = at if at is not None else node
        names = {a.name, b.name}
        if isinstance(node, exp.Div) and a.name == "void" and b.name.startswith("interval"):
            pass  # no interval division has a NULL dividend: refused as below
        elif isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)) and not names <= _PLAIN:
            return
        elif isinstance(node, exp.Mod) and not names <= _PLAIN | co.DATETIME:
            return
        elif co.binary_common_type(a, b) is not None:
            return
        yield self.at(ctx, where, f"[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES] "
                      f"{text or _sql(where)}: "
                      f"its operands have no common type ({a} and {b})",
                      "cast one operand to the other's type")

    def _set_operations(self, ctx: ModelContext, selects: Mapping[int, list[Output]]
                        ) -> Iterator[Violation]:
        for node in ctx.nodes.of(exp.Union, exp.Intersect, exp.Except):
            left = _branch_types(node.this, selects)
            right = _branch_types(node.expression, selects)
            if left is None or right is None or len(left) != len(right):
                continue
            collations = _paired(_branch_collations(node.this, selects),
                                 _branch_collations(node.expression, selects), len(left))
            for i, (a, b) in enumerate(zip(left, right)):
                if a is None or b is None:
                    continue
                if a.name == b.name == "string":  # ANSI's string promotion merges no two
                    ca, cb = collations[i]         # collations (findWiderTypeForString)
                    if ca is None or cb is None or ca == cb:
                        continue
                    a, b = co.SparkType("string", collation=ca), co.SparkType(
                        "string", collation=cb)
                elif co.wider(a, b) is not None:
                    continue
                op = type(node).__name__.upper()
                yield self.at(ctx, node.expression, f"[INCOMPATIBLE_COLUMN_TYPE] {op}: column "
                              f"{i + 1} is {a} in the first query and {b} in the second, which "
                              "have no common type", f"cast column {i + 1} of one query to the "
                              "other's type")
                break


    def _recursive_ctes(self, ctx: ModelContext, selects: Mapping[int, list[Output]]
                        ) -> Iterator[Violation]:
        """``WITH RECURSIVE t AS (anchor UNION ALL recursive)``: the anchor's column types are
        the CTE's; a recursive column Spark cannot cast to its anchor column's type (their
        common type is not the anchor's: ``INT`` then ``BIGINT``) is refused
        (``[CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE]``)."""
        for with_ in ctx.nodes.of(exp.With):
            if not with_.args.get("recursive"):
                continue
            for cte in with_.expressions:
                body = cte.this
                if not isinstance(body, exp.Union) or not any(
                        t.name.lower() == cte.alias.lower() and not t.args.get("db")
                        for t in body.expression.find_all(exp.Table)):
                    continue  # not recursive: a plain UNION, widened as any other
                anchor = _branch_types(body.this, selects)
                step = _branch_types(body.expression, selects)
                if anchor is None or step is None or len(anchor) != len(step):
                    continue
                for i, (a, b) in enumerate(zip(anchor, step)):
                    merged = co.wider(a, b) if a is not None and b is not None else None
                    if a is None or b is None or merged is None or co.same_type(merged, a):
                        continue  # no common type at all: INCOMPATIBLE_COLUMN_TYPE above
                    yield self.at(ctx, body.expression, f"[CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE] "
                                  f"recursive CTE {cte.alias}: column {i + 1} is {a} in its "
                                  f"anchor query and {b} in its recursive one, which does not "
                                  f"cast to {a}", f"cast column {i + 1} of the recursive query "
                                  f"to {a} (or the anchor's to {merged})")
                    break


def _string(collation: str) -> str:
    return str(co.SparkType("string", collation=collation))


def _collations(nodes: Sequence[exp.Expr | None]) -> tuple[str, str] | None:
    """Two string inputs' collations
    (:func:`~runner.lint.spark_types.expr_types.collation_of`) when lint is sure of both and they
    differ; None otherwise."""
    found = [collation_of(n) if isinstance(n, exp.Expr) else None for n in nodes]
    a, b = found
    return (a, b) if a is not None and b is not None and a != b else None


def _paired(left: list[str | None] | None, right: list[str | None] | None, n: int
            ) -> list[tuple[str | None, str | None]]:
    if left is None or right is None or len(left) != n or len(right) != n:
        return [(None, None)] * n
    return list(zip(left, right))


def _branch_collations(node: exp.Expr, selects: Mapping[int, list[Output]]
                       ) -> list[str | None] | None:
    """A query's string columns' collations where lint is sure of them (None per column
    otherwise); None for anything but a SELECT (a nested set operation too)."""
    node = node.unnest()
    if not isinstance(node, exp.Select):
        return None
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
           for p in node.expressions):
        outputs = selects.get(id(node))  # a star: name resolution's columns
        if outputs is None:
            return None
        types = [co.of(o.type) if is_known(o.type) else None for o in outputs]
        return [known_collation(t) if t is not None else None for t in types]
    return [collation_of(p.this if isinstance(p, exp.Alias) else p) for p in node.expressions]


def _branch_types(node: exp.Expr, selects: Mapping[int, list[Output]]
                  ) -> list[SparkType | None] | None:
    """The column types of a query: one side of a set operation, an IN subquery (None: not
    known, e.g. a star over a relation lint cannot see into)."""
    node = node.unnest()
    if isinstance(node, exp.SetOperation):
        left = _branch_types(node.this, selects)
        right = _branch_types(node.expression, selects)
        if left is None or right is None or len(left) != len(right):
            return None
        return [co.wider(a, b) if a is not None and b is not None else None
                for a, b in zip(left, right)]
    if not isinstance(node, exp.Select):
        return None
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
           for p in node.expressions):
        outputs = selects.get(id(node))  # a star: name resolution's columns, when all known
        return [co.of(o.type) if is_known(o.type) else None for o in outputs] \
            if outputs is not None else None
    return [spark_type(p.this if isinstance(p, exp.Alias) else p) for p in node.expressions]
