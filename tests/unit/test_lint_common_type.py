"""The ``common-type`` rule (runner/lint/checks/common_type.py): inputs Spark merges into one type
(coalesce, IF, CASE, array(), map(), IN, greatest, UNION columns, array and map functions,
operators) have one, or the model is refused with Spark's error class, where it is; and the
valid neighbours, whose inputs do merge, pass. tests/spark/test_common_type_vs_spark.py runs
every example through Spark's analyser."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint import error_with_hint, lint_errors, lint_files, misreported

P = "FROM parsed_events"
DIFF = "DATATYPE_MISMATCH.DATA_DIFF_TYPES"

#: name -> (SQL, Spark's error class, (line, column) of the finding).
INVALID: dict[str, tuple[str, str, tuple[int, int]]] = {
    "coalesce_int_date": (f"SELECT eventId,\n  coalesce(1, DATE '2020-01-01') AS x {P}",
                          DIFF, (2, 3)),
    "nvl_timestamp_int": (f"SELECT nvl(`timestamp`, request.latency_ms) AS x {P}",
                          DIFF, (1, 8)),
    "if_boolean_int": (f"SELECT IF(eventId = 'a', true, 1) AS x {P}", DIFF, (1, 11)),
    "case_binary_date": (f"SELECT CASE WHEN eventId = 'a' THEN X'01' ELSE DATE '2020-01-01' END"
                         f" AS x {P}", DIFF, (1, 18)),
    "array_intervals": (f"SELECT array(INTERVAL 1 MONTH, INTERVAL 20 DAYS) AS x {P}",
                        DIFF, (1, 8)),
    "array_structs_named_apart": (f"SELECT array(struct(eventId), struct(eventId AS id)) AS x {P}",
                                  DIFF, (1, 8)),
    "map_keys": (f"SELECT map(1, 'a', DATE '2020-01-01', 'b') AS x {P}",
                 "DATATYPE_MISMATCH.CREATE_MAP_KEY_DIFF_TYPES", (1, 8)),
    "map_values": (f"SELECT map(1, X'01', 2, true) AS x {P}",
                   "DATATYPE_MISMATCH.CREATE_MAP_VALUE_DIFF_TYPES", (1, 8)),
    "in_list": (f"SELECT eventId {P} WHERE `timestamp` IN (1, 2)", DIFF, (1, 41)),
    # (a, b) is struct<a, b>, (1, 2) struct<col1, col2>: IN merges structs of one field
    # name only, so differing field types have no common type
    "in_tuple_types": ("WITH t AS (SELECT CAST(1 AS BIGINT) AS a, 2 AS b "
                       f"{P})\nSELECT a FROM t WHERE (a, b) IN ((1, 2))", DIFF, (2, 24)),
    "greatest_string_int": (f"SELECT greatest(eventId, 1) AS x {P}", DIFF, (1, 8)),
    "map_concat_keys": (f"SELECT map_concat(map('a', 1), map(DATE '2020-01-01', 2)) AS x {P}",
                        DIFF, (1, 8)),
    "union_columns": (f"SELECT eventId, `timestamp` {P}\nUNION ALL\n"
                      f"SELECT eventId, request.latency_ms {P}", "INCOMPATIBLE_COLUMN_TYPE",
                      (3, 8)),
    "except_star": (f"WITH t AS (SELECT errors {P})\nSELECT * FROM t EXCEPT SELECT 1 {P}",
                    "INCOMPATIBLE_COLUMN_TYPE", (2, 31)),
    "recursive_wider": ("WITH RECURSIVE t(n) AS (SELECT 1 FROM parsed_events\nUNION ALL\n"
                        "SELECT CAST(n + 1 AS BIGINT) FROM t WHERE n < 3) SELECT n FROM t",
                        "CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE", (3, 13)),
    "array_contains": (f"SELECT array_contains(array(1, 2), DATE '2020-01-01') AS x {P}",
                       "DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES", (1, 8)),
    "array_insert_string": (f"SELECT array_insert(array(1, 2, 3), 3, '4') AS x {P}",
                            "DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES", (1, 8)),
    "array_position": (f"SELECT array_position(array(1, 2), true) AS x {P}",
                       "DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES", (1, 8)),
    "array_remove": (f"SELECT array_remove(array(DATE '2020-01-01'), 1) AS x {P}",
                     "DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES", (1, 8)),
    "array_append": (f"SELECT array_append(array(1, 2), X'01') AS x {P}",
                     "DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES", (1, 8)),
    "array_prepend": (f"SELECT array_prepend(array(1, 2), DATE '2020-01-01') AS x {P}",
                      "DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES", (1, 8)),
    "map_contains_key": (f"SELECT map_contains_key(map('1', 'a'), 1) AS x {P}",
                         "DATATYPE_MISMATCH.MAP_FUNCTION_DIFF_TYPES", (1, 8)),
    "map_zip_with": (f"SELECT map_zip_with(map('a', 1), map(1, 2), (k, v1, v2) -> v1) AS x {P}",
                     "DATATYPE_MISMATCH.MAP_ZIP_WITH_DIFF_TYPES", (1, 8)),
    "pmod_date": (f"SELECT pmod(DATE '2020-01-01', CAST(1 AS DECIMAL(3, 0))) AS x {P}",
                  "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", (1, 8)),
    "compare_expression": (f"SELECT eventId {P} WHERE coalesce(request.latency_ms, 1) = true",
                           "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", (1, 41)),
    "between": (f"SELECT eventId {P} WHERE `timestamp` BETWEEN 1 AND 2",
                "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", (1, 41)),
    "simple_case": (f"SELECT CASE `timestamp` WHEN 1 THEN 'a' END AS x {P}",
                    "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", (1, 30)),
    "in_subquery": (f"SELECT eventId {P}\nWHERE `timestamp` IN (SELECT request.latency_ms {P})",
                    "DATATYPE_MISMATCH.IN_SUBQUERY_DATA_TYPE_MISMATCH", (2, 7)),
    "listagg_binary": (f"SELECT listagg(CAST(eventId AS BINARY), ',') AS x {P}", DIFF, (1, 21)),
    # strings of two collations: no common type across a set operation, nor for listagg,
    # whose inputs CollationTypeCoercion leaves alone (the separator ',' is UTF8_BINARY)
    "union_collations": (f"SELECT eventId COLLATE utf8_lcase AS e {P}\nUNION\n"
                         f"SELECT eventId COLLATE unicode_ci {P}", "INCOMPATIBLE_COLUMN_TYPE",
                         (3, 8)),
    "except_collation_and_literal": (f"SELECT CAST(eventId AS STRING COLLATE UTF8_LCASE) {P}\n"
                                     f"EXCEPT SELECT 'a' {P}", "INCOMPATIBLE_COLUMN_TYPE",
                                     (2, 15)),
    "union_collated_column": (f"SELECT c FROM (SELECT eventId COLLATE utf8_lcase AS c {P}) t\n"
                              f"UNION SELECT 'a' {P}", "INCOMPATIBLE_COLUMN_TYPE", (2, 14)),
    "union_star_collations": (f"SELECT * FROM (SELECT eventId COLLATE utf8_lcase AS c {P}) t\n"
                              f"UNION SELECT eventId COLLATE unicode {P}",
                              "INCOMPATIBLE_COLUMN_TYPE", (2, 14)),
    "listagg_collated_column": (f"WITH t AS (SELECT eventId COLLATE utf8_lcase AS c {P})\n"
                                "SELECT listagg(c, ',') AS x FROM t", DIFF, (2, 16)),
    "listagg_collation": (f"SELECT listagg(eventId COLLATE utf8_lcase, ',') AS x {P}",
                          DIFF, (1, 16)),
    "listagg_distinct_cast_collation": (
        "SELECT listagg(DISTINCT CAST(eventId AS STRING COLLATE UNICODE), ',')\n"
        f"  WITHIN GROUP (ORDER BY eventId) AS x {P}", DIFF, (1, 30)),
}

#: Valid neighbours: the same constructs whose inputs Spark merges (each analysed by Spark).
VALID: dict[str, str] = {
    "merging": f"SELECT coalesce(1, '2') AS a, nvl(request.latency_ms, 1.5) AS b,\n"
               f"  IF(eventId = 'a', 1, NULL) AS c, CASE WHEN true THEN 1 ELSE 2L END AS d,\n"
               f"  array(1, 2.5, '3') AS e, map(1, 'a', 2L, 'b') AS f,\n"
               f"  coalesce(`timestamp`, DATE '2020-01-01') AS g, nvl(eventId, 1) AS h {P}",
    "in_lists": f"SELECT eventId {P} WHERE request.latency_ms IN (1, 2L, '3', 4.5)\n"
                f"  AND `timestamp` IN ('2020-01-01', DATE '2020-01-01')\n"
                f"  AND (eventId, request.latency_ms) IN (('a', 1))",
    "greatest": f"SELECT greatest(1, 2L, 3.5) AS a, least(`timestamp`, DATE '2020-01-01') AS b {P}",
    "intervals": f"SELECT array(INTERVAL 1 MONTH, INTERVAL 2 YEARS) AS a,\n"
                 f"  coalesce(INTERVAL '1' DAY, INTERVAL '2' HOUR) AS b {P}",
    "structs": f"SELECT array(struct(eventId), struct(user.userId AS eventId)) AS a,\n"
               f"  array(named_struct('a', 1), named_struct('a', 2L)) AS b {P}",
    "unions": f"SELECT eventId, request.latency_ms {P}\nUNION ALL\n"
              f"SELECT 'x', 1.5 {P}\nUNION ALL\nSELECT eventId, '2' {P}",
    "array_functions": f"SELECT array_contains(array(1, 2), 1.5) AS a,\n"
                       f"  map_contains_key(map(1, 'a'), 5.0) AS b,\n"
                       f"  array_position(array(1, 2), 2L) AS c,\n"
                       f"  map_zip_with(map(1, 2), map(2L, 3), (k, v1, v2) -> v1) AS d {P}",
    "operators": f"SELECT (request.latency_ms + 1) = '2' AS a, (request.latency_ms + 1) > 1.5 AS b,"
                 f"\n  pmod(request.latency_ms, 2.5) AS c, `timestamp` - INTERVAL '1' DAY AS d"
                 f" {P}",
    "in_subquery": f"SELECT eventId {P}\nWHERE request.latency_ms IN (SELECT 1.5 {P})",
    "empty_and_null": f"SELECT coalesce(errors, array()) AS a, IF(eventId = 'a', map(), map('a', 1))"
                      f" AS b,\n  array(1, NULL) AS c, array(NULL) AS d,\n"
                      f"  coalesce(user, named_struct('userId', 'x', 'country', 'y')) AS e {P}",
    "dates_and_strings": f"SELECT CASE WHEN eventId = 'a' THEN `timestamp` ELSE '2020-01-01' END"
                         f" AS a,\n  greatest(`timestamp`, DATE '2020-01-01') AS b,\n"
                         f"  coalesce(request.latency_ms, 1.5D) AS c {P}\n"
                         f"WHERE `timestamp` IN ('2020-01-01') AND (eventId, eventId) IN (('a', 'b'))",
    "between_and_case": f"SELECT CASE request.latency_ms WHEN '1' THEN 'a' WHEN 2.5 THEN 'b' END"
                        f" AS a {P}\nWHERE `timestamp` BETWEEN '2020-01-01' AND DATE '2020-02-01'"
                        f"\n  AND request.latency_ms BETWEEN 1.5 AND '3'",
    "in_tuple_same_types": "WITH t AS (SELECT CAST(1 AS BIGINT) AS a, 2 AS b "
                           f"{P})\nSELECT a FROM t WHERE (a, b) IN ((1L, 2), (3L, 4))",
    "recursive_narrower": "WITH RECURSIVE t(n, ts) AS (SELECT CAST(1 AS BIGINT),\n"
                          f"  TIMESTAMP '2020-01-01 00:00:00' {P}\nUNION ALL\n"
                          "SELECT n + 1, '2020-01-02 00:00:00' FROM t WHERE n < 3)\n"
                          "SELECT n, ts FROM t",
    "recursive_in_name_only": f"WITH RECURSIVE t(n) AS (SELECT 1 {P} UNION ALL SELECT 2L {P})\n"
                              "SELECT n FROM t",
    "big_decimals": "WITH m AS (SELECT map(922337203685477897945456575809789456, 1) AS a,\n"
                    "  map(9.22337203685477897945456575809789456, 2) AS b, map(2, 3) AS c "
                    f"{P})\nSELECT map_zip_with(a, b, (k, v1, v2) -> v1) AS x,\n"
                    "  map_zip_with(b, c, (k, v1, v2) -> v1) AS y FROM m",
    "union_null": f"SELECT NULL AS e {P}\nUNION ALL\nSELECT errors {P}",
    "listagg": f"SELECT listagg(eventId, ',') AS a, listagg(CAST(eventId AS BINARY)) AS b {P}",
    "collations": f"SELECT eventId COLLATE utf8_lcase AS a {P}\nUNION\n"
                  f"SELECT eventId COLLATE UTF8_LCASE {P}\nUNION\n"
                  f"SELECT lower(eventId COLLATE utf8_lcase) {P}",
    "collations_utf8_binary": f"SELECT eventId COLLATE utf8_binary AS a {P}\nUNION ALL\n"
                              f"SELECT 'x' {P}",
    "listagg_collations": f"SELECT listagg(eventId COLLATE utf8_lcase) AS a,\n"
                          f"  listagg(eventId COLLATE utf8_lcase, ',' COLLATE utf8_lcase) AS b,\n"
                          f"  listagg(eventId COLLATE utf8_binary, ',') AS c {P}",
    # collations lint does not follow (Spark: UTF8_LCASE on both sides): unsure, so passed
    "collations_followed": f"SELECT upper(eventId COLLATE utf8_lcase) AS a,\n"
                           f"  CASE WHEN true THEN eventId COLLATE utf8_lcase ELSE 'a' END AS b,\n"
                           f"  coalesce('a', eventId COLLATE utf8_lcase) AS c {P}\nUNION\n"
                           f"SELECT eventId COLLATE utf8_lcase, eventId COLLATE utf8_lcase,\n"
                           f"  eventId COLLATE utf8_lcase {P}",
    "collations_from_subquery": f"SELECT max(upper(c)) AS u, max_by(c, 1) AS m\n"
                                f"FROM (SELECT eventId COLLATE utf8_lcase AS c {P}) t\nUNION\n"
                                f"SELECT eventId COLLATE utf8_lcase, eventId COLLATE utf8_lcase"
                                f" {P}",
    "merged_collations": f"SELECT coalesce(eventId COLLATE utf8_lcase, 'a') AS d {P}\n"
                         f"WHERE eventId COLLATE utf8_lcase = 'A'",
}


def test_inputs_without_a_common_type_are_flagged_with_sparks_class(tmp_path: Path) -> None:
    cases = {n: ("common-type", sql, f"[{error}]", place)
             for n, (sql, error, place) in INVALID.items()}
    assert misreported(tmp_path, cases, rules={"common-type"}, each=error_with_hint) == {}


def test_messages_name_both_types(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": INVALID["array_intervals"][0]})
    [v] = [v for v in result.violations if v.rule == "common-type"]
    assert "INTERVAL MONTH" in v.message and "INTERVAL DAY" in v.message
    result = lint_files(tmp_path / "u", {"m": INVALID["union_columns"][0]})
    [v] = [v for v in result.violations if v.rule == "common-type"]
    assert "column 2" in v.message and "TIMESTAMP" in v.message and "INT" in v.message


def test_valid_neighbours_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []


def test_unknown_types_settle_nothing(tmp_path: Path) -> None:
    """A ref whose column lint cannot type, a function it does not type: no finding."""
    result = lint_files(tmp_path, {
        "u": "SELECT eventId, some_udf_like(eventId) AS x FROM parsed_events",
        "m": "SELECT coalesce(u.x, 1) AS a, coalesce(reverse(eventId), DATE '2020-01-01') AS b\n"
             "FROM {{ ref('u') }} u"})
    assert [v for v in result.violations if v.rule == "common-type"] == []


def test_positions_are_the_model_files_after_jinja(tmp_path: Path) -> None:
    sql = ("{{ config(materialized='append') }}\n{% set cols = ['eventId'] %}\nSELECT\n"
           "{% for c in cols %}  {{ c }},\n{% endfor %}  coalesce(1, DATE '2020-01-01') AS x\n"
           f"{P}")
    result = lint_files(tmp_path, {"m": sql})
    found = [(v.rule, v.line, v.column) for v in result.violations if v.rule == "common-type"]
    assert found == [("common-type", 5, 15)]  # coalesce, after the loop's tag
