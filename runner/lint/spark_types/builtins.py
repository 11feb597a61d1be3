"""Spark's built-in functions and operators as its analyser checks a call of them: the
signatures ``scripts/spark_functions.py`` records in ``runner/lint/spark_types/functions.json``, and
the types of arguments lint can vouch for.

>>> signature("if").wrong_nargs >= {2}
True
>>> signature("bool_and").kind
'aggregate'
>>> operator_refuses("+", "int", "array")
'DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from sqlglot import exp

from runner.lint.spark_types.expr_types import spark_type, to_sqlglot
from runner.lint.spark_types.infer import is_known

#: Spark's built-in functions as ``scripts/spark_functions.py`` recorded them.
FUNCTIONS_FILE = Path(__file__).with_name("functions.json")

__all__ = ["FUNCTIONS_FILE", "TYPE_NAMES", "Signature", "aggregate_names", "arg_type",
           "operator_refuses", "signature", "value_type"]

T = exp.DType


@dataclass(frozen=True)
class Signature:
    """How Spark's analyser checks a call of one built-in (see scripts/spark_functions.py).

    Attributes:
        name: the function's name (lower case).
        kind: ``aggregate``, ``window``, ``generator``, ``higher_order`` or ``scalar``.
        wrong_nargs: argument counts Spark refuses with ``WRONG_NUM_ARGS`` (probed up to 7: 7
            refused means more are too).
        nargs: the counts it accepts (up to 7).
        params: names of its named arguments (none: it takes none).
        required: how many of ``params`` (the first) have no default: a call must give each,
            by position or by name (``mask(lowerChar => 'q')``: no ``str``).
        literal: 0-based position -> the error class Spark gives a column there.
        types: 0-based position -> (the type Spark requires, the basic types it refuses, the
            error class: ``DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE`` unless a function's
            builder refuses them itself, ``UNEXPECTED_INPUT_TYPE``).
        nulls: 0-based position -> the error class Spark refuses a ``NULL`` literal there
            with (``explode(NULL)``: VOID is no collection).
        refused: the error class Spark refuses every call of it with (the TIME functions:
            ``UNSUPPORTED_TIME_TYPE``), or None.
        probed_nargs: the argument count ``literal`` and ``types`` were probed with: they
            hold for calls of at most that many arguments (an overload with more arguments
            may take other types: ``make_timestamp``).
    """

    name: str
    kind: str
    wrong_nargs: frozenset[int]
    nargs: tuple[int, ...]
    params: tuple[str, ...]
    literal: Mapping[int, str]
    types: Mapping[int, tuple[str, frozenset[str], str]]
    probed_nargs: int = 0
    refused: str | None = None
    nulls: Mapping[int, str] = field(default_factory=dict)
    required: int = 0

    def checks_arguments_of(self, n: int) -> bool:
        """``literal`` and ``types`` hold for a call of ``n`` arguments."""
        return 0 < n <= self.probed_nargs

    def refuses_count(self, n: int) -> bool:
        """Spark refuses ``n`` arguments with ``WRONG_NUM_ARGS``."""
        top = max((*self.nargs, *self.wrong_nargs), default=0)  # the largest count probed
        return n in self.wrong_nargs or (n > top and top in self.wrong_nargs)

    @property
    def expected(self) -> str:
        """The accepted counts as Spark words them: ``3``, ``[2, 3]``, ``> 0``."""
        if not self.nargs:
            return "?"
        if self.nargs[-1] == max((*self.nargs, *self.wrong_nargs)):
            return f">= {self.nargs[0]}"
        return str(self.nargs[0]) if len(self.nargs) == 1 else str(list(self.nargs))


#: The class of an argument type a position refuses, unless functions.json names another.
_TYPE_ERROR = "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE"


@cache
def _document() -> dict[str, Any]:
    text = FUNCTIONS_FILE.read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@cache
def signature(name: str) -> Signature | None:
    """The recorded signature of built-in ``name`` (any case), or None."""
    f = _document()["functions"].get(name.lower())
    if f is None or "kind" not in f:
        return None
    return Signature(
        name=name.lower(), kind=f["kind"], wrong_nargs=frozenset(f.get("wrong_nargs", ())),
        nargs=tuple(f.get("nargs", ())), params=tuple(f.get("params", ())),
        literal={int(k): v for k, v in f.get("literal", {}).items()},
        types={int(k): (v[0], frozenset(v[1]), v[2] if len(v) > 2 else _TYPE_ERROR)
               for k, v in f.get("types", {}).items()},
        probed_nargs=f.get("probed_nargs", 0), refused=f.get("refused"),
        nulls={int(k): v for k, v in f.get("nulls", {}).items()},
        required=f.get("required", 0))


@cache
def aggregate_names() -> frozenset[str]:
    """Names of Spark's aggregate functions (``every``, ``bool_and``, ``any``, ``some``...)."""
    return frozenset(n for n, f in _document()["functions"].items() if f.get("kind") == "aggregate")


def operator_refuses(op: str, left: str, right: str | None = None) -> str | None:
    """The error class Spark refuses ``left op right`` (``op left`` when ``right`` is None)
    with, for basic type names (``int``, ``string``, ``array``...); None when it accepts it."""
    table: dict[str, str] = _document()["operators"].get(op if right is not None
                                                          else f"unary {op}", {})
    return table.get(left if right is None else f"{left} {right}")


_KEYS: dict[exp.DType, str] = {
    T.BOOLEAN: "boolean", T.TINYINT: "tinyint", T.SMALLINT: "smallint", T.INT: "int",
    T.BIGINT: "bigint", T.FLOAT: "float", T.DOUBLE: "double",
    T.DECIMAL: "decimal", T.TEXT: "string", T.VARCHAR: "string", T.BINARY: "binary",
    T.DATE: "date", T.TIMESTAMP: "timestamp", T.TIMESTAMPLTZ: "timestamp",
    T.TIMESTAMPTZ: "timestamp", T.TIMESTAMPNTZ: "timestamp_ntz", T.ARRAY: "array",
    T.MAP: "map", T.STRUCT: "struct",
}


def _number_type(text: str) -> str | None:
    """Spark's type of an unsuffixed numeric literal: INT, BIGINT, DECIMAL or DOUBLE."""
    if "e" in text.lower():
        return "double"
    if "." in text:
        return "decimal"
    value = int(text)
    return "int" if value < 2 ** 31 else "bigint" if value < 2 ** 63 else "decimal"


#: Basic type names as Spark writes them in its messages.
TYPE_NAMES = {
    "string": "STRING", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT",
    "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "decimal": "DECIMAL",
    "boolean": "BOOLEAN", "binary": "BINARY", "date": "DATE", "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ", "array": "ARRAY", "map": "MAP", "struct": "STRUCT",
    "string_literal": "STRING", "interval_day": "INTERVAL DAY TO SECOND",
    "interval_month": "INTERVAL YEAR TO MONTH"}


_MONTHS = frozenset({"YEAR", "YEARS", "MONTH", "MONTHS"})
_DAYS = frozenset({"WEEK", "WEEKS", "DAY", "DAYS", "HOUR", "HOURS", "MINUTE", "MINUTES", "SECOND",
                   "SECONDS", "MILLISECOND", "MILLISECONDS", "MICROSECOND", "MICROSECONDS"})


def _interval_type(node: exp.Interval) -> str | None:
    """``interval_month`` for ``INTERVAL '1' YEAR`` / ``'1-2' YEAR TO MONTH``, ``interval_day``
    for ``INTERVAL '1' DAY`` / ``'1 2:03' DAY TO MINUTE``; None for the multi-unit forms
    (``INTERVAL '1 day 2 hours'``, ``INTERVAL 3 days``: Spark's legacy interval), which sqlglot
    splits into a literal of its own making (no position in the SQL)."""
    text, unit = node.this, node.args.get("unit")
    if not isinstance(text, exp.Literal) or not isinstance(text.meta.get("start"), int):
        return None
    first = unit.this if isinstance(unit, exp.IntervalSpan) else unit
    name = first.name.upper() if isinstance(first, exp.Expression) else ""
    return "interval_month" if name in _MONTHS else "interval_day" if name in _DAYS else None


def arg_type(node: exp.Expr) -> str | None:
    """The basic type name of an argument, when lint can vouch for it: a literal (a string
    literal is ``string_literal``: Spark coerces it where it refuses a string column), an
    interval literal or a sum, difference or negation of intervals of one kind
    (``INTERVAL '1' YEAR + INTERVAL '2' MONTH``), else the kind of :func:`value_type`
    (``array`` for ``array(1, 2)``). None otherwise (NULL, an expression lint does not
    type)."""
    node = node.unnest()
    if isinstance(node, exp.Literal) and node.is_string:
        return "string_literal"
    if isinstance(node, exp.Interval):
        return _interval_type(node)
    if isinstance(node, (exp.Neg, exp.Add, exp.Sub)):  # -i, i + j, i - j: one interval kind
        parts = {arg_type(node.this)} if isinstance(node, exp.Neg) else {
            arg_type(node.this), arg_type(node.expression)}
        if parts in ({"interval_day"}, {"interval_month"}):
            return parts.pop()
    dtype = value_type(node)
    return _KEYS.get(dtype.this) if dtype is not None and isinstance(dtype.this, exp.DType) \
        else None


_CONSTRUCTORS: dict[type[exp.Expr], exp.DType] = {
    exp.Array: T.ARRAY, exp.Struct: T.STRUCT, exp.Map: T.MAP, exp.VarMap: T.MAP}
_INTEGRAL = (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT)


def value_type(node: exp.Expr) -> exp.DataType | None:
    """Spark's type of ``node`` where lint can vouch for it: literals (``NULL`` is VOID,
    ``1.5`` a DECIMAL), casts and typed literals, columns name resolution typed, a minus sign
    or ``+ - *`` over numbers so typed, the constructors ``array(...)`` (its element type
    when all its elements have the same: ``array()`` is ``ARRAY<VOID>``), ``struct(...)``,
    ``named_struct(...)``, ``map(...)`` (their field types unknown); an array of mixed
    elements has their ANSI common type (:mod:`.expr_types`: ``array(1, 'a')`` is
    ARRAY<BIGINT>) where it is known. None otherwise."""
    node = node.unnest()
    if isinstance(node, exp.Literal):
        kind = T.TEXT if node.is_string else _LITERAL_TYPES.get(_number_type(node.name) or "")
        return exp.DataType(this=kind) if kind is not None else None
    if isinstance(node, exp.Null):
        return exp.DataType(this=T.NULL)
    if isinstance(node, exp.Boolean):
        return exp.DataType(this=T.BOOLEAN)
    if isinstance(node, exp.HexString):  # X'01'
        return exp.DataType(this=T.BINARY)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.args.get("to")
        return to if isinstance(to, exp.DataType) and to.this is not T.USERDEFINED else None
    if isinstance(node, (exp.Column, exp.Dot)):
        return node.type if is_known(node.type) else None
    if isinstance(node, exp.Neg):
        inner = value_type(node.this)
        return inner if inner is not None and inner.this in _NUMBERS else None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        return _wider(value_type(node.this), value_type(node.expression))
    kind = _CONSTRUCTORS.get(type(node))
    if kind is T.ARRAY:  # array(1, 2): ARRAY<INT> when every element has one known type
        elements = {value_type(e) for e in node.expressions}
        if len(node.expressions) == 0:
            elements = {exp.DataType(this=T.NULL)}
        inner = elements.pop() if len(elements) == 1 else None
        if inner is None and len(elements) > 1:  # array(1, 'a'): ANSI's common type
            merged = spark_type(node)
            return to_sqlglot(merged) if merged is not None else exp.DataType(
                this=T.ARRAY, expressions=[], nested=True)
        return exp.DataType(this=T.ARRAY, expressions=[inner] if inner else [], nested=True)
    if kind is not None:
        return exp.DataType(this=kind, nested=True)
    return None


_LITERAL_TYPES = {"int": T.INT, "bigint": T.BIGINT, "decimal": T.DECIMAL, "double": T.DOUBLE}
_NUMBERS = frozenset({*_INTEGRAL, T.FLOAT, T.DOUBLE, T.DECIMAL})
_STRINGS = frozenset({T.TEXT, T.VARCHAR})


def _wider(a: exp.DataType | None, b: exp.DataType | None) -> exp.DataType | None:
    """The type of ``a + b`` (``-``, ``*``) for two numbers, by Spark's widening: the wider
    integer; DECIMAL over integers; FLOAT over integers, DOUBLE over FLOAT and DECIMAL; a
    STRING with a number as ANSI promotes it (:func:`.coercion.binary_common_type`: BIGINT
    with an integer, else DOUBLE)."""
    if a is None or b is None:
        return None
    if {a.this, b.this} & _STRINGS and {a.this, b.this} & _NUMBERS:
        other = b.this if a.this in _STRINGS else a.this
        return exp.DataType(this=T.BIGINT if other in _INTEGRAL else T.DOUBLE)
    if a.this not in _NUMBERS or b.this not in _NUMBERS:
        return None
    kinds = {a.this, b.this}
    if T.DOUBLE in kinds or kinds == {T.FLOAT, T.DECIMAL}:
        return exp.DataType(this=T.DOUBLE)
    if T.FLOAT in kinds:
        return exp.DataType(this=T.FLOAT)
    if T.DECIMAL in kinds:
        return exp.DataType(this=T.DECIMAL)
    return exp.DataType(this=max(kinds, key=_INTEGRAL.index))
