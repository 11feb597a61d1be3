"""ANSI traps: SQL that Spark 4 (``spark.sql.ansi.enabled``, its default) fails on at run time
for some rows, where the ``try_`` spelling returns NULL instead.

A failing expression fails the whole micro-batch (the model is parked), so each rule names the
safe spelling:

- ``ansi-index``: ``arr[i]`` / ``element_at(arr, i)`` on an array raise
  ``[INVALID_ARRAY_INDEX]`` when ``i`` is out of range -> ``get(arr, i)`` (0-based) or
  ``try_element_at(arr, i + 1)`` (1-based);
- ``ansi-divide``: ``/``, ``DIV``, ``%`` / ``mod`` raise ``[DIVIDE_BY_ZERO]`` when the divisor
  is 0 -> ``try_divide`` / ``try_mod`` (or ``nullif(divisor, 0)``);
- ``ansi-cast``: ``CAST(<string> AS INT|DOUBLE|DECIMAL|DATE|TIMESTAMP|BOOLEAN ...)`` raises
  ``[CAST_INVALID_INPUT]`` on text that does not parse -> ``try_cast``.

When in doubt the rules do not warn: an index or a cast whose operand's type lint cannot infer
is left alone (``ansi-index`` needs to know it is an array, not a map; ``ansi-cast`` that it
is a string), and a divisor that is a nonzero constant, or ``nullif(x, 0)``, is safe.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.spark_types.infer import is_, is_known, make_annotator

__all__ = ["AnsiCast", "AnsiDivide", "AnsiIndex"]

T = exp.DType


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark", comments=False)


def _nodes(ctx: ModelContext, *types: type[exp.Expr]) -> list[exp.Expr]:
    """Nodes of ``types`` in the model's query statements, in source order (the model's
    shared index: no walk of its own)."""
    return ctx.nodes.of(*types)


def _type(node: exp.Expr) -> exp.DataType | None:
    """``node``'s inferred type: what name resolution set, else sqlglot's annotator over it
    (which keeps the column types resolution set); None when unknown."""
    if not is_known(node.type):
        make_annotator().annotate_expression(node)
    return node.type if is_known(node.type) else None


def _shift(index: exp.Expr, by: int) -> str:
    """``index + by`` as SQL (folded when ``index`` is an integer literal)."""
    if isinstance(index, exp.Literal) and index.is_int:
        return str(int(index.name) + by)
    op = exp.Add if by > 0 else exp.Sub
    return _sql(op(this=index.copy(), expression=exp.Literal.number(abs(by))))


class AnsiIndex(ModelRule):
    """An array index out of range fails the batch under Spark's ANSI mode
    ([INVALID_ARRAY_INDEX]): get(arr, i) and try_element_at(arr, i + 1) return NULL instead.
    Only flagged where lint knows the value is an array."""

    id = "ansi-index"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.analysis is None:
            return
        for node in _nodes(ctx, exp.Bracket):
            if node.args.get("safe") or len(node.expressions) != 1:
                continue  # try_element_at, or not an index
            if not is_(_type(node.this), T.ARRAY):
                continue  # a map or struct lookup, or unknown
            arr, index = _sql(node.this), node.expressions[0]
            if node.args.get("offset"):  # element_at(arr, i): 1-based
                text = f"element_at({arr}, {_sql(index)})"
                one, zero = _sql(index), _shift(index, -1)
            else:
                text, zero, one = _sql(node), _sql(index), _shift(index, 1)
            yield self.at(ctx, node, f"{text} fails the batch when the index is out of range "
                          f"(Spark's ANSI mode: [INVALID_ARRAY_INDEX]); did you mean "
                          f"get({arr}, {zero}) or try_element_at({arr}, {one})?",
                          "get (0-based) and try_element_at (1-based) return NULL out of range")


def _constant(node: exp.Expr) -> Decimal | None:
    """The value of a numeric constant expression (literals, + - *, casts), else None."""
    node = node.unnest()
    try:
        if isinstance(node, exp.Literal) and not node.is_string:
            return Decimal(node.name)
        if isinstance(node, exp.Neg):
            inner = _constant(node.this)
            return None if inner is None else -inner
        if isinstance(node, exp.Cast):
            return _constant(node.this)
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
            left, right = _constant(node.this), _constant(node.expression)
            if left is None or right is None:
                return None
            if isinstance(node, exp.Add):
                return left + right
            return left - right if isinstance(node, exp.Sub) else left * right
    except (InvalidOperation, ArithmeticError):
        return None
    return None


def _safe_divisor(node: exp.Expr) -> bool:
    """A nonzero constant, or ``nullif(x, 0)`` (NULL instead of zero)."""
    node = node.unnest()
    value = _constant(node)
    if value is not None:
        return value != 0
    return isinstance(node, exp.Nullif) and _constant(node.expression) == 0


class AnsiDivide(ModelRule):
    """A division or remainder by zero fails the batch under Spark's ANSI mode
    ([DIVIDE_BY_ZERO]) unless the divisor is a nonzero constant: try_divide(a, b) and
    try_mod(a, b) return NULL instead (or divide by nullif(b, 0))."""

    id = "ansi-divide"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        for node in _nodes(ctx, exp.Div, exp.IntDiv, exp.Mod):
            divisor = node.expression
            if _safe_divisor(divisor):
                continue
            a, b = _sql(node.this), _sql(divisor)
            if isinstance(node, exp.Mod):
                safe = f"try_mod({a}, {b})"
            elif isinstance(node, exp.IntDiv):
                safe = f"{a} DIV nullif({b}, 0)"
            else:
                safe = f"try_divide({a}, {b})"
            yield self.at(ctx, divisor, f"{_sql(node)} fails the batch when {b} is 0 (Spark's "
                          f"ANSI mode: [DIVIDE_BY_ZERO]); did you mean {safe}?",
                          f"{safe} is NULL where {b} is 0; a nonzero constant divisor is safe")


_INTEGRAL = {T.TINYINT: 8, T.SMALLINT: 16, T.INT: 32, T.BIGINT: 64}
_FRACTIONAL = (T.FLOAT, T.DOUBLE, T.DECIMAL, T.BIGDECIMAL)
_DATES = (T.DATE,)
_TIMESTAMPS = (T.TIMESTAMP, T.TIMESTAMPNTZ, T.TIMESTAMPLTZ, T.TIMESTAMPTZ, T.DATETIME)
_BOOLEANS = frozenset({"true", "false", "t", "f", "yes", "no", "y", "n", "1", "0"})
_TARGETS = (*_INTEGRAL, *_FRACTIONAL, *_DATES, *_TIMESTAMPS, T.BOOLEAN)


def _valid(text: str, to: exp.DataType) -> bool:
    """Spark casts the string literal ``text`` to ``to`` without failing (conservative: a
    spelling Spark may accept but this does not know counts as invalid)."""
    text = text.strip()
    try:
        if to.this in _INTEGRAL:
            bound = 2 ** (_INTEGRAL[to.this] - 1)
            return bool(-bound <= int(text, 10) < bound)
        if to.this in _FRACTIONAL:
            Decimal(text)
            return True
        if to.this in _DATES:
            datetime.date.fromisoformat(text)
            return True
        if to.this in _TIMESTAMPS:
            datetime.datetime.fromisoformat(text)
            return True
    except (ValueError, InvalidOperation):
        return False
    return text.lower() in _BOOLEANS


class AnsiCast(ModelRule):
    """A CAST of a string to a number, date, timestamp or boolean fails the batch under Spark's
    ANSI mode ([CAST_INVALID_INPUT]) on text that does not parse: try_cast returns NULL
    instead. Only flagged where lint knows the value is a string (a valid literal is safe)."""

    id = "ansi-cast"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        for node in _nodes(ctx, exp.Cast):
            to = node.args.get("to")
            if node.args.get("safe") or not isinstance(to, exp.DataType) or to.this not in _TARGETS:
                continue  # try_cast, or a target every string casts to
            value = node.this.unnest()
            if isinstance(value, exp.Literal):
                if not value.is_string or _valid(value.name, to):
                    continue
            elif ctx.analysis is None or not is_(_type(value), T.VARCHAR, T.TEXT, T.CHAR):
                continue
            safe = f"try_cast({_sql(node.this)} AS {_sql(to)})"
            yield self.at(ctx, node, f"{_sql(node)} fails the batch on text that does not "
                          f"parse as {_sql(to)} (Spark's ANSI mode: [CAST_INVALID_INPUT]); "
                          f"did you mean {safe}?", f"{safe} is NULL where the text does not parse")
