"""Parse once: a catalogue of hostile records, each checked in one Spark action."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pytest

from runner.errors import ConfigError
from runner.runtime.batches.parse import DEAD_COLUMNS, parse_batch, prepare_parse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SCHEMA = (
    "eventId STRING NOT NULL, timestamp TIMESTAMP NOT NULL, "
    "user STRUCT<userId: STRING NOT NULL, country: STRING>, "
    "request STRUCT<endpoint: STRING, method: STRING, latency_ms: INT, status_code: INT>, "
    "errors ARRAY<STRUCT<errorCode: STRING NOT NULL, severity: STRING, count: INT>>, "
    "tags MAP<STRING, INT>, amount DOUBLE, price DECIMAL(10,2), note STRING"
)
TS = '"timestamp":"2024-05-01T10:00:00Z"'
BIG = "x" * (10 * 1024 * 1024)

VALID = "valid"
# case id -> (line, VALID or a substring the dead-letter reason must contain)
CASES: dict[str, tuple[str, str]] = {
    # not a JSON object
    "not_json": ("this is not json", "invalid JSON"),
    "truncated": ('{"eventId":"t1",' + TS, "invalid JSON"),
    "array": ('[{"eventId":"a1",' + TS + "}]", "not a JSON object (array)"),
    "number": ("42", "not a JSON object (number)"),
    "string": ('"hello"', "not a JSON object (string)"),
    "boolean": ("true", "not a JSON object (boolean)"),
    "null": ("null", "not a JSON object (null)"),
    "single_quotes": ("{'eventId':'sq'," + TS.replace('"', "'") + "}", "invalid JSON"),
    "trailing_text": ('{"eventId":"tt",' + TS + "} trailing", "after the closing '}'"),
    # a second value glued on: Jackson reads the first object and ignores the rest
    "second_object": ('{"eventId":"s1",' + TS + '}{"eventId":"s2",' + TS + "}",
                      "after the closing '}'"),
    "second_object_spaced": ('{"eventId":"s3",' + TS + '}  {"eventId":"s4",' + TS + "}",
                             "after the closing '}'"),
    "second_object_comma": ('{"eventId":"s5",' + TS + '},{"eventId":"s6",' + TS + "}",
                            "after the closing '}'"),
    "bracket_then_object": ('{"eventId":"s7",' + TS + '}] [{"x":1}', "after the closing '}'"),
    "extra_brace": ('{"eventId":"s8",' + TS + "}}", "after the closing '}'"),
    "comma_member": ('{"eventId":"s9",' + TS + '},"k":0}', "after the closing '}'"),
    "close_both": ('{"eventId":"s10",' + TS + "}]}", "after the closing '}'"),
    # each closes or extends one of the parse's two wrappers (as a member, as an element)
    "brace_bracket": ('{"eventId":"s11",' + TS + "}}]", "after the closing '}'"),
    "comma_number": ('{"eventId":"s12",' + TS + "},1", "after the closing '}'"),
    "comma_null": ('{"eventId":"s13",' + TS + "},null", "after the closing '}'"),
    "comma_object_brace": ('{"eventId":"s14",' + TS + "},{}}", "after the closing '}'"),
    "nan_literal": ('{"eventId":"n1",' + TS + ',"amount":NaN}', "invalid JSON"),
    # Jackson allows 1000 levels; each of the parse's reads wraps the record in one more, so
    # a record of exactly 1000 is dead, with the reason the wrappers give (docs/OPERATIONS.md)
    "deep_at_limit": ('{"eventId":"d3",' + TS + ',"x":' + "[" * 999 + "]" * 999 + "}",
                      "after the closing '}'"),
    "too_deep": ('{"eventId":"d2",' + TS + ',"x":' + "[" * 5000 + "]" * 5000 + "}",
                 "nested deeper than 1000 levels"),
    # wrong types, top-level and nested
    "wrong_type_top": ('{"eventId":"w1",' + TS + ',"amount":"abc"}',
                       'field amount: expected DOUBLE, got "abc"'),
    "wrong_type_nested": ('{"eventId":"w2",' + TS + ',"request":{"endpoint":"/a",'
                          '"latency_ms":"abc"}}',
                          'field request.latency_ms: expected INT, got "abc"'),
    "float_into_int": ('{"eventId":"w3",' + TS + ',"request":{"latency_ms":12.5}}',
                       "field request.latency_ms: expected INT, got 12.5"),
    "int_overflow": ('{"eventId":"w4",' + TS + ',"request":{"status_code":3000000000}}',
                     "field request.status_code: expected INT"),
    "wrong_type_in_array": ('{"eventId":"w5",' + TS + ',"errors":[{"errorCode":"E1"},'
                            '{"errorCode":"E2","count":"many"}]}',
                            'field errors[1].count: expected INT, got "many"'),
    "wrong_type_in_map": ('{"eventId":"w6",' + TS + ',"tags":{"a":1,"b":"two"}}',
                          'field tags["b"]: expected INT, got "two"'),
    "struct_is_string": ('{"eventId":"w7",' + TS + ',"user":"bob"}',
                         'field user: expected STRUCT (a JSON object), got "bob"'),
    "array_is_object": ('{"eventId":"w8",' + TS + ',"errors":{"errorCode":"E"}}',
                        "field errors: expected ARRAY"),
    "bad_timestamp": ('{"eventId":"w9","timestamp":"not a time"}',
                      'field timestamp: expected TIMESTAMP, got "not a time"'),
    "impossible_date": ('{"eventId":"w10","timestamp":"2024-02-30T10:00:00Z"}',
                        "field timestamp: expected TIMESTAMP"),
    "decimal_overflow": ('{"eventId":"w11",' + TS + ',"price":123456789012.5}',
                         "field price: expected DECIMAL(10,2)"),
    # NOT NULL
    "missing_not_null": ("{" + TS + "}", "missing NOT NULL field eventId"),
    "null_not_null": ('{"eventId":null,' + TS + "}", "NOT NULL field eventId is null"),
    "missing_nested_not_null": ('{"eventId":"m1",' + TS + ',"user":{"country":"FR"}}',
                                "missing NOT NULL field user.userId"),
    "missing_not_null_in_array": ('{"eventId":"m2",' + TS + ',"errors":[{"severity":"x"}]}',
                                  "missing NOT NULL field errors[0].errorCode"),
    "empty_object": ("{}", "missing NOT NULL field eventId"),
    "big_dead": ('{"eventId":"bd","note":"' + BIG + '"}', "missing NOT NULL field timestamp"),
    # valid records
    "zulu": ('{"eventId":"z",' + TS + "}", VALID),
    "offset": ('{"eventId":"o","timestamp":"2024-05-01T12:00:00+02:00"}', VALID),
    "extra_field": ('{"eventId":"e",' + TS + ',"undeclared":{"deep":[1,2,{"x":null}]}}', VALID),
    "parent_absent": ('{"eventId":"p",' + TS + ',"user":null,"errors":[null]}', VALID),
    "number_into_string": ('{"eventId":12345,' + TS + ',"note":{"k":[1]}}', VALID),
    "decimal_rounds": ('{"eventId":"r",' + TS + ',"price":"1.235"}', VALID),
    "nested_ok": ('{"eventId":"n",' + TS + ',"user":{"userId":"u1"},"request":{"latency_ms":7},'
                  '"errors":[{"errorCode":"E","count":2}],"tags":{"a":1}}', VALID),
    "deep_ok": ('{"eventId":"d1",' + TS + ',"x":' + "[" * 500 + "]" * 500 + "}", VALID),
    "deep_below_limit": ('{"eventId":"d4",' + TS + ',"x":' + "[" * 998 + "]" * 998 + "}", VALID),
    "big_valid": ('{"eventId":"bv",' + TS + ',"note":"' + BIG + '"}', VALID),
    "padded": ('  {"eventId":"pad",' + TS + "}  \t", VALID),
    "braces_in_strings": ('{"eventId":"}{ ]} ,{",' + TS + ',"note":"} {\\"a\\":1}"}', VALID),
}


def test_hostile_catalogue(spark: SparkSession) -> None:
    rows = [(line, case) for case, (line, _) in CASES.items()]
    raw = spark.createDataFrame(rows, "value STRING, _case STRING")
    parsed = parse_batch(raw, schema_ddl=SCHEMA, batch_id=3, metadata_columns=["_case"])
    parsed.persist()
    try:
        valid = {r["_case"]: r for r in parsed.valid.collect()}
        dead = {r["_case"]: r for r in parsed.dead.collect()}
    finally:
        parsed.frame.unpersist()

    # Conservation: every record lands in exactly one of valid / dead.
    assert len(valid) + len(dead) == len(CASES)
    assert not set(valid) & set(dead)

    wrong: list[str] = []
    for case, (line, expected) in CASES.items():
        if expected == VALID:
            if case not in valid:
                wrong.append(f"{case}: expected valid, dead with {dead[case]['reason']!r}")
        elif case not in dead:
            wrong.append(f"{case}: expected dead ({expected!r}), was valid")
        elif expected not in dead[case]["reason"]:
            wrong.append(f"{case}: reason {dead[case]['reason']!r} lacks {expected!r}")
        elif dead[case]["raw"] != line or dead[case]["_batch_id"] != 3:
            wrong.append(f"{case}: raw or _batch_id not carried")
    assert not wrong, "\n".join(wrong)

    # ISO-8601 with Z or an offset: the same instant (session time zone UTC).
    instant = dt.datetime(2024, 5, 1, 10, 0)
    assert valid["zulu"]["timestamp"] == instant
    assert valid["offset"]["timestamp"] == instant
    # Documented coercions.
    assert valid["number_into_string"]["eventId"] == "12345"
    assert valid["number_into_string"]["note"] == '{"k":[1]}'
    assert str(valid["decimal_rounds"]["price"]) == "1.24"
    assert valid["big_valid"]["note"] == BIG
    nested = valid["nested_ok"]
    assert nested["user"]["userId"] == "u1" and nested["request"]["latency_ms"] == 7
    assert nested["errors"][0]["count"] == 2 and nested["tags"] == {"a": 1}
    assert valid["parent_absent"]["user"] is None
    assert all(r["_batch_id"] == 3 for r in valid.values())


def test_output_shapes_and_single_parse(spark: SparkSession) -> None:
    raw = spark.createDataFrame(
        [('{"eventId":"a",' + TS + "}", "t", 0, 5, None), ("oops", "t", 1, 6, b"k")],
        "value STRING, _topic STRING, _partition INT, _offset BIGINT, _key BINARY")
    meta = ["_topic", "_partition", "_offset", "_key"]
    parsed = parse_batch(raw, schema_ddl="eventId STRING NOT NULL, timestamp TIMESTAMP",
                         batch_id=9, metadata_columns=meta)
    assert parsed.valid.columns == ["eventId", "timestamp", "_batch_id", *meta]
    assert parsed.dead.columns == [*DEAD_COLUMNS, *meta]
    assert dict(parsed.valid.dtypes)["_batch_id"] == "bigint"
    assert dict(parsed.dead.dtypes)["_batch_id"] == "bigint"
    # The valid path parses once: no from_json duplicated into pushed-down filters. (The
    # second from_json is the record read again as an array's element: trailing text and
    # epoch seconds, reasons.as_element.)
    plan = parsed.valid._jdf.queryExecution().executedPlan().toString()
    assert plan.count("from_json(") == 2, plan
    (dead,) = parsed.dead.collect()
    assert (dead["raw"], dead["reason"], dead["_offset"], dead["_key"]) == (
        "oops", "invalid JSON", 6, bytearray(b"k"))


def test_schema_errors(spark: SparkSession) -> None:
    raw = spark.createDataFrame([("{}", "f")], "value STRING, _source_file STRING")
    with pytest.raises(ConfigError, match="invalid Spark DDL"):
        parse_batch(raw, schema_ddl="eventId STRNG,,", batch_id=0,
                    metadata_columns=["_source_file"])
    with pytest.raises(ConfigError, match="_batch_id"):
        parse_batch(raw, schema_ddl="_batch_id BIGINT", batch_id=0,
                    metadata_columns=["_source_file"])
    # prepared before the query starts (runner.runtime.batches.batch.prepare): the same errors, no batch
    with pytest.raises(ConfigError, match="_source_file"):
        prepare_parse("eventId STRING, _source_file STRING", metadata_columns=["_source_file"])


def test_odd_field_names_and_case(spark: SparkSession) -> None:
    raw = spark.createDataFrame(
        [('{"a.b":1,"we`ird":"x","id":"i"}', "f1"), ('{"a.b":2,"ID":"i"}', "f2"),
         ('{"a.b":3,"we`ird":"y","id":"i"}', "f3")],
        "value STRING, _source_file STRING")
    parsed = parse_batch(raw, schema_ddl="`a.b` INT, `we``ird` STRING, id STRING NOT NULL",
                         batch_id=0, metadata_columns=["_source_file"])
    assert [(r["a.b"], r["we`ird"]) for r in parsed.valid.orderBy("`a.b`").collect()] == [
        (1, "x"), (3, "y")]
    (dead,) = parsed.dead.collect()
    assert dead["reason"] == "missing NOT NULL field id"  # keys are case-sensitive


# -- parse only what is used ---------------------------------------------------------------


def test_pruned_parse_keeps_used_and_not_null_fields(spark: SparkSession) -> None:
    """Pruned to ``amount``: NOT NULL fields (and fields holding one) are still parsed and
    checked; a type error in a field no model reads is not detected (documented)."""
    cases = {
        "ok": '{"eventId":"ok",' + TS + ',"amount":1.5}',
        "unused_type_error": '{"eventId":"u",' + TS + ',"request":{"latency_ms":"abc"}}',
        "used_type_error": '{"eventId":"a",' + TS + ',"amount":"abc"}',
        "missing_not_null": '{"amount":2.0,' + TS + "}",
        "nested_not_null": '{"eventId":"n",' + TS + ',"user":{"country":"FR"}}',
        "in_array_not_null": '{"eventId":"e",' + TS + ',"errors":[{"severity":"x"}]}',
        "invalid_json_in_unused": '{"eventId":"j",' + TS + ',"note":[1,}',
        "trailing": '{"eventId":"t",' + TS + "} x",
    }
    raw = spark.createDataFrame(list(((v, k) for k, v in cases.items())),
                                "value STRING, _case STRING")
    parsed = parse_batch(raw, schema_ddl=SCHEMA, batch_id=1, metadata_columns=["_case"],
                         fields=["amount"])
    # eventId, timestamp: NOT NULL; user, errors: hold a NOT NULL field; amount: used
    assert parsed.valid.columns == ["eventId", "timestamp", "user", "errors", "amount",
                                    "_batch_id", "_case"]
    valid = {r["_case"]: r for r in parsed.valid.collect()}
    dead = {r["_case"]: r["reason"] for r in parsed.dead.collect()}
    assert set(valid) == {"ok", "unused_type_error"}
    assert valid["ok"]["amount"] == 1.5
    assert dead == {
        "used_type_error": 'field amount: expected DOUBLE, got "abc"',
        "missing_not_null": "missing NOT NULL field eventId",
        "nested_not_null": "missing NOT NULL field user.userId",
        "in_array_not_null": "missing NOT NULL field errors[0].errorCode",
        "invalid_json_in_unused": "invalid JSON",
        "trailing": "invalid JSON: unexpected content after the closing '}' (a second value "
                    "on the line, or trailing text)",
    }


def test_pruned_parse_none_and_unknown_names(spark: SparkSession) -> None:
    raw = spark.createDataFrame([('{"eventId":"a",' + TS + "}", "f")],
                                "value STRING, _source_file STRING")
    full = parse_batch(raw, schema_ddl=SCHEMA, batch_id=0, metadata_columns=["_source_file"],
                       fields=None)
    assert full.valid.columns[:9] == ["eventId", "timestamp", "user", "request", "errors",
                                      "tags", "amount", "price", "note"]
    only = parse_batch(raw, schema_ddl="eventId STRING, note STRING, n INT", batch_id=0,
                       metadata_columns=["_source_file"], fields=["n", "not_in_schema"])
    assert only.valid.columns == ["n", "_batch_id", "_source_file"]
    assert only.valid.count() == 1


def test_prune_schema_unit() -> None:
    from pyspark.sql import types as T

    from runner.runtime.batches.parse import prune_schema

    schema = T.StructType([
        T.StructField("a", T.IntegerType(), nullable=False),
        T.StructField("b", T.StringType()),
        T.StructField("c", T.StructType([T.StructField("x", T.IntegerType(), False)])),
        T.StructField("d", T.ArrayType(T.StringType(), containsNull=False)),
        T.StructField("e", T.MapType(T.StringType(), T.IntegerType())),
        T.StructField("f", T.IntegerType()),
    ])
    assert prune_schema(schema, ["f"]).fieldNames() == ["a", "c", "d", "f"]
    assert prune_schema(schema, []).fieldNames() == ["a", "c", "d"]
    assert prune_schema(schema, None) is schema


@pytest.mark.spark
def test_schema_of_strings_only(spark) -> None:
    """No field can hold a wrong type: only shape and NOT NULL problems are dead."""
    raw = spark.createDataFrame([('{"a": "x", "b": 1}',), ('[1]',), ('{"b": "y"}',)],
                                "value STRING").selectExpr("value", "'f' AS _source_file")
    parsed = parse_batch(raw, schema_ddl="a STRING NOT NULL, b STRING", batch_id=0,
                         metadata_columns=["_source_file"])
    assert [r.b for r in parsed.valid.collect()] == ["1"]
    assert sorted(r.reason for r in parsed.dead.collect()) == [
        "missing NOT NULL field a", "not a JSON object (array)"]
