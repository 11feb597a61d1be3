"""Names Spark's analyser gives what a query does not name, which a query may then use.

- An expression without an alias is named after its text as Spark prints it
  (:func:`pretty_name`: ``concat_ws(' ', a, b)`` is the column `` `concat_ws( , a, b)` ``,
  ``d + 1`` is `` `(d + 1)` ``): GROUP BY, HAVING and ORDER BY may name it so, and two such
  columns of one name are one name twice (a Delta table cannot hold them).
- A generator in an aggregating SELECT (``SELECT stack(2, 'a', count(*), arr) AS (x, y), id
  ... GROUP BY ...``) is computed over the aggregate: Spark moves each argument that is not a
  constant into the aggregate's list, in the generator's place, as ``_gen_input_<position>``
  (:func:`generator_inputs`). GROUP BY may name them, and GROUP BY ordinals count that list
  (:func:`aggregate_list`): ``GROUP BY 2`` in ``SELECT id, explode(arr) ... GROUP BY id, 2`` is
  ``arr``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.lint.spark_types.builtins import aggregate_names, signature

__all__ = ["aggregate_list", "cast_column", "function_name", "generator_call", "generator_inputs",
           "pretty_name", "suffixed_number"]

#: What makes an argument not a constant for Spark (not foldable): a column, a subquery, an
#: aggregate or window, a call whose value changes per row.
_NOT_CONSTANT = (exp.Column, exp.Subquery, exp.AggFunc, exp.Window, exp.Rand, exp.Randn)


def function_name(node: exp.Func) -> str:
    """The name Spark's registry knows ``node``'s function by (sqlglot's classes spell theirs)."""
    return (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def generator_call(projection: exp.Expr) -> exp.Func | None:
    """The generator call a select-list item is (``explode(a) AS x``, ``stack(...) AS (a,
    b)``), or None."""
    node = projection.this if isinstance(projection, (exp.Alias, exp.Aliases)) else projection
    if not isinstance(node, exp.Func):
        return None
    sig = signature(function_name(node))
    return node if sig is not None and sig.kind == "generator" else None


def _constant(arg: exp.Expr) -> bool:
    aggregates = aggregate_names()
    return not any(isinstance(n, _NOT_CONSTANT) or (
        isinstance(n, exp.Anonymous) and n.name.lower() in aggregates) for n in arg.walk())


def generator_inputs(projection: exp.Expr) -> list[tuple[str, exp.Expr]]:
    """``(_gen_input_<position>, argument)`` of each argument of the generator
    ``projection`` is that is not a constant (empty when it is no generator)."""
    call = generator_call(projection)
    if call is None:
        return []
    return [(f"_gen_input_{i}", arg) for i, arg in enumerate(call.iter_expressions())
            if not _constant(arg)]


def aggregate_list(select: exp.Select) -> list[exp.Expr]:
    """The list an aggregating SELECT's GROUP BY ordinals count: its select list, a generator
    replaced by its inputs (:func:`generator_inputs`)."""
    out: list[exp.Expr] = []
    for projection in select.expressions:
        call = generator_call(projection)
        out += [arg for _, arg in generator_inputs(projection)] if call is not None \
            else [projection]
    return out


#: Spark's operator text of each binary operator (``BinaryOperator.sql``: ``(l op r)``).
_OPERATORS: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "div",
    exp.EQ: "=", exp.NullSafeEQ: "<=>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
    exp.And: "AND", exp.Or: "OR", exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"\d+")
_DECIMAL = re.compile(r"\d*\.\d*")


def cast_column(node: exp.Expr) -> exp.Column | None:
    """The column ``CAST(column AS type)`` casts: Spark names that cast after the column."""
    if isinstance(node, exp.TryCast) and not node.args.get("safe") and \
            isinstance(node.this, exp.Column):
        return node.this
    return None


def pretty_name(node: exp.Expr, *, sql: str, paths: Mapping[int, str],
                outer: frozenset[int] | set[int] = frozenset()) -> str | None:
    """The name Spark gives the column of expression ``node`` when it has no alias, or None
    when lint cannot tell it (a cast, a window, a lambda...: Spark's text of those has forms
    lint does not copy).

    Spark prints the resolved expression (``toPrettySQL``): columns by name without their
    relation (``paths``: the resolver's text of each column reference), string and number
    literals bare, operators in parentheses, calls by the name written (read from ``sql``,
    the text the tree was parsed from) in lower case.

    Args:
        node: the expression.
        sql: the SQL text ``node`` was parsed from.
        paths: id() of each resolved column reference -> Spark's text of it.
        outer: id() of the references resolved in an enclosing query (a subquery that has
            them is named after them: not known here).
    """
    return _Pretty(sql, paths, outer).name(node)


class _Pretty:
    def __init__(self, sql: str, paths: Mapping[int, str], outer: frozenset[int] | set[int]
                 ) -> None:
        self.sql, self.paths, self.outer = sql, paths, outer

    def names(self, nodes: Sequence[exp.Expr]) -> str | None:
        parts = [self.name(n) for n in nodes]
        return None if any(p is None for p in parts) else ", ".join(p or "" for p in parts)

    def name(self, node: exp.Expr | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, exp.Paren):
            return self.name(node.this)
        if isinstance(node, (exp.Column, exp.Dot)) and id(node) in self.paths:
            return self.paths[id(node)]
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier) and \
                not isinstance(node.this, exp.Column):  # a field of a value: f(x).a
            base = self.name(node.this)
            return None if base is None else f"{base}.{node.expression.name}"
        if isinstance(node, (exp.Column, exp.Dot)):
            return None
        if isinstance(node, exp.Literal):
            return _literal(node)
        if isinstance(node, exp.Boolean):
            return "true" if node.this else "false"
        if isinstance(node, exp.Null):
            return "NULL"
        if isinstance(node, exp.DPipe):  # a || b is concat(a, b)
            inner = self.names([node.this, node.expression])
            return None if inner is None else f"concat({inner})"
        op = _OPERATORS.get(type(node))
        if op is not None:
            left, right = self.name(node.this), self.name(node.expression)
            return None if left is None or right is None else f"({left} {op} {right})"
        if isinstance(node, exp.NEQ):  # Spark's a != b is NOT (a = b)
            left, right = self.name(node.this), self.name(node.expression)
            return None if left is None or right is None else f"(NOT ({left} = {right}))"
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            inner = self.name(node.this)
            return None if inner is None else f"({inner} IS NULL)"
        if isinstance(node, exp.Not):
            if isinstance(node.this, exp.Is) and isinstance(node.this.expression, exp.Null):
                inner = self.name(node.this.this)
                return None if inner is None else f"({inner} IS NOT NULL)"
            inner = self.name(node.this)
            return None if inner is None else f"(NOT {inner})"
        if isinstance(node, exp.Neg):
            if isinstance(node.this, exp.Literal) and not node.this.is_string:
                inner = _literal(node.this)
                return None if inner is None else f"-{inner}"
            inner = self.name(node.this)
            return None if inner is None else f"(- {inner})"
        if isinstance(node, exp.In) and not node.args.get("query") and node.expressions:
            value, items = self.name(node.this), self.names(node.expressions)
            return None if value is None or items is None else f"({value} IN ({items}))"
        if isinstance(node, exp.Subquery):
            inner = node.this
            if any(id(c) in self.outer for c in inner.find_all(exp.Column)):
                return None  # Spark lists the outer references: scalarsubquery(a)
            return "scalarsubquery()"
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
            base, index = self.name(node.this), self.name(node.expressions[0])
            return None if base is None or index is None else f"{base}[{index}]"
        if isinstance(node, exp.Func):
            return self._call(node)
        return None

    def _case(self, node: exp.Case) -> str | None:
        base = node.this
        parts = ["CASE"]
        for branch in node.args.get("ifs") or []:
            cond = exp.EQ(this=base, expression=branch.this) if base is not None else branch.this
            when, then = self.name(cond), self.name(branch.args.get("true"))
            if when is None or then is None:
                return None
            parts.append(f"WHEN {when} THEN {then}")
        default = node.args.get("default")
        if default is not None:
            other = self.name(default)
            if other is None:
                return None
            parts.append(f"ELSE {other}")
        return " ".join([*parts, "END"])

    def _call(self, node: exp.Func) -> str | None:
        if isinstance(node, exp.TryCast) and not node.args.get("safe"):
            return self._cast(node)
        if isinstance(node, (exp.Cast, exp.TryCast, exp.Window, exp.Lambda, exp.Filter,
                             exp.WithinGroup)):
            return None  # typed literals, int(x), try_cast: their texts differ
        if isinstance(node, exp.If):
            args = [node.this, node.args.get("true"), node.args.get("false")]
            inner = None if any(a is None for a in args) else \
                self.names([a for a in args if a is not None])
            return None if inner is None else f"(IF({inner}))"
        written = self._written_name(node)
        if written is None:
            return None
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
            return "count(1)"
        args = list(node.expressions) if isinstance(node, exp.Anonymous) else \
            list(node.iter_expressions())
        prefix = ""
        if len(args) == 1 and isinstance(args[0], exp.Distinct):
            prefix, args = "DISTINCT ", list(args[0].expressions)
        inner = self.names(args)
        return None if inner is None else f"{written}({prefix}{inner})"

    def _cast(self, node: exp.TryCast) -> str | None:
        """``CAST(x AS INT)`` (and ``x::INT``); a number with a type suffix (``1L``) is the
        number."""
        inner = node.this
        if suffixed_number(inner, self.sql):
            return _literal(inner) if isinstance(inner, exp.Literal) else None
        to = node.args.get("to")
        if not isinstance(to, exp.DataType):
            return None
        params = [p.this for p in to.expressions if isinstance(p, exp.DataTypeParam)]
        if to.this == exp.DType.DECIMAL:  # Spark: DECIMAL(10,0), no space
            if len(params) not in (0, 2) or len(params) != len(to.expressions):
                return None
            digits = [p.name for p in params] or ["10", "0"]
            type_text = f"DECIMAL({','.join(digits)})"
        elif to.expressions:
            return None
        else:
            type_text = to.sql(dialect="spark").upper()
        value = self.name(inner)
        return None if value is None else f"CAST({value} AS {type_text})"

    def _written_name(self, node: exp.Func) -> str | None:
        """The function's name as the SQL writes it (sqlglot renames some), in lower case."""
        meta = node._meta  # noqa: SLF001 - .meta would allocate a dict on every node
        start, end = (meta.get("start"), meta.get("end")) if meta else (None, None)
        if not isinstance(start, int) or not isinstance(end, int):
            return node.name.lower() if isinstance(node, exp.Anonymous) else None
        word = self.sql[start:end + 1]
        after = self.sql[end + 1:].lstrip()
        return word.lower() if _WORD.fullmatch(word) and after.startswith("(") else None


def suffixed_number(node: exp.Expr, sql: str) -> bool:
    """``node`` is a number written with a type suffix (``1L``, ``2S``, ``1.5BD``: sqlglot
    reads it as a cast of the number, Spark as a literal), by its text in ``sql``."""
    meta = node._meta if isinstance(node, exp.Literal) else None  # noqa: SLF001
    start, end = (meta.get("start"), meta.get("end")) if meta else (None, None)
    return isinstance(start, int) and isinstance(end, int) and not node.is_string and \
        sql[start:end + 1][-1:].isalpha()  # the token is the number and its suffix


def _literal(node: exp.Literal) -> str | None:
    """A literal as Spark prints it in a name: a string bare, a number as its value."""
    text = node.this
    if node.is_string:
        return str(text)
    if _INTEGER.fullmatch(text):
        return str(int(text))
    if _DECIMAL.fullmatch(text) and text != ".":
        try:
            return str(Decimal(text))
        except InvalidOperation:
            return None
    return None
