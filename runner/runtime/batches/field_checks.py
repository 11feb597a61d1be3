"""The parse's per-field checks, as Spark expressions over the parsed value (no Python UDF):
NOT NULL fields missing, values out of range
(:func:`runner.runtime.batches.reasons.value_out_of_range`) and wrapped epoch numbers
(:func:`runner.runtime.batches.reasons.wrapped_epoch`), at every nesting (structs, arrays, map
values). :mod:`runner.runtime.batches.parse` combines them into its dead flag; the hot path: each
runs once per record.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from runner.runtime.batches.reasons import parse_type, value_out_of_range, wrapped_epoch

__all__ = ["any_of", "epoch_schema", "epoch_violation", "not_null_violation", "nullable",
           "range_violation"]


def not_null_violation(col: Column, dtype: T.DataType) -> Column | None:
    """True where a NOT NULL field inside the (non-null) value ``col`` is null; None if the
    type declares no NOT NULL field anywhere."""
    if isinstance(dtype, T.StructType):
        parts: list[Column] = []
        for field in dtype.fields:
            child = col.getField(field.name)
            if not field.nullable:
                parts.append(child.isNull())
            sub = not_null_violation(child, field.dataType)
            if sub is not None:
                parts.append(child.isNotNull() & sub)
        return any_of(parts)
    if isinstance(dtype, T.ArrayType):
        element_type = dtype.elementType
        if not_null_violation(F.lit(None).cast(element_type), element_type) is None \
                and dtype.containsNull:
            return None
        return F.exists(col, lambda e: _element_violation(e, element_type, dtype.containsNull))
    if isinstance(dtype, T.MapType):
        value_type = dtype.valueType
        if not_null_violation(F.lit(None).cast(value_type), value_type) is None \
                and dtype.valueContainsNull:
            return None
        return F.exists(F.map_values(col),
                        lambda e: _element_violation(e, value_type, dtype.valueContainsNull))
    return None


def range_violation(col: Column, dtype: T.DataType) -> Column | None:
    """True where a value inside ``col`` is out of range (:func:`value_out_of_range`), never
    null; None if ``dtype`` holds no range-checked type."""
    if isinstance(dtype, T.StructType):
        parts: list[Column] = []
        for field in dtype.fields:
            child = col.getField(field.name)
            sub = range_violation(child, field.dataType)
            if sub is not None:
                parts.append(child.isNotNull() & sub)
        return any_of(parts)
    if isinstance(dtype, (T.ArrayType, T.MapType)):
        inner = dtype.elementType if isinstance(dtype, T.ArrayType) else dtype.valueType
        if range_violation(F.lit(None).cast(parse_type(inner)), inner) is None:
            return None
        values = col if isinstance(dtype, T.ArrayType) else F.map_values(col)
        return F.coalesce(F.exists(values, lambda e: _present_and(e, range_violation(e, inner))),
                          F.lit(False))
    out = value_out_of_range(col, dtype)
    return None if out is None else F.coalesce(out, F.lit(False))


def epoch_schema(dtype: T.DataType) -> T.DataType | None:
    """``dtype`` cut down to the paths leading to its TIMESTAMP values, each read as STRING (a
    JSON number keeps its digits); None when it holds no TIMESTAMP."""
    if isinstance(dtype, T.TimestampType):
        return T.StringType()
    if isinstance(dtype, T.StructType):
        fields = [T.StructField(f.name, sub) for f in dtype.fields
                  if (sub := epoch_schema(f.dataType)) is not None]
        return T.StructType(fields) if fields else None
    if isinstance(dtype, T.ArrayType):
        sub = epoch_schema(dtype.elementType)
        return None if sub is None else T.ArrayType(sub)
    if isinstance(dtype, T.MapType):
        sub = epoch_schema(dtype.valueType)
        return None if sub is None else T.MapType(dtype.keyType, sub)
    return None


def epoch_violation(col: Column, dtype: T.DataType) -> Column | None:
    """True where ``col`` (read with an :func:`epoch_schema`) holds a wrapped epoch number."""
    if isinstance(dtype, T.StringType):
        return wrapped_epoch(col)
    if isinstance(dtype, T.StructType):
        return any_of([col.getField(f.name).isNotNull() & v for f in dtype.fields
                     if (v := epoch_violation(col.getField(f.name), f.dataType)) is not None])
    if isinstance(dtype, (T.ArrayType, T.MapType)):
        inner = dtype.elementType if isinstance(dtype, T.ArrayType) else dtype.valueType
        values = col if isinstance(dtype, T.ArrayType) else F.map_values(col)
        return F.exists(values, lambda e: _present_and(e, epoch_violation(e, inner)))
    return None


def _present_and(e: Column, check: Column | None) -> Column:
    """``e`` is not null and ``check`` holds; false (never null) otherwise."""
    return F.lit(False) if check is None else F.coalesce(e.isNotNull() & check, F.lit(False))


def nullable(dtype: T.DataType) -> T.DataType:
    """``dtype`` with every field, element and value nullable (what ``from_json`` yields)."""
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, nullable(f.dataType), True, f.metadata)
                             for f in dtype.fields])
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(nullable(dtype.elementType), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(dtype.keyType, nullable(dtype.valueType), True)
    return dtype


def _element_violation(e: Column, dtype: T.DataType, contains_null: bool) -> Column:
    sub = not_null_violation(e, dtype)
    inner = e.isNotNull() & sub if sub is not None else F.lit(False)
    return inner if contains_null else (e.isNull() | inner)


def any_of(parts: list[Column]) -> Column | None:
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result | part
    return result
