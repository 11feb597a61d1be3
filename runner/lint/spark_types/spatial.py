"""Spark's geospatial types, GEOGRAPHY(srid) and GEOMETRY(srid), where lint can vouch for them:
the type of a spatial constructor (``ST_GEOGFROMWKB``, ``ST_GEOMFROMWKB``, ``ST_SETSRID``) or of
a cast to one, the casts Spark takes between them (``Cast.canAnsiCast`` and ``Cast.canCast``
share these rules), and the SRIDs each takes (``srids.json``, from Spark's registry by
``scripts/spark_srids.py``: a GEOMETRY takes any registered SRID or 0, a GEOGRAPHY only a
geographic one).

``ANY`` (a column of mixed SRIDs) is Spark's ``MIXED_SRID``, -1.

>>> from runner.lint.spark_types.infer import parse_type as t
>>> g4326, g_any = t("GEOGRAPHY(4326)"), t("GEOGRAPHY(ANY)")
>>> spatial_cast(g4326, g_any), spatial_cast(g_any, g4326)
(True, False)
>>> spatial_cast(t("GEOMETRY(4326)"), g4326), spatial_cast(t("BINARY"), t("GEOMETRY(0)"))
(True, False)
>>> spatial_cast(t("INT"), t("BIGINT")) is None
True
>>> srid_supported("geography", 3857), srid_supported("geometry", 3857)
(False, True)
"""

from __future__ import annotations

import json
from bisect import bisect_right
from functools import cache
from pathlib import Path

from sqlglot import exp

__all__ = ["MIXED_SRID", "literal_srid", "spatial_cast", "spatial_srid", "spatial_type",
           "srid_supported"]

T = exp.DType
MIXED_SRID = -1
_KINDS = {T.GEOGRAPHY: "geography", T.GEOMETRY: "geometry"}
_DEFAULT_SRIDS = {"st_geogfromwkb": ("geography", 4326), "st_geomfromwkb": ("geometry", 0)}


@cache
def _ranges(kind: str) -> tuple[list[int], list[int]]:
    data = json.loads(Path(__file__).with_name("srids.json").read_text(encoding="utf-8"))
    pairs = data[kind]
    return [a for a, _ in pairs], [b for _, b in pairs]


def srid_supported(kind: str, srid: int) -> bool:
    """Whether Spark's ``GeometryType(srid)`` (``kind`` ``geometry``) or
    ``GeographyType(srid)`` (``geography``) exists: else ``ST_INVALID_SRID_VALUE``."""
    firsts, lasts = _ranges(kind)
    i = bisect_right(firsts, srid) - 1
    return i >= 0 and srid <= lasts[i]


def spatial_srid(dtype: exp.DataType | None) -> tuple[str, int] | None:
    """(``geography`` or ``geometry``, srid) of a spatial type with one parameter, the SRID or
    ``ANY`` (-1); None for any other type (a spatial type without its SRID too)."""
    kind = _KINDS.get(dtype.this) if isinstance(dtype, exp.DataType) and \
        isinstance(dtype.this, exp.DType) else None
    if kind is None or dtype is None or len(dtype.expressions) != 1:
        return None
    param = dtype.expressions[0]
    value = param.this if isinstance(param, exp.DataTypeParam) else param
    if (isinstance(value, exp.Var) and value.name.upper() == "ANY") or \
            (isinstance(value, exp.Any) and value.this is None):  # sqlglot's Spark reads ANY so
        return kind, MIXED_SRID
    srid = literal_srid(value) if isinstance(value, exp.Expr) else None
    return (kind, srid) if srid is not None else None


def literal_srid(node: exp.Expr) -> int | None:
    """The value of an INT literal written as one (``4326``, ``-1``), as Spark's analyser reads
    an SRID argument; None for anything else (a BIGINT literal, a cast, a column)."""
    node = node.unnest()
    sign = 1
    if isinstance(node, exp.Neg):
        sign, node = -1, node.this.unnest()
    if not isinstance(node, exp.Literal) or node.is_string or not node.is_int:
        return None
    value = sign * int(node.name)
    return value if -(2 ** 31) <= value < 2 ** 31 else None


def _typed(kind: str, srid: int) -> exp.DataType:
    param: exp.Expr = exp.var("ANY") if srid == MIXED_SRID else exp.Literal.number(srid)
    return exp.DataType(this=T.GEOGRAPHY if kind == "geography" else T.GEOMETRY,
                        expressions=[exp.DataTypeParam(this=param)], nested=False)


def spatial_type(node: exp.Expr) -> exp.DataType | None:
    """Spark's type of ``node`` when it is a spatial value lint can type: a cast to a spatial
    type, ``ST_GEOGFROMWKB(wkb)`` (GEOGRAPHY(4326)), ``ST_GEOMFROMWKB(wkb)`` (GEOMETRY(0)),
    ``ST_GEOMFROMWKB(wkb, 3857)``, ``ST_SETSRID(g, 3857)`` (with an INT literal SRID; another
    SRID is ``ANY``). None otherwise, and for an SRID the type does not take (the call is
    refused with ST_INVALID_SRID_VALUE)."""
    node = node.unnest()
    if isinstance(node, (exp.Cast, exp.TryCast)):
        to = node.args.get("to")
        return to if isinstance(to, exp.DataType) and spatial_srid(to) else None
    if not isinstance(node, exp.Anonymous):
        return None
    name, args = node.name.lower(), node.expressions
    if name in _DEFAULT_SRIDS and len(args) == 1:
        return _typed(*_DEFAULT_SRIDS[name])
    if name == "st_geomfromwkb" and len(args) == 2:
        kind = "geometry"
    elif name == "st_setsrid" and len(args) == 2:
        inner = spatial_srid(spatial_type(args[0]))
        if inner is None:
            return None
        kind = inner[0]
    else:
        return None
    srid = literal_srid(args[1])
    if srid is None:
        return _typed(kind, MIXED_SRID)
    return _typed(kind, srid) if srid_supported(kind, srid) else None


def spatial_cast(src: exp.DataType | None, dst: exp.DataType | None) -> bool | None:
    """Spark's ``Cast.canAnsiCast(src, dst)`` where either type is spatial: never to or from
    another kind of type (STRING and BINARY included); a GEOGRAPHY or GEOMETRY of one SRID
    to ``ANY`` of its kind; GEOGRAPHY to GEOMETRY and back at the same SRID. None when neither
    is spatial or a spatial one's SRID is unknown here."""
    if not isinstance(src, exp.DataType) or not isinstance(dst, exp.DataType):
        return None
    spatial = {t.this in _KINDS for t in (src, dst)}
    if spatial == {False}:
        return None
    if src.this is T.NULL:
        return True
    if spatial == {True, False}:
        other = dst if src.this in _KINDS else src
        return None if other.this in (T.UNKNOWN, T.USERDEFINED) else False
    a, b = spatial_srid(src), spatial_srid(dst)
    if a is None or b is None:
        return None
    if a == b or a[0] != b[0]:
        return a[1] == b[1]
    return a[1] != MIXED_SRID and b[1] == MIXED_SRID
