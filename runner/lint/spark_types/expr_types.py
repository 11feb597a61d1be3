"""Spark's type of an expression under ANSI mode (Spark 4's default), where sqlglot's annotator
spells it differently: literals (``1.0`` is DECIMAL(2,1), ``2147483648`` BIGINT), casts,
intervals, the expressions that merge their inputs by :mod:`.coercion`'s rules (``coalesce``,
``IF``, ``CASE``, ``greatest``, ``array()``, ``map()``: ``coalesce(1, '2')`` is BIGINT, not
STRING), ``struct()`` and ``(a, b)`` with the field names Spark gives them, and arithmetic on
numbers (decimal precision and scale as Spark's ``DecimalPrecision``; ``/`` of non-decimals is
DOUBLE). Columns, struct fields and elements are typed by name resolution
(:mod:`runner.lint.resolution.resolve`): their ``type`` is read. Anything else is unknown (None).

Used by the ``common-type`` rule and by :mod:`.infer`'s annotator (so that the columns a CTE or
a ref'd model computes this way carry Spark's types). It imports nothing of the linter's but
:mod:`.coercion`, so :mod:`.infer` can import it.

>>> import sqlglot
>>> str(spark_type(sqlglot.parse_one("coalesce(1, '2', 3.5)", read="spark")))  # BIGINT, then 3.5
'DECIMAL(21,1)'
>>> str(spark_type(sqlglot.parse_one("array(1, 2.50)", read="spark")))
'ARRAY<DECIMAL(12,2)>'
>>> str(spark_type(sqlglot.parse_one("'a' COLLATE utf8_lcase", read="spark")))
'STRING COLLATE UTF8_LCASE'
>>> collation_of(sqlglot.parse_one("','", read="spark"))
'UTF8_BINARY'
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.lint.spark_types import coercion as co
from runner.lint.spark_types.coercion import SparkType

__all__ = ["case_values", "collation_of", "if_values", "known_collation", "known_types",
           "map_parts", "spark_type", "to_sqlglot"]

T = exp.DType


def _known(dtype: exp.DataType | None) -> bool:
    return isinstance(dtype, exp.DataType) and dtype.this is not T.UNKNOWN


def _number(text: str) -> SparkType | None:
    """Spark's type of an unsuffixed numeric literal."""
    if "e" in text.lower():
        return co.DOUBLE
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if "." not in text:
        magnitude = abs(int(value))
        if magnitude < 2 ** 31:
            return SparkType("int")
        if magnitude < 2 ** 63:
            return co.BIGINT
        width = len(str(magnitude))
        return co.decimal(width, 0) if width <= co.MAX_PRECISION else None
    _, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        return None
    scale = max(-exponent, 0)
    precision = max(len(digits), scale)
    return co.decimal(precision, scale) if precision <= co.MAX_PRECISION else None


def _interval(node: exp.Interval) -> SparkType | None:
    """``INTERVAL '1' MONTH``, ``INTERVAL 20 DAYS``, ``INTERVAL '1-2' YEAR TO MONTH``; None for
    the multi-unit forms sqlglot rewrites into a sum of intervals (``INTERVAL 3 days 2
    hours``), whose parts are no literals of Spark's."""
    text = node.this
    if not isinstance(text, exp.Literal):
        return None
    parent = node.parent
    if not isinstance(text.meta.get("start"), int) and isinstance(parent, exp.Add) and \
            isinstance(parent.this, exp.Interval) and isinstance(parent.expression, exp.Interval):
        return None
    return co.interval_of(node.args.get("unit"))


def _adjust(precision: int, scale: int) -> SparkType:
    """``DecimalType.adjustPrecisionScale`` (precision loss allowed, Spark's default)."""
    if precision <= co.MAX_PRECISION:
        return co.decimal(precision, scale)
    digits = precision - scale
    return co.decimal(co.MAX_PRECISION, max(co.MAX_PRECISION - digits, min(scale, 6)))


def _arithmetic(node: exp.Expr, a: SparkType, b: SparkType) -> SparkType | None:
    """The result type of ``+ - * / %`` on two numbers (ANSI: ``/`` of non-decimals is
    DOUBLE; decimals by ``DecimalPrecision``); None for anything else."""
    if not (a.numeric and b.numeric):
        return None
    if "decimal" not in (a.name, b.name) or {a.name, b.name} & {"float", "double"}:
        if isinstance(node, exp.Div):
            return co.DOUBLE
        return co.tightest(a, b)
    da, db = co.decimal_for(a), co.decimal_for(b)
    if da is None or db is None:
        return None
    p1, s1, p2, s2 = da.precision, da.scale, db.precision, db.scale
    if isinstance(node, (exp.Add, exp.Sub)):
        scale = max(s1, s2)
        return _adjust(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if isinstance(node, exp.Mul):
        return _adjust(p1 + p2 + 1, s1 + s2)
    if isinstance(node, exp.Div):
        scale = max(6, s1 + p2 + 1)
        return _adjust(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # exp.Mod
    return _adjust(min(p1 - s1, p2 - s2) + scale, scale)


def _struct_name(value: exp.Expr, index: int) -> str | None:
    """The field name Spark's ``struct(...)``/``(a, b)`` gives an unnamed value: a column's
    name, else ``col<n>``; None where lint cannot be sure (a struct field, an element)."""
    value = value.unnest()
    if isinstance(value, exp.Column):
        return value.name
    if isinstance(value, (exp.Dot, exp.Bracket)):
        return None
    return f"col{index + 1}"


def known_types(nodes: Sequence[exp.Expr]) -> list[SparkType] | None:
    types = [spark_type(n) for n in nodes]
    return None if any(t is None for t in types) else [t for t in types if t is not None]


def _merged(nodes: Sequence[exp.Expr], *, strings: bool = True) -> SparkType | None:
    types = known_types(nodes)
    if types is None:
        return None
    return co.wider_common(types) if strings else co.wider_common_without_string(types)


def case_values(node: exp.Case) -> list[exp.Expr]:
    values = [i.args["true"] for i in node.args.get("ifs") or []]
    default = node.args.get("default")
    return values + [default] if isinstance(default, exp.Expr) else values


def if_values(node: exp.If | exp.Nvl2) -> list[exp.Expr]:
    """The two results of ``IF(c, a, b)`` / ``nvl2(x, a, b)`` (a missing one is NULL)."""
    values = [node.args.get("true"), node.args.get("false")]
    return [v if isinstance(v, exp.Expr) else exp.Null() for v in values]


def spark_type(node: exp.Expr | None) -> SparkType | None:
    """Spark's type of ``node`` under ANSI mode, or None when lint does not know it."""
    if node is None:
        return None
    if isinstance(node, exp.Paren):
        return spark_type(node.this)
    if isinstance(node, exp.Literal):
        return co.STRING if node.is_string else _number(node.name)
    if isinstance(node, exp.Null):
        return co.NULL
    if isinstance(node, exp.Boolean):
        return SparkType("boolean")
    if isinstance(node, exp.HexString):
        return SparkType("binary")
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.args.get("to")
        return co.of(to) if isinstance(to, exp.DataType) else None
    if isinstance(node, exp.Interval):
        return _interval(node)
    if isinstance(node, exp.Collate):
        inner, name = spark_type(node.this), co.collation_name(node.expression)
        return SparkType("string", collation=name) if inner is not None and \
            inner.name == "string" and name else None
    if isinstance(node, (exp.Column, exp.Dot, exp.Bracket)):
        return co.of(node.type) if _known(node.type) else None
    if isinstance(node, exp.Neg):
        inner = spark_type(node.this)
        return inner if inner is not None and (inner.numeric or inner.name.startswith(
            "interval")) else None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        a, b = spark_type(node.this), spark_type(node.expression)
        return _arithmetic(node, a, b) if a is not None and b is not None else None
    return _merging_type(node)


#: Collations lint compares (Spark's built-in ones with fixed names); any other name (an ICU
#: locale, specifiers in another order) may be one of these spelled differently: unsure.
_COLLATIONS = frozenset(f"{base}{trim}" for base in ("UTF8_BINARY", "UTF8_LCASE", "UNICODE",
                                                       "UNICODE_CI") for trim in ("", "_RTRIM"))


def known_collation(t: SparkType) -> str | None:
    """``t``'s collation when ``t`` is a STRING lint knows to carry one of Spark's built-in
    collations; None otherwise (not a string, the default, not known, another name)."""
    return t.collation if t.name == "string" and t.collation in _COLLATIONS else None


def collation_of(node: exp.Expr) -> str | None:
    """The collation of string-valued ``node`` where lint is sure of it: a ``COLLATE`` clause's,
    a cast's or a column's type's (``STRING COLLATE x``), UTF8_BINARY for a string literal and
    a cast of a non-string to plain STRING; None otherwise (another expression's collation
    follows its inputs' by rules lint does not model, a name lint does not know)."""
    node = node.unnest()
    found = spark_type(node)
    if found is None or found.name != "string":
        return None
    if found.collation is not None:
        return known_collation(found)
    if isinstance(node, exp.Literal):
        return "UTF8_BINARY"
    if isinstance(node, (exp.Cast, exp.TryCast)):
        source = spark_type(node.this)
        return "UTF8_BINARY" if source is not None and source.name not in (
            "string", "void") else None
    return None


def _merging_type(node: exp.Expr) -> SparkType | None:
    """The type of an expression that merges its inputs (or builds a complex value)."""
    if isinstance(node, exp.Coalesce):
        return _merged([node.this, *node.expressions])
    if isinstance(node, (exp.Greatest, exp.Least)):
        return _merged([node.this, *node.expressions], strings=False)
    if isinstance(node, (exp.If, exp.Nvl2)) and not isinstance(node.parent, exp.Case):
        branches = known_types(if_values(node))
        return co.wider(*branches) if branches is not None else None
    if isinstance(node, exp.Case):
        return _merged(case_values(node))
    if isinstance(node, exp.Array):
        element = _merged(node.expressions)
        return co.array(element) if element is not None else None
    if isinstance(node, exp.VarMap):
        keys, values = map_parts(node)
        key, value = _merged(keys), _merged(values)
        return co.map_of(key, value) if key is not None and value is not None else None
    if isinstance(node, exp.Struct):
        return _struct_type(node)
    if isinstance(node, exp.Tuple):
        return _tuple_type(node)
    return None


def map_parts(node: exp.VarMap) -> tuple[list[exp.Expr], list[exp.Expr]]:
    keys, values = node.args.get("keys"), node.args.get("values")
    return (keys.expressions if isinstance(keys, exp.Array) else [],
            values.expressions if isinstance(values, exp.Array) else [])


def _struct_type(node: exp.Struct) -> SparkType | None:
    fields = []
    for i, item in enumerate(node.expressions):
        if isinstance(item, exp.PropertyEQ):
            value = item.expression
            name = item.this.name if isinstance(value, (exp.Literal, exp.Column)) or \
                _struct_name(value, i) is not None else None
        else:
            value, name = item, _struct_name(item, i)
        dtype = spark_type(value)
        if name is None or dtype is None:
            return None
        fields.append((name, dtype))
    return co.struct(fields)


def _tuple_type(node: exp.Tuple) -> SparkType | None:
    """``(a, b)`` in ``(a, b) IN (...)``: Spark's ``struct(a, b)``."""
    fields = []
    for i, item in enumerate(node.expressions):
        name, dtype = _struct_name(item, i), spark_type(item)
        if name is None or dtype is None:
            return None
        fields.append((name, dtype))
    return co.struct(fields)



_ATOMS: dict[str, exp.DType] = {
    "void": T.NULL, "boolean": T.BOOLEAN, "tinyint": T.TINYINT, "smallint": T.SMALLINT,
    "int": T.INT, "bigint": T.BIGINT, "float": T.FLOAT, "double": T.DOUBLE, "string": T.TEXT,
    "binary": T.BINARY, "date": T.DATE, "timestamp": T.TIMESTAMPTZ,
    "timestamp_ntz": T.TIMESTAMPNTZ,
}


def to_sqlglot(t: SparkType) -> exp.DataType:
    """``t`` as sqlglot's type, spelled as the linter's other types are (a TIMESTAMP is what
    ``DataType.build('timestamp', dialect='spark')`` gives)."""
    atom = _ATOMS.get(t.name)
    if t.collation is not None:
        return exp.DataType(this=T.TEXT, collate=exp.to_identifier(t.collation))
    if atom is not None:
        return exp.DataType(this=atom)
    if t.name in ("array", "map"):
        return exp.DataType(this=T.ARRAY if t.name == "array" else T.MAP,
                            expressions=[to_sqlglot(a) for a in t.args], nested=True)
    if t.name == "struct":
        return exp.DataType(this=T.STRUCT, nested=True, expressions=[
            exp.ColumnDef(this=exp.to_identifier(n), kind=to_sqlglot(a))
            for n, a in zip(t.names, t.args)])
    return exp.DataType.build(str(t), dialect="spark")  # decimals and intervals
