"""Which CASTs Spark's analyser accepts: ``Cast.canAnsiCast`` (ANSI mode, Spark 4's default),
``Cast.canCast`` (the legacy rules, ``spark.sql.ansi.enabled=false``) and the error class
``Cast.typeCheckFailureMessage`` gives a refused one, over sqlglot types.

Only the types this module can place in Spark's hierarchy answer; anything else (an unknown
type, VARIANT, a user-defined type) answers None: callers pass. The geospatial types answer by
:mod:`.spatial`'s rules (``CAST(geography AS STRING)`` is refused).

>>> from runner.lint.spark_types.infer import parse_type as t
>>> can_ansi_cast(t("INT"), t("BINARY")), can_cast(t("INT"), t("BINARY"))
(False, True)
>>> cast_refusal(t("INT"), t("BINARY"))
'DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION'
>>> cast_refusal(t("STRING"), t("ARRAY<STRING>"))
'DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION'
>>> cast_refusal(t("DATE"), t("INT"))
'DATATYPE_MISMATCH.CAST_WITH_FUNC_SUGGESTION'
>>> cast_refusal(t("ARRAY<INT>"), t("ARRAY<STRING>")) is None
True
>>> cast_refusal(t("ARRAY<DATE>"), t("ARRAY<INT>"))
'DATATYPE_MISMATCH.CAST_WITH_FUNC_SUGGESTION'
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from runner.lint.spark_types.spatial import spatial_cast

__all__ = ["can_ansi_cast", "can_cast", "cast_refusal", "category"]

T = exp.DType

_CATEGORIES: dict[exp.DType, str] = {
    T.NULL: "null", T.TEXT: "string", T.VARCHAR: "string", T.CHAR: "string",
    T.NVARCHAR: "string", T.NCHAR: "string", T.BINARY: "binary", T.VARBINARY: "binary",
    T.BOOLEAN: "boolean", T.TINYINT: "integral", T.SMALLINT: "integral", T.INT: "integral",
    T.BIGINT: "integral", T.FLOAT: "fractional", T.DOUBLE: "fractional",
    T.DECIMAL: "decimal", T.BIGDECIMAL: "decimal", T.DATE: "date",
    T.TIMESTAMPTZ: "timestamp", T.TIMESTAMPLTZ: "timestamp", T.TIMESTAMP: "timestamp",
    T.TIMESTAMPNTZ: "timestamp_ntz", T.ARRAY: "array", T.MAP: "map", T.STRUCT: "struct",
}
_YEAR_MONTH = frozenset({"YEAR", "MONTH"})
_NUMERIC = frozenset({"integral", "fractional", "decimal"})


def category(dtype: exp.DataType | None) -> str | None:
    """Spark's kind of ``dtype``: ``string``, ``integral``, ``fractional`` (FLOAT, DOUBLE),
    ``decimal``, ``timestamp``, ``interval_ym``, ``interval_dt``, ``interval`` (the calendar
    interval), ``array``... None when unknown (or a type this module does not place)."""
    if dtype is None:
        return None
    kind = dtype.this
    if isinstance(kind, exp.Interval):  # INTERVAL DAY TO SECOND
        unit = kind.args.get("unit")
        first = unit.this if isinstance(unit, exp.IntervalSpan) else unit
        name = first.name.upper() if isinstance(first, exp.Expression) else ""
        return None if not name else "interval_ym" if name in _YEAR_MONTH else "interval_dt"
    if kind is T.INTERVAL and not dtype.expressions:
        return "interval"
    return _CATEGORIES.get(kind) if isinstance(kind, exp.DType) else None


def _elements(dtype: exp.DataType) -> list[exp.DataType | None]:
    """An array's element type, a map's key and value types, a struct's field types."""
    out: list[exp.DataType | None] = []
    for e in dtype.expressions:
        if isinstance(e, exp.ColumnDef):
            kind = e.args.get("kind")
            out.append(kind if isinstance(kind, exp.DataType) else None)
        else:
            out.append(e if isinstance(e, exp.DataType) else None)
    return out


Rule = Callable[[str, str], bool]


def _ansi(src: str, dst: str) -> bool:
    """``Cast.canAnsiCast`` for two non-nested kinds (equal kinds are handled before)."""
    if src == "null" or dst == "string":
        return True
    if src == "string":
        return dst in ("binary", "boolean", "timestamp", "timestamp_ntz", "date", "interval",
                       "interval_ym", "interval_dt") or dst in _NUMERIC
    if dst == "boolean":
        return src in _NUMERIC
    if dst == "timestamp":
        return src in ("date", "timestamp_ntz") or src in _NUMERIC
    if dst == "timestamp_ntz":
        return src in ("date", "timestamp")
    if dst == "date":
        return src in ("timestamp", "timestamp_ntz")
    if src in ("interval_ym", "interval_dt"):
        return dst in ("integral", "decimal")
    if dst in ("interval_ym", "interval_dt"):
        return src in ("integral", "decimal")
    if dst in _NUMERIC:
        return src in _NUMERIC or src in ("boolean", "timestamp")
    return False


def _legacy(src: str, dst: str) -> bool:
    """``Cast.canCast`` (ANSI off) for two non-nested kinds: the ANSI rules and more.
    (Integral to a single-unit interval only in Spark; both interval kinds are taken here,
    which only ever turns a refusal's class from WITHOUT into WITH_CONF.)"""
    if _ansi(src, dst):
        return True
    if dst == "binary":
        return src == "integral"
    if dst == "boolean":
        return src in ("date", "timestamp")
    if dst == "timestamp":
        return src == "boolean"
    if dst in _NUMERIC:
        return src == "date"
    return False


def _can(src: exp.DataType | None, dst: exp.DataType | None, rule: Rule) -> bool | None:
    spatial = spatial_cast(src, dst)
    if spatial is not None:
        return spatial
    a, b = category(src), category(dst)
    if a is None or b is None or src is None or dst is None:
        return None
    nested = ("array", "map", "struct")
    if a == "null" or b == "string":
        return True
    if a in nested and a == b:
        xs, ys = _elements(src), _elements(dst)
        if len(xs) != len(ys):
            return False if a == "struct" else None
        answers = [_can(x, y, rule) for x, y in zip(xs, ys, strict=True)]
        if False in answers:
            return False
        return None if None in answers else True
    if a == b:
        return True
    if a in nested or b in nested:
        return False
    return rule(a, b)


def can_ansi_cast(src: exp.DataType | None, dst: exp.DataType | None) -> bool | None:
    """Spark's ``Cast.canAnsiCast(src, dst)``; None when a type is unknown here."""
    return _can(src, dst, _ansi)


def can_cast(src: exp.DataType | None, dst: exp.DataType | None) -> bool | None:
    """Spark's ``Cast.canCast(src, dst)`` (ANSI off); None when a type is unknown here."""
    return _can(src, dst, _legacy)


def cast_refusal(src: exp.DataType | None, dst: exp.DataType | None) -> str | None:
    """The error class Spark's analyser refuses ``CAST(<src> AS <dst>)`` with under ANSI
    mode, or None (accepted, or a type unknown here)."""
    if can_ansi_cast(src, dst) is not False:
        return None
    a, b = category(src), category(dst)
    if src is not None and dst is not None and a == b and a in ("array", "map", "struct") \
            and can_cast(src, dst):
        # legacy casting takes it: Spark 4.2 classes the refusal by the refused elements
        # (ARRAY<DATE> to ARRAY<INT>: CAST_WITH_FUNC_SUGGESTION, measured against a session)
        pairs = zip(_elements(src), _elements(dst), strict=True)
        refused = next((x, y) for x, y in pairs if can_ansi_cast(x, y) is False)
        return cast_refusal(*refused)
    if (a in _NUMERIC and b == "date") or (a == "date" and b in _NUMERIC):
        return "DATATYPE_MISMATCH.CAST_WITH_FUNC_SUGGESTION"
    if can_cast(src, dst):
        return "DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION"
    return "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION"
