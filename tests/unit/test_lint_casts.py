"""Spark's CAST rules (runner/lint/spark_types/casts.py): which casts ANSI mode refuses, with the error
class Spark gives each, transcribed from Spark's ``Cast.canAnsiCast`` / ``Cast.canCast`` /
``Cast.typeCheckFailureMessage``; tests/spark/test_casts_vs_spark.py checks the whole matrix of
basic types against a live session."""

from __future__ import annotations

import pytest

from runner.lint.spark_types.casts import can_ansi_cast, can_cast, cast_refusal, category
from runner.lint.spark_types.infer import parse_type

CONF = "DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION"
FUNC = "DATATYPE_MISMATCH.CAST_WITH_FUNC_SUGGESTION"
NONE = "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION"


@pytest.mark.parametrize(("src", "dst", "error"), [
    ("INT", "BINARY", CONF),  # integral -> binary: legacy casting only
    ("BIGINT", "BINARY", CONF),
    ("BOOLEAN", "TIMESTAMP", CONF),
    ("DATE", "BOOLEAN", CONF),
    ("TIMESTAMP", "BOOLEAN", CONF),
    ("DOUBLE", "BINARY", NONE),  # not even legacy casting
    ("STRING", "ARRAY<STRING>", NONE),
    ("STRING", "STRUCT<s: STRING>", NONE),
    ("STRING", "MAP<STRING, STRING>", NONE),
    ("INT", "ARRAY<INT>", NONE),
    ("ARRAY<INT>", "INT", NONE),
    ("BINARY", "INT", NONE),
    ("DATE", "INT", FUNC),  # UNIX_DATE
    ("INT", "DATE", FUNC),  # DATE_FROM_UNIX_DATE
    ("TIMESTAMP_NTZ", "INT", NONE),
    ("DOUBLE", "INTERVAL DAY", NONE),
    ("STRUCT<a: INT>", "STRUCT<a: INT, b: INT>", NONE),  # field counts differ
    # nested: classed by the refused elements when legacy casting takes the whole (measured)
    ("ARRAY<INT>", "ARRAY<BINARY>", CONF),
    ("ARRAY<DATE>", "ARRAY<INT>", FUNC),
    ("MAP<STRING, DATE>", "MAP<STRING, INT>", FUNC),
    ("ARRAY<INT>", "ARRAY<DATE>", NONE),  # legacy casting does not take it either
])
def test_casts_ansi_refuses_with_sparks_class(src: str, dst: str, error: str) -> None:
    assert can_ansi_cast(parse_type(src), parse_type(dst)) is False
    assert cast_refusal(parse_type(src), parse_type(dst)) == error


@pytest.mark.parametrize(("src", "dst"), [
    ("INT", "BOOLEAN"), ("DOUBLE", "TIMESTAMP"), ("TIMESTAMP", "BIGINT"), ("STRING", "BINARY"),
    ("BINARY", "STRING"), ("ARRAY<INT>", "STRING"), ("STRING", "DATE"), ("DATE", "TIMESTAMP_NTZ"),
    ("TIMESTAMP_NTZ", "DATE"), ("BOOLEAN", "DECIMAL(3, 1)"), ("INTERVAL DAY", "BIGINT"),
    ("INT", "INTERVAL DAY"), ("DECIMAL(10, 2)", "INTERVAL YEAR"), ("STRING", "INTERVAL DAY"),
    ("INTERVAL YEAR TO MONTH", "INTERVAL MONTH"), ("ARRAY<INT>", "ARRAY<STRING>"),
    ("STRUCT<a: INT, b: STRING>", "STRUCT<x: STRING, y: BINARY>"),
    ("MAP<INT, INT>", "MAP<STRING, DOUBLE>"), ("CHAR(3)", "INT"), ("VARCHAR(3)", "DATE"),
])
def test_casts_ansi_takes(src: str, dst: str) -> None:
    assert can_ansi_cast(parse_type(src), parse_type(dst)) is True
    assert cast_refusal(parse_type(src), parse_type(dst)) is None


@pytest.mark.parametrize(("src", "dst"), [
    ("VARIANT", "INT"), ("INT", "VARIANT"), ("GEOMETRY", "GEOGRAPHY(4326)"),
    ("ARRAY<VARIANT>", "ARRAY<INT>"), ("TIME", "INT"),
])
def test_types_it_does_not_place_answer_none(src: str, dst: str) -> None:
    """Unknown here: no verdict, so the rule passes (never a false refusal)."""
    assert can_ansi_cast(parse_type(src), parse_type(dst)) is None
    assert cast_refusal(parse_type(src), parse_type(dst)) is None


@pytest.mark.parametrize(("src", "dst", "ok"), [
    ("GEOMETRY(4326)", "STRING", False), ("GEOGRAPHY(4326)", "STRING", False),
    ("BINARY", "GEOGRAPHY(4326)", False), ("STRING", "GEOMETRY(0)", False),
    ("GEOGRAPHY(ANY)", "GEOGRAPHY(4326)", False), ("GEOMETRY(ANY)", "GEOMETRY(4326)", False),
    ("GEOGRAPHY(4326)", "GEOMETRY(ANY)", False), ("GEOMETRY(0)", "GEOGRAPHY(4326)", False),
    ("GEOMETRY(3857)", "GEOMETRY(4326)", False),
    ("GEOGRAPHY(4326)", "GEOGRAPHY(ANY)", True), ("GEOMETRY(0)", "GEOMETRY(ANY)", True),
    ("GEOGRAPHY(4326)", "GEOMETRY(4326)", True), ("GEOMETRY(4326)", "GEOGRAPHY(4326)", True),
    ("GEOGRAPHY(ANY)", "GEOMETRY(ANY)", True), ("GEOMETRY(3857)", "GEOMETRY(3857)", True),
    ("NULL", "GEOMETRY(4326)", True),
])
def test_spatial_casts_follow_sparks_srid_rules(src: str, dst: str, ok: bool) -> None:
    """Cast.canAnsiCast (and canCast) of GEOGRAPHY/GEOMETRY: never to or from another kind of
    type, to ANY of the same kind, across kinds at one SRID; refused without suggestion."""
    assert can_ansi_cast(parse_type(src), parse_type(dst)) is ok
    assert can_cast(parse_type(src), parse_type(dst)) is ok
    assert cast_refusal(parse_type(src), parse_type(dst)) == (None if ok else NONE)


def test_legacy_casting_takes_more_than_ansi() -> None:
    pairs = [("INT", "BINARY"), ("DATE", "INT"), ("BOOLEAN", "TIMESTAMP"), ("DATE", "BOOLEAN")]
    for src, dst in pairs:
        assert can_cast(parse_type(src), parse_type(dst)) is True
    assert can_cast(parse_type("STRING"), parse_type("ARRAY<STRING>")) is False


def test_categories_follow_sparks_hierarchy() -> None:
    kinds = {t: category(parse_type(t)) for t in (
        "TINYINT", "FLOAT", "DECIMAL(38, 0)", "STRING", "TIMESTAMP", "TIMESTAMP_LTZ",
        "TIMESTAMP_NTZ", "INTERVAL DAY TO SECOND", "INTERVAL YEAR", "INTERVAL")}
    assert kinds == {
        "TINYINT": "integral", "FLOAT": "fractional", "DECIMAL(38, 0)": "decimal",
        "STRING": "string", "TIMESTAMP": "timestamp", "TIMESTAMP_LTZ": "timestamp",
        "TIMESTAMP_NTZ": "timestamp_ntz", "INTERVAL DAY TO SECOND": "interval_dt",
        "INTERVAL YEAR": "interval_ym", "INTERVAL": "interval"}
