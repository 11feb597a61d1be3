"""Spark types for the linter: struct/array navigation, generator columns, expression typing.

Expression types come from sqlglot's :class:`TypeAnnotator` run *partially*: the resolver sets
the type of every column reference it resolves, and the annotator (``overwrite_types=False``)
types what is built on top of them (functions, operators, CASE, casts...). A few Spark return
types sqlglot does not know (or gets wrong) are overridden here; the expressions that merge
their inputs (``coalesce``, ``IF``, ``CASE``, ``greatest``, ``array()``, ``map()``) get Spark's
ANSI common type (:mod:`.expr_types`) where it is known.

>>> type_string(parse_type("struct<a: int, b: array<string>>"))
'STRUCT<a: INT, b: ARRAY<STRING>>'
>>> type_string(field_type(parse_type("array<struct<code: string>>"), "CODE")[0])
'ARRAY<STRING>'
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeGuard

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError
from sqlglot.optimizer.annotate_types import TypeAnnotator
from sqlglot.schema import MappingSchema

from runner.lint.spark_types.expr_types import spark_type, to_sqlglot

__all__ = [
    "UNKNOWN",
    "element_type",
    "field_type",
    "generator_columns",
    "is_generator",
    "is_",
    "is_known",
    "make_annotator",
    "parse_type",
    "struct_fields",
    "type_string",
]

T = exp.DType
UNKNOWN = exp.DataType(this=T.UNKNOWN)


@functools.lru_cache(maxsize=512)
def _build(sql: str) -> exp.DataType:
    return exp.DataType.build(sql, dialect="spark")


def parse_type(sql: str) -> exp.DataType:
    """A Spark type string as a sqlglot DataType (``UNKNOWN`` when it does not parse)."""
    try:
        return _build(sql).copy()
    except (ParseError, ValueError):
        return UNKNOWN.copy()


def is_(dtype: exp.DataType | None, *types: exp.DType) -> TypeGuard[exp.DataType]:
    """``dtype`` is one of ``types`` (cheaper than ``DataType.is_type``, which builds types)."""
    return dtype is not None and dtype.this in types


def is_known(dtype: exp.DataType | None) -> TypeGuard[exp.DataType]:
    return dtype is not None and dtype.this is not T.UNKNOWN


def type_string(dtype: exp.DataType | None) -> str:
    """Spark type string: ``'STRING'``, ``'ARRAY<STRUCT<a: INT>>'``; ``'UNKNOWN'``; NULL is VOID."""
    if not is_known(dtype):
        return "UNKNOWN"
    if dtype.this is T.NULL:
        return "VOID"
    if not dtype.expressions:  # a plain type: skip the generator
        text = _PLAIN.get(dtype.this)
        if text is None:
            text = _PLAIN[dtype.this] = dtype.sql(dialect="spark")
        return text
    return dtype.sql(dialect="spark")


_PLAIN: dict[exp.DType, str] = {}


def struct_fields(dtype: exp.DataType | None) -> list[tuple[str, exp.DataType]]:
    """``(name, type)`` of a struct type's fields, in order; ``[]`` for anything else."""
    if dtype is None or not is_(dtype, T.STRUCT):
        return []
    out = []
    for col in dtype.expressions:
        if isinstance(col, exp.ColumnDef):
            kind = col.args.get("kind")
            out.append((col.name, kind if isinstance(kind, exp.DataType) else UNKNOWN))
    return out


def element_type(dtype: exp.DataType | None) -> exp.DataType | None:
    """An array's element type, or None."""
    if dtype is not None and is_(dtype, T.ARRAY) and dtype.expressions:
        inner = dtype.expressions[0]
        return inner if isinstance(inner, exp.DataType) else None
    return None


def field_type(dtype: exp.DataType | None, name: str
               ) -> tuple[exp.DataType | None, str | None, list[str] | None]:
    """Spark's ``value.name`` on a value of type ``dtype`` (case-insensitive).

    Returns:
        ``(type, canonical field name, None)`` when it resolves; ``(None, None, candidates)``
        when it certainly does not (candidates: the struct's field names, ``[]`` if ``dtype``
        has no fields at all); ``(None, None, None)`` when the type is not known.
    """
    if not is_known(dtype):
        return None, None, None
    if is_(dtype, T.STRUCT):
        fields = struct_fields(dtype)
        lowered = name.lower()
        for fname, ftype in fields:
            if fname.lower() == lowered:
                return ftype, fname, None
        return None, None, [f for f, _ in fields]
    if is_(dtype, T.ARRAY):  # array<struct>.field is the array of that field
        inner, canonical, candidates = field_type(element_type(dtype), name)
        if inner is None:
            return None, None, candidates
        return exp.DataType(this=T.ARRAY, expressions=[inner], nested=True), canonical, None
    if is_(dtype, T.MAP):  # map.key is a lookup
        values = dtype.expressions[1:2]
        return (values[0] if values else UNKNOWN), name, None
    if is_(dtype, T.NULL):  # NULL.field is NULL in Spark
        return dtype, name, None
    return None, None, []


_EXPLODE = (exp.Explode, exp.ExplodeOuter)


def is_generator(node: exp.Expr) -> bool:
    """explode / posexplode / inline (and their _outer forms): they yield rows of columns."""
    return isinstance(node, (*_EXPLODE, exp.Inline)) or (
        isinstance(node, exp.Anonymous) and node.name.lower() == "inline_outer")


def generator_columns(node: exp.Expr) -> list[tuple[str, exp.DataType]] | None:
    """Spark's default output columns of a generator whose argument is typed; None if unknown."""
    arg = node.this if not isinstance(node, exp.Anonymous) else (node.expressions or [None])[0]
    arg_type = arg.type if isinstance(arg, exp.Expression) else None
    if not is_known(arg_type):
        return None
    pos: list[tuple[str, exp.DataType]] = []
    if isinstance(node, exp.Posexplode):
        pos = [("pos", _build("INT"))]
    if isinstance(node, _EXPLODE):
        if is_(arg_type, T.ARRAY):
            return pos + [("col", element_type(arg_type) or UNKNOWN)]
        if is_(arg_type, T.MAP) and len(arg_type.expressions) == 2:
            key, value = arg_type.expressions
            return pos + [("key", key), ("value", value)]
        return None
    fields = struct_fields(element_type(arg_type))
    return fields or None


# -- expression typing: Spark return types sqlglot lacks ------------------------------------

def _returns(type_sql: str) -> Callable[[TypeAnnotator, exp.Expr], Any]:
    return lambda self, e: self._set_type(e, _build(type_sql))


def _same_as_this(self: TypeAnnotator, e: exp.Expr) -> Any:
    return self._set_type(e, e.this.type if isinstance(e.this, exp.Expression) else None)


def _transform(self: TypeAnnotator, e: exp.Expr) -> Any:
    body = e.expression.this if isinstance(e.expression, exp.Lambda) else None
    if isinstance(body, exp.Expression) and is_known(body.type):
        return self._set_type(e, exp.DataType(this=T.ARRAY, expressions=[body.type], nested=True))
    return self._set_type(e, None)


def _bracket(self: TypeAnnotator, e: exp.Bracket) -> Any:
    """``map[key]`` is the value type, ``struct['field']`` the field's; arrays as sqlglot does."""
    this_type = e.this.type
    keys = e.expressions
    if this_type is not None and is_(this_type, T.MAP) and len(this_type.expressions) == 2:
        return self._set_type(e, this_type.expressions[1])
    if (this_type is not None and is_(this_type, T.STRUCT) and len(keys) == 1
            and isinstance(keys[0], exp.Literal) and keys[0].is_string):
        return self._set_type(e, field_type(this_type, keys[0].name)[0])
    return self._annotate_bracket(e)


def _reduce(self: TypeAnnotator, e: exp.Expr) -> Any:
    for arg in ("finish", "merge"):
        lam = e.args.get(arg)
        body = lam.this if isinstance(lam, exp.Lambda) else None
        if isinstance(body, exp.Expression) and is_known(body.type):
            return self._set_type(e, body.type)
    return self._set_type(e, e.args["initial"].type)


def _from_json(self: TypeAnnotator, e: exp.Expr) -> Any:
    schema = e.expression
    if isinstance(schema, exp.Literal) and schema.is_string:
        for text in (f"STRUCT<{schema.name}>", schema.name):
            dtype = parse_type(text)
            if is_known(dtype) and is_(dtype, T.STRUCT, T.ARRAY, T.MAP):
                return self._set_type(e, dtype)
    return self._set_type(e, None)


_ANONYMOUS: dict[str, str] = {
    "now": "TIMESTAMP",
    "window": "STRUCT<start: TIMESTAMP, end: TIMESTAMP>",
    "session_window": "STRUCT<start: TIMESTAMP, end: TIMESTAMP>",
    "hash": "INT",
    "xxhash64": "BIGINT",
    "crc32": "BIGINT",
    "monotonically_increasing_id": "BIGINT",
    "spark_partition_id": "INT",
    "cardinality": "INT",
    "input_file_name": "STRING",
    "current_timezone": "STRING",
    "forall": "BOOLEAN",
    "uuid": "STRING",
    "split_part": "STRING",
    "timestamp_millis": "TIMESTAMP",
    "timestamp_micros": "TIMESTAMP",
    "timestamp_seconds": "TIMESTAMP",
    "try_to_timestamp": "TIMESTAMP",
    "make_date": "DATE",
}


def _lambda_body(e: exp.Expr) -> exp.DataType | None:
    lam = next((a for a in e.expressions if isinstance(a, exp.Lambda)), None)
    body = lam.this if lam is not None else None
    return body.type if isinstance(body, exp.Expression) and is_known(body.type) else None


def _anonymous(self: TypeAnnotator, e: exp.Expr) -> Any:
    name = e.name.lower()
    known = _ANONYMOUS.get(name)
    if known:
        return self._set_type(e, _build(known))
    first = e.expressions[0].type if e.expressions else None
    if name in ("map_filter", "array_sort", "filter") and is_known(first):
        return self._set_type(e, first)
    body = _lambda_body(e) if name in ("zip_with", "transform_values", "transform_keys") else None
    if body is not None and name == "zip_with":
        return self._set_type(e, exp.DataType(this=T.ARRAY, expressions=[body], nested=True))
    if body is not None and is_(first, T.MAP) and len(first.expressions) == 2:
        key, value = first.expressions
        pair = [body, value] if name == "transform_keys" else [key, body]
        return self._set_type(e, exp.DataType(this=T.MAP, expressions=pair, nested=True))
    return self._set_type(e, None)


#: Expressions that merge their inputs into one type (ANSI coercion): sqlglot types them without
#: Spark's string promotion (``coalesce(1, '2')``: STRING, Spark: BIGINT).
_MERGING = (exp.Coalesce, exp.If, exp.Case, exp.Greatest, exp.Least, exp.Array, exp.VarMap,
            exp.Nvl2)


def _spark_merged(base: Callable[[TypeAnnotator, exp.Expr], Any] | None
                  ) -> Callable[[TypeAnnotator, exp.Expr], Any]:
    """Spark's type of a merging expression or a ``COLLATE`` (:mod:`.expr_types`) where it
    knows every input's, else ``base``'s (sqlglot's)."""

    def annotate(self: TypeAnnotator, e: exp.Expr) -> Any:
        found = spark_type(e)
        if found is not None:
            return self._set_type(e, to_sqlglot(found))
        return base(self, e) if base is not None else self._set_type(e, None)

    return annotate


def _overrides() -> dict[type[exp.Expr], dict[str, Any]]:
    out: dict[type[exp.Expr], dict[str, Any]] = {
        exp.TimestampTrunc: {"annotator": _returns("TIMESTAMP")},
        exp.TimestampFromParts: {"annotator": _returns("TIMESTAMP")},  # make_timestamp
        exp.FromTimeZone: {"annotator": _returns("TIMESTAMP")},  # to_utc_timestamp
        exp.Uuid: {"annotator": _returns("STRING")},
        exp.ArgMax: {"annotator": _same_as_this},
        exp.ArgMin: {"annotator": _same_as_this},
        exp.Transform: {"annotator": _transform},
        exp.Reduce: {"annotator": _reduce},
        exp.Bracket: {"annotator": _bracket},
        exp.SplitPart: {"annotator": _returns("STRING")},
        exp.Nvl2: {"annotator": lambda self, e: self._set_type(
            e, next((a.type for a in (e.args.get("true"), e.args.get("false"))
                     if isinstance(a, exp.Expression) and is_known(a.type)), None))},
        exp.FromJson: {"annotator": _from_json},
        exp.Anonymous: {"annotator": _anonymous},
    }
    for name in ("Year", "Month", "Day", "Quarter", "Week", "WeekOfYear", "DayOfMonth",
                 "DayOfWeek", "DayOfYear"):
        cls = getattr(exp, name, None)
        if cls is not None:
            out[cls] = {"annotator": _returns("INT")}
    spark = Dialect.get_or_raise("spark").EXPRESSION_METADATA
    for cls in (*_MERGING, exp.Collate):  # COLLATE: its string type carries the collation
        base = (out.get(cls) or spark.get(cls) or {}).get("annotator")
        out[cls] = {"annotator": _spark_merged(base)}
    return out


@functools.lru_cache(maxsize=1)
def _metadata() -> dict[type[exp.Expr], dict[str, Any]]:
    return {**Dialect.get_or_raise("spark").EXPRESSION_METADATA, **_overrides()}


@functools.lru_cache(maxsize=1)
def _schema() -> MappingSchema:
    return MappingSchema(dialect="spark")


def make_annotator() -> TypeAnnotator:
    """A partial annotator: it keeps the types the resolver already set on column references."""
    return TypeAnnotator(schema=_schema(), expression_metadata=_metadata(),
                         overwrite_types=False)
