"""Spark's type coercion under ANSI mode (Spark 4's default), without a JVM: the common type
that operands or arguments are cast to before an expression is checked.

Spark's analyser widens the inputs of ``coalesce``, ``IF``, ``CASE``, ``array()``, ``map()``,
``IN``, ``greatest``/``least``, ``UNION``/``INTERSECT``/``EXCEPT`` columns and the like to one
common type (``AnsiTypeCoercion.findWiderTypeForTwo`` / ``findWiderCommonType``), and refuses
the expression when there is none (``[DATATYPE_MISMATCH.DATA_DIFF_TYPES]``,
``[INCOMPATIBLE_COLUMN_TYPE]``...). This module is that table, on its own small type model
(:class:`SparkType`), read from sqlglot's types with :func:`of`:

- the *tightest* common type: equal types, NULL with anything, integral types and decimals
  wide enough for them, numbers by precedence (an integral type with FLOAT is DOUBLE), DATE /
  TIMESTAMP / TIMESTAMP_NTZ, intervals of one kind (their fields' span), complex types by
  their elements;
- the *wider* type: the tightest, else decimals (a decimal with FLOAT or DOUBLE is DOUBLE),
  else ANSI's string promotion (a STRING with an integral type is BIGINT, with a fraction
  DOUBLE, with another atomic type that type; never with an interval), else complex types by
  their elements (a map's key only where its cast cannot produce NULL).

>>> str(wider(of_string("int"), of_string("string")))
'BIGINT'
>>> wider(of_string("date"), of_string("int")) is None
True
>>> str(wider_common([of_string("tinyint"), of_string("decimal(5,2)")]))
'DECIMAL(5,2)'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError

__all__ = [
    "DATETIME",
    "NULL",
    "SparkType",
    "array",
    "binary_common_type",
    "collation_name",
    "decimal_for",
    "force_nullable",
    "interval_of",
    "map_of",
    "of",
    "of_string",
    "same_type",
    "struct",
    "tightest",
    "wider",
    "wider_common",
    "wider_common_without_string",
    "wider_without_string",
]

T = exp.DType

#: Numbers by precedence (Spark's ``numericPrecedence``), decimals aside.
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double")
_INTEGRAL = frozenset(_NUMERIC[:4])
DATETIME = frozenset({"date", "timestamp", "timestamp_ntz"})
#: Spark's AtomicType, as far as this model has them (intervals are atomic too).
_ATOMIC = frozenset({*_NUMERIC, "decimal", "string", "binary", "boolean", *DATETIME,
                     "interval_ym", "interval_dt"})
_YM_FIELDS = ("YEAR", "MONTH")
_DT_FIELDS = ("DAY", "HOUR", "MINUTE", "SECOND")
MAX_PRECISION = 38


@dataclass(frozen=True)
class SparkType:
    """One Spark data type (nullability aside).

    Attributes:
        name: ``void``, ``boolean``, ``tinyint``... ``decimal``, ``string``, ``binary``,
            ``date``, ``timestamp``, ``timestamp_ntz``, ``interval_ym``, ``interval_dt``,
            ``array``, ``map`` or ``struct``.
        precision: a decimal's precision; an interval's start field (index into its fields).
        scale: a decimal's scale; an interval's end field.
        args: an array's element type, a map's key and value types, a struct's field types.
        names: a struct's field names.
        collation: a string's collation where the model spells one (``COLLATE x``, ``STRING
            COLLATE x``), upper-cased; None: the default (UTF8_BINARY) or not known. The
            merging rules here ignore it (Spark's ``CollationTypeCoercion`` settles
            collations before them); :func:`.expr_types.collation_of` says when it is certain.
    """

    name: str
    precision: int = 0
    scale: int = 0
    args: tuple[SparkType, ...] = ()
    names: tuple[str, ...] = ()
    collation: str | None = None

    def __str__(self) -> str:
        """Spark's SQL spelling, as its error messages name types."""
        if self.name == "decimal":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.name in ("interval_ym", "interval_dt"):
            fields = _YM_FIELDS if self.name == "interval_ym" else _DT_FIELDS
            start, end = fields[self.precision], fields[self.scale]
            return f"INTERVAL {start}" if start == end else f"INTERVAL {start} TO {end}"
        if self.name == "array":
            return f"ARRAY<{self.args[0]}>"
        if self.name == "map":
            return f"MAP<{self.args[0]}, {self.args[1]}>"
        if self.name == "struct":
            return "STRUCT<" + ", ".join(f"{n}: {t}" for n, t in zip(self.names, self.args)) + ">"
        if self.collation and self.collation != "UTF8_BINARY":
            return f"STRING COLLATE {self.collation}"
        return self.name.upper()

    @property
    def numeric(self) -> bool:
        return self.name in _NUMERIC or self.name == "decimal"


NULL = SparkType("void")
STRING = SparkType("string")
DOUBLE = SparkType("double")
BIGINT = SparkType("bigint")


def array(element: SparkType) -> SparkType:
    return SparkType("array", args=(element,))


def map_of(key: SparkType, value: SparkType) -> SparkType:
    return SparkType("map", args=(key, value))


def struct(fields: Iterable[tuple[str, SparkType]]) -> SparkType:
    pairs = tuple(fields)
    return SparkType("struct", args=tuple(t for _, t in pairs), names=tuple(n for n, _ in pairs))


def decimal(precision: int, scale: int) -> SparkType:
    """``DecimalType.bounded``: precision and scale at most 38."""
    return SparkType("decimal", min(precision, MAX_PRECISION), min(scale, MAX_PRECISION))


# -- from sqlglot's types -------------------------------------------------------------------

_SIMPLE: dict[exp.DType, str] = {
    T.BOOLEAN: "boolean", T.TINYINT: "tinyint", T.SMALLINT: "smallint", T.INT: "int",
    T.BIGINT: "bigint", T.FLOAT: "float", T.DOUBLE: "double", T.TEXT: "string",
    T.VARCHAR: "string", T.CHAR: "string", T.BINARY: "binary", T.DATE: "date",
    T.TIMESTAMP: "timestamp", T.TIMESTAMPTZ: "timestamp", T.TIMESTAMPLTZ: "timestamp",
    T.TIMESTAMPNTZ: "timestamp_ntz", T.NULL: "void",
}


def _param(node: exp.Expr) -> int | None:
    value = node.this if isinstance(node, exp.DataTypeParam) else node
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.name)
    return None


def interval_of(unit: exp.Expr | None) -> SparkType | None:
    """An ANSI interval type from its unit (``MONTH``, ``DAY TO SECOND``...); None otherwise."""
    if isinstance(unit, exp.IntervalSpan):
        first, last = unit.this, unit.expression
    else:
        first = last = unit
    if not isinstance(first, exp.Expression) or not isinstance(last, exp.Expression):
        return None
    start, end = first.name.upper().rstrip("S"), last.name.upper().rstrip("S")
    for name, fields in (("interval_ym", _YM_FIELDS), ("interval_dt", _DT_FIELDS)):
        if start in fields and end in fields and fields.index(start) <= fields.index(end):
            return SparkType(name, fields.index(start), fields.index(end))
    return None


def collation_name(node: exp.Expr | None) -> str | None:
    """The collation a ``COLLATE`` clause names (``utf8_lcase``, ```UNICODE_CI```,
    ``SYSTEM.BUILTIN.UTF8_LCASE``), upper-cased; None for anything else."""
    if isinstance(node, (exp.Var, exp.Identifier, exp.Column)) or (
            isinstance(node, exp.Literal) and node.is_string):
        return node.name.upper() or None
    if isinstance(node, exp.Dot):
        return collation_name(node.expression)
    return None


def of(dtype: exp.DataType | None) -> SparkType | None:
    """``dtype`` in this model; None when it is unknown or a type this model lacks (VARIANT, a
    legacy calendar interval, a user-defined type...): callers then pass."""
    if not isinstance(dtype, exp.DataType):
        return None
    collate = dtype.args.get("collate")
    if collate is not None:
        name = collation_name(collate)
        return SparkType("string", collation=name) if name and dtype.this in (
            T.TEXT, T.VARCHAR, T.CHAR) else None
    kind = dtype.this
    if isinstance(kind, exp.Interval):
        return interval_of(kind.args.get("unit"))
    simple = _SIMPLE.get(kind) if isinstance(kind, exp.DType) else None
    if simple is not None:
        return SparkType(simple)
    inner = [e for e in dtype.expressions]
    if kind is T.DECIMAL:
        params = [_param(e) for e in inner]
        if not params:
            return decimal(10, 0)
        if None in params or len(params) > 2:
            return None
        p, s = (params + [0])[:2]
        return decimal(p or 0, s or 0) if p else None
    if kind is T.ARRAY and len(inner) == 1:
        element = of(inner[0]) if isinstance(inner[0], exp.DataType) else None
        return array(element) if element is not None else None
    if kind is T.MAP and len(inner) == 2:
        key, value = (of(e) if isinstance(e, exp.DataType) else None for e in inner)
        return map_of(key, value) if key is not None and value is not None else None
    if kind is T.STRUCT:
        fields = []
        for col in inner:
            kind_ = col.args.get("kind") if isinstance(col, exp.ColumnDef) else None
            field = of(kind_) if isinstance(kind_, exp.DataType) else None
            if field is None:
                return None
            fields.append((col.name, field))
        return struct(fields)
    return None


def of_string(sql: str) -> SparkType | None:
    """A Spark type string in this model (``'array<decimal(5,2)>'``); ``'void'`` is NULL."""
    if sql.strip().lower() in ("void", "null"):
        return NULL
    try:
        return of(exp.DataType.build(sql, dialect="spark"))
    except (ParseError, ValueError):
        return None


# -- Spark's rules -------------------------------------------------------------------------

def decimal_for(t: SparkType) -> SparkType | None:
    """``DecimalType.forType``: the decimal holding every value of an integral or fractional
    type (a decimal is itself)."""
    found = {"tinyint": (3, 0), "smallint": (5, 0), "int": (10, 0), "bigint": (20, 0),
             "float": (14, 7), "double": (30, 15)}.get(t.name)
    if t.name == "decimal":
        return t
    return decimal(*found) if found else None


def _decimal_wider_than(d: SparkType, other: SparkType) -> bool:
    """``DecimalType.isWiderThan``: ``d`` holds every value of ``other`` (a decimal or an
    integral type)."""
    o = other if other.name == "decimal" else decimal_for(other)
    if o is None or other.name not in (*_INTEGRAL, "decimal"):
        return False
    return d.precision - d.scale >= o.precision - o.scale and d.scale >= o.scale


def _wider_decimal(a: SparkType, b: SparkType) -> SparkType:
    """``DecimalPrecision.widerDecimalType``: every integral digit of both and the larger scale;
    past 38 digits the scale gives way (``DecimalType.boundedPreferIntegralDigits``)."""
    scale = max(a.scale, b.scale)
    precision = max(a.precision - a.scale, b.precision - b.scale) + scale
    if precision > MAX_PRECISION:
        return decimal(MAX_PRECISION, max(0, scale - (precision - MAX_PRECISION)))
    return decimal(precision, scale)


def same_type(a: SparkType, b: SparkType, *, names: bool = True) -> bool:
    """``DataTypeUtils.sameType``: equal, ignoring nullability and the case of struct field
    names (and the names themselves with ``names=False``: ``DataType.equalsStructurally``)."""
    if a.name != b.name or a.precision != b.precision or a.scale != b.scale or \
            len(a.args) != len(b.args):
        return False
    if names and tuple(n.lower() for n in a.names) != tuple(n.lower() for n in b.names):
        return False
    return all(same_type(x, y, names=names) for x, y in zip(a.args, b.args))


def _datetime(a: SparkType, b: SparkType) -> SparkType:
    """``findWiderDateTimeType`` of two different date/time types."""
    if "timestamp" in (a.name, b.name):
        return SparkType("timestamp")
    return SparkType("timestamp_ntz")


_Finder = Callable[[SparkType, SparkType], "SparkType | None"]


def force_nullable(source: SparkType, target: SparkType) -> bool:
    """``Cast.forceNullable``: casting ``source`` to ``target`` may produce NULL."""
    s, t = source.name, target.name
    if same_type(source, target):
        return False  # no cast at all
    if s == "void" or (s == "string" and t == "binary"):
        return False
    if s == "string":
        return True
    if t == "string":
        return False
    if s in ("float", "double") and t == "timestamp":
        return True
    if t == "date":
        return s != "timestamp"
    if s == "date":
        return t not in ("timestamp", "timestamp_ntz")
    if t == "decimal":
        if s == "boolean":
            return False
        if s in _INTEGRAL or s == "decimal":  # fewer fraction digits round; fewer integral
            digits = decimal_for(source)      # digits overflow (NULL)
            return digits is None or \
                target.precision - target.scale < digits.precision - digits.scale
        return True
    return s in ("float", "double", "decimal") and t in _INTEGRAL


def _complex(a: SparkType, b: SparkType, find: _Finder) -> SparkType | None:
    """``findTypeForComplex``: arrays, maps and structs of one shape, by their parts."""
    if a.name == b.name == "array":
        element = find(a.args[0], b.args[0])
        return array(element) if element is not None else None
    if a.name == b.name == "map":
        key = find(a.args[0], b.args[0])
        if key is None or force_nullable(a.args[0], key) or force_nullable(b.args[0], key):
            return None
        value = find(a.args[1], b.args[1])
        return map_of(key, value) if value is not None else None
    if a.name == b.name == "struct" and len(a.args) == len(b.args):
        fields = []
        for name_a, name_b, x, y in zip(a.names, b.names, a.args, b.args):
            found = find(x, y) if name_a.lower() == name_b.lower() else None
            if found is None:
                return None
            fields.append((name_a, found))
        return struct(fields)
    return None


def tightest(a: SparkType, b: SparkType) -> SparkType | None:
    """``AnsiTypeCoercion.findTightestCommonType``: the common type no value is lost in (two
    strings of different collations: a STRING of a collation not known)."""
    if same_type(a, b):
        return SparkType("string") if a.collation != b.collation else a
    if a.name == "void":
        return b
    if b.name == "void":
        return a
    if a.name in _INTEGRAL and b.name == "decimal":
        return b if _decimal_wider_than(b, a) else None
    if a.name == "decimal" and b.name in _INTEGRAL:
        return a if _decimal_wider_than(a, b) else None
    if a.name in _NUMERIC and b.name in _NUMERIC:
        widest = _NUMERIC[max(_NUMERIC.index(a.name), _NUMERIC.index(b.name))]
        return DOUBLE if widest == "float" else SparkType(widest)
    if a.name in DATETIME and b.name in DATETIME:
        return _datetime(a, b)
    if a.name == b.name and a.name in ("interval_ym", "interval_dt"):
        return SparkType(a.name, min(a.precision, b.precision), max(a.scale, b.scale))
    return _complex(a, b, tightest)


def _wider_for_decimal(a: SparkType, b: SparkType) -> SparkType | None:
    """``findWiderTypeForDecimal``: decimals with integral types by their digits, with FLOAT
    or DOUBLE as DOUBLE."""
    if "decimal" not in (a.name, b.name):
        return None
    if a.name in ("decimal", *_INTEGRAL) and b.name in ("decimal", *_INTEGRAL):
        da, db = decimal_for(a), decimal_for(b)
        return _wider_decimal(da, db) if da is not None and db is not None else None
    if a.numeric and b.numeric:
        return DOUBLE
    return None


def _wider_for_string(a: SparkType, b: SparkType) -> SparkType | None:
    """``AnsiStringPromotionTypeCoercion.findWiderTypeForString``."""
    if a.name != "string":
        return _wider_for_string(b, a) if b.name == "string" else None
    if b.name in _INTEGRAL:
        return BIGINT
    if b.name in ("float", "double", "decimal"):
        return DOUBLE
    if b.name == "void":
        return a
    if b.name in ("interval_ym", "interval_dt"):
        return None
    return b if b.name in _ATOMIC else None


def binary_common_type(a: SparkType, b: SparkType) -> SparkType | None:
    """The type a binary operator (``=``, ``<``, ``+``, ``%``...) casts its operands to: ANSI's
    string promotion, decimal precision, then the tightest common type (no complex-type
    widening beyond the tightest); None: Spark refuses the operator
    (``BINARY_OP_DIFF_TYPES``)."""
    return tightest(a, b) or _wider_for_decimal(a, b) or _wider_for_string(a, b)


def wider(a: SparkType, b: SparkType) -> SparkType | None:
    """``AnsiTypeCoercion.findWiderTypeForTwo``: the type both are cast to, or None (Spark
    refuses to merge them)."""
    return (tightest(a, b) or _wider_for_decimal(a, b) or _wider_for_string(a, b)
            or _complex(a, b, wider))


def wider_without_string(a: SparkType, b: SparkType) -> SparkType | None:
    """``findWiderTypeWithoutStringPromotionForTwo`` (``greatest``, ``least``): no string
    promotion."""
    return tightest(a, b) or _wider_for_decimal(a, b) or _complex(a, b, wider_without_string)


def _fold(types: Iterable[SparkType], find: _Finder) -> SparkType | None:
    found: SparkType | None = NULL
    for t in types:
        found = find(found, t) if found is not None else None
    return found


def wider_common(types: Iterable[SparkType]) -> SparkType | None:
    """``findWiderCommonType``: the common type of all of ``types``, or None."""
    return _fold(types, wider)


def wider_common_without_string(types: Iterable[SparkType]) -> SparkType | None:
    """``findWiderTypeWithoutStringPromotion``: as :func:`wider_common` without string
    promotion."""
    return _fold(types, wider_without_string)
