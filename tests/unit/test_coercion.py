"""Spark's ANSI type coercion table (runner/lint/spark_types/coercion.py), case by case against what
Spark 4 does (AnsiTypeCoercion.findWiderTypeForTwo and its helpers; the types named are the
ones Spark's own error messages and results show, e.g. its SQL tests' golden files)."""

from __future__ import annotations

import pytest

from runner.lint.spark_types.coercion import (
    NULL,
    SparkType,
    array,
    binary_common_type,
    map_of,
    of_string,
    tightest,
    wider,
    wider_common,
    wider_common_without_string,
    wider_without_string,
)


def t(sql: str) -> SparkType:
    found = of_string(sql)
    assert found is not None, sql
    return found


def merged(a: str, b: str) -> str | None:
    """``wider`` of two type strings, both ways round (symmetric but for the struct field
    names, which are the first struct's), as Spark spells it."""
    one, two = wider(t(a), t(b)), wider(t(b), t(a))
    assert str(one).lower() == str(two).lower(), (a, b, one, two)
    return None if one is None else str(one)


@pytest.mark.parametrize("a, b, common", [
    ("tinyint", "smallint", "SMALLINT"),
    ("int", "bigint", "BIGINT"),
    ("int", "float", "DOUBLE"),  # an integral type with FLOAT is DOUBLE, not FLOAT
    ("float", "float", "FLOAT"),
    ("float", "double", "DOUBLE"),
    ("void", "date", "DATE"),
    ("void", "void", "VOID"),
])
def test_numbers_by_precedence_and_null_with_anything(a: str, b: str, common: str) -> None:
    assert merged(a, b) == common


@pytest.mark.parametrize("a, b, common", [
    ("int", "decimal(10,0)", "DECIMAL(10,0)"),  # wide enough: the tightest type
    ("int", "decimal(5,2)", "DECIMAL(12,2)"),  # INT is DECIMAL(10,0): 10 digits, scale 2
    ("tinyint", "decimal(5,2)", "DECIMAL(5,2)"),
    ("bigint", "decimal(3,1)", "DECIMAL(21,1)"),
    ("decimal(10,2)", "decimal(5,4)", "DECIMAL(12,4)"),
    # past 38 digits the integral digits stay, the scale gives way (boundedPreferIntegralDigits)
    ("decimal(38,0)", "decimal(38,38)", "DECIMAL(38,0)"),
    ("decimal(36,0)", "decimal(36,35)", "DECIMAL(38,2)"),  # Spark's map_zip_with keys: 12.00
    ("int", "decimal(36,35)", "DECIMAL(38,28)"),
    ("decimal(5,2)", "double", "DOUBLE"),
    ("float", "decimal(5,2)", "DOUBLE"),
    ("decimal", "int", "DECIMAL(10,0)"),  # DECIMAL is DECIMAL(10,0)
])
def test_decimals(a: str, b: str, common: str) -> None:
    assert merged(a, b) == common


def test_the_tightest_type_loses_no_digits() -> None:
    assert tightest(t("int"), t("decimal(5,2)")) is None
    assert str(tightest(t("smallint"), t("decimal(5,0)"))) == "DECIMAL(5,0)"


@pytest.mark.parametrize("a, b, common", [
    ("string", "int", "BIGINT"),
    ("string", "tinyint", "BIGINT"),
    ("string", "float", "DOUBLE"),
    ("string", "decimal(5,2)", "DOUBLE"),
    ("string", "date", "DATE"),
    ("string", "timestamp", "TIMESTAMP"),
    ("string", "boolean", "BOOLEAN"),
    ("string", "binary", "BINARY"),
    ("string", "void", "STRING"),
    ("string", "varchar(3)", "STRING"),
    ("string", "interval day", None),  # which interval would the text be?
    ("string", "interval year to month", None),
    ("string", "array<string>", None),
])
def test_string_promotion_under_ansi(a: str, b: str, common: str | None) -> None:
    assert merged(a, b) == common


def test_greatest_and_least_do_not_promote_strings() -> None:
    assert wider_without_string(t("string"), t("int")) is None
    assert str(wider_without_string(t("int"), t("decimal(5,2)"))) == "DECIMAL(12,2)"
    assert wider_common_without_string([t("string"), t("date")]) is None
    assert str(wider_common_without_string([t("void"), t("string")])) == "STRING"


@pytest.mark.parametrize("a, b, common", [
    ("date", "timestamp", "TIMESTAMP"),
    ("date", "timestamp_ntz", "TIMESTAMP_NTZ"),
    ("timestamp", "timestamp_ntz", "TIMESTAMP"),
    ("date", "int", None),
    ("timestamp", "double", None),
    ("boolean", "int", None),
    ("boolean", "decimal(3,0)", None),
    ("binary", "bigint", None),
    ("binary", "timestamp", None),
    ("date", "binary", None),
])
def test_dates_times_and_types_with_no_common_type(a: str, b: str, common: str | None) -> None:
    assert merged(a, b) == common


@pytest.mark.parametrize("a, b, common", [
    ("interval month", "interval year", "INTERVAL YEAR TO MONTH"),
    ("interval day", "interval hour to second", "INTERVAL DAY TO SECOND"),
    ("interval minute", "interval hour", "INTERVAL HOUR TO MINUTE"),
    ("interval month", "interval day", None),  # Spark: ("INTERVAL MONTH" or "INTERVAL DAY")
    ("interval day", "int", None),
])
def test_intervals_of_one_kind_span_their_fields(a: str, b: str, common: str | None) -> None:
    assert merged(a, b) == common


@pytest.mark.parametrize("a, b, common", [
    ("array<int>", "array<bigint>", "ARRAY<BIGINT>"),
    ("array<int>", "array<string>", "ARRAY<BIGINT>"),
    ("array<array<int>>", "array<array<decimal(5,2)>>", "ARRAY<ARRAY<DECIMAL(12,2)>>"),
    ("array<int>", "array<date>", None),
    ("array<int>", "int", None),
    ("map<int, string>", "map<bigint, string>", "MAP<BIGINT, STRING>"),
    ("map<int, int>", "map<int, string>", "MAP<INT, BIGINT>"),
    # a key whose cast may give NULL: a map cannot hold a NULL key
    ("map<string, int>", "map<int, int>", None),
    ("map<string, string>", "map<date, date>", None),
    ("map<date, int>", "map<timestamp, int>", "MAP<TIMESTAMP, INT>"),
    ("map<string, int>", "map<string, bigint>", "MAP<STRING, BIGINT>"),
    # a decimal key cast to fewer fraction digits rounds, it does not become NULL
    ("map<decimal(36,0), int>", "map<decimal(36,35), int>", "MAP<DECIMAL(38,2), INT>"),
    ("struct<a: int, b: string>", "struct<a: bigint, b: string>",
     "STRUCT<a: BIGINT, b: STRING>"),
    ("struct<a: int>", "struct<A: bigint>", "STRUCT<a: BIGINT>"),  # names case-insensitive
    ("struct<a: int>", "struct<b: int>", None),  # fields are matched by name
    ("struct<a: int>", "struct<a: int, b: int>", None),
    ("struct<a: int>", "struct<a: date>", None),
    ("array<struct<a: int>>", "array<struct<a: string>>", "ARRAY<STRUCT<a: BIGINT>>"),
])
def test_nested_types_by_their_parts(a: str, b: str, common: str | None) -> None:
    assert merged(a, b) == common


def test_empty_collections_take_the_other_side() -> None:
    """``array()`` is ARRAY<VOID>, ``map()`` MAP<VOID, VOID>: NULL keys cast to anything."""
    assert str(wider(map_of(NULL, NULL), t("map<string, int>"))) == "MAP<STRING, INT>"
    assert str(wider(array(NULL), t("array<date>"))) == "ARRAY<DATE>"


def test_a_common_type_of_many_folds_from_null() -> None:
    assert wider_common([]) == t("void")
    assert str(wider_common([t("void"), t("int"), t("bigint")])) == "BIGINT"
    assert str(wider_common([t("int"), t("string")])) == "BIGINT"
    assert wider_common([t("int"), t("string"), t("date")]) is None  # BIGINT and DATE
    assert str(wider_common([t("string"), t("date"), t("timestamp")])) == "TIMESTAMP"


def test_binary_operators_widen_no_complex_type_beyond_the_tightest() -> None:
    assert str(binary_common_type(t("string"), t("int"))) == "BIGINT"
    assert str(binary_common_type(t("decimal(5,2)"), t("double"))) == "DOUBLE"
    assert str(binary_common_type(t("array<int>"), t("array<bigint>"))) == "ARRAY<BIGINT>"
    assert binary_common_type(t("array<int>"), t("array<string>")) is None
    assert binary_common_type(t("boolean"), t("tinyint")) is None


def test_types_outside_the_model_are_unknown() -> None:
    assert of_string("variant") is None
    assert of_string("array<variant>") is None
    assert of_string("no_such_type") is None
