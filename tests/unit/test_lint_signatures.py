"""Calls, operators, literals, ordinals and subquery shapes checked as Spark's analyser checks
them (runner/lint/reading/calls.py, signatures.py, call_values.py, literals.py, clauses.py): what each
rule flags, where (the model file's line and column, after Jinja), with Spark's error class,
and the valid neighbours it leaves alone. tests/spark/test_signatures_vs_spark.py runs every
example through Spark."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint import error_with_hint, lint_errors, lint_files, misreported

RULES = {"function-arguments", "argument-type", "invalid-literal", "query-shape", "window-frame"}
P = "FROM parsed_events"

#: name -> (rule, SQL, Spark's error class, (line, column) of the finding).
INVALID: dict[str, tuple[str, str, str, tuple[int, int]]] = {
    "if_two_args": ("function-arguments", f"SELECT eventId,\n  IF(eventId = 'a', 'x') AS x {P}",
                    "WRONG_NUM_ARGS", (2, 3)),
    "json_length_two_args": ("function-arguments",
                             f"SELECT json_array_length(eventId, 'x') AS x {P}",
                             "WRONG_NUM_ARGS", (1, 8)),
    "named_unsupported": ("function-arguments", f"SELECT upper(str => eventId) AS x {P}",
                          "NAMED_PARAMETERS_NOT_SUPPORTED", (1, 14)),
    "named_unknown": ("function-arguments", f"SELECT mask(eventId, upper => 'Y') AS x {P}",
                      "UNRECOGNIZED_PARAMETER_NAME", (1, 22)),
    "named_then_positional": ("function-arguments", f"SELECT mask(upperChar => 'Y', eventId) "
                              f"AS x {P}", "UNEXPECTED_POSITIONAL_ARGUMENT", (1, 31)),
    "named_twice": ("function-arguments", f"SELECT mask(eventId, digitChar => 'd', digitChar "
                    f"=> 'e') AS x {P}", "DOUBLE_NAMED_ARGUMENT_REFERENCE", (1, 40)),
    "named_and_positional": ("function-arguments", f"SELECT mask(eventId, str => eventId) "
                             f"AS x {P}", "BOTH_POSITIONAL_AND_NAMED", (1, 22)),
    "percentile_column": ("function-arguments",
                          "SELECT percentile_approx(request.latency_ms, request.latency_ms) "
                          f"AS p {P}", "NON_FOLDABLE_INPUT", (1, 46)),
    "lambda_in_upper": ("function-arguments",
                        f"SELECT upper(x -> x) AS x {P}",
                        "INVALID_LAMBDA_FUNCTION_CALL.NON_HIGHER_ORDER_FUNCTION", (1, 14)),
    "lag_without_over": ("function-arguments", f"SELECT eventId, lag(eventId) AS prev {P}",
                         "WINDOW_FUNCTION_WITHOUT_OVER_CLAUSE", (1, 17)),
    "time_function": ("function-arguments", f"SELECT make_time(1, 2, 3) AS t {P}",
                      "UNSUPPORTED_TIME_TYPE", (1, 8)),
    "time_trunc": ("function-arguments", f"SELECT time_trunc('HOUR', `timestamp`) AS t {P}",
                   "UNSUPPORTED_TIME_TYPE", (1, 8)),
    "json_length_int": ("argument-type", f"SELECT json_array_length(2) AS n {P}",
                        "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 26)),
    "upper_array": ("argument-type", f"SELECT upper(errors) AS x {P}",
                    "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 14)),
    "date_add_decimal": ("argument-type", f"SELECT date_add(`timestamp`, 1.5) AS d {P}",
                         "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 30)),
    "int_plus_array": ("argument-type", f"SELECT request.latency_ms + errors AS x {P}",
                       "DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", (1, 8)),
    "negate_array": ("argument-type", f"SELECT -errors AS x {P}",
                     "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 9)),
    "int_minus_interval": ("argument-type", f"SELECT request.latency_ms - INTERVAL '2' DAY AS x {P}",
                           "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 8)),
    "year_plus_day": ("argument-type", f"SELECT INTERVAL '1' YEAR + INTERVAL '1' DAY AS x {P}",
                      "DATATYPE_MISMATCH", (1, 17)),  # the first literal's position
    "month_sum_plus_week": ("argument-type", "SELECT INTERVAL '1' YEAR + INTERVAL '2' MONTH + "
                            f"INTERVAL '3' WEEK AS x {P}", "DATATYPE_MISMATCH", (1, 17)),
    "negated_month_plus_day": ("argument-type",
                               f"SELECT -INTERVAL '1' MONTH + INTERVAL '1' DAY AS x {P}",
                               "DATATYPE_MISMATCH", (1, 18)),
    "negate_binary": ("argument-type", f"SELECT -X'01' AS x {P}",
                      "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 9)),
    "plus_map": ("argument-type", f"SELECT +map(1, 2) AS m {P}",
                 "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 8)),
    "plus_array": ("argument-type", f"SELECT eventId, +array(1) AS a {P}",
                   "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 17)),
    "cast_to_time": ("argument-type", f"SELECT CAST(eventId AS TIME) AS t {P}",
                     "UNSUPPORTED_TIME_TYPE", (1, 13)),
    "struct_by_number": ("argument-type", f"SELECT errors[0][1] AS x {P}",
                         "INVALID_EXTRACT_FIELD_TYPE", (1, 8)),
    "date_add_bigint_product": ("argument-type",
                                f"SELECT date_add(`timestamp`, CAST(1 AS BIGINT) * -1) AS d {P}",
                                "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 35)),
    "date_add_string_product": ("argument-type",
                                f"SELECT date_add(`timestamp`, '1' * -1) AS d {P}",
                                "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 30)),
    "mask_two_characters": ("argument-type", f"SELECT mask(eventId, 'Qa') AS m {P}",
                            "DATATYPE_MISMATCH.INPUT_SIZE_NOT_ONE", (1, 22)),
    "mask_empty": ("argument-type", f"SELECT mask(eventId, 'A', 'w', '') AS m {P}",
                   "DATATYPE_MISMATCH.INPUT_SIZE_NOT_ONE", (1, 32)),
    "ceil_null_scale": ("argument-type", f"SELECT ceil(2.5, NULL) AS c {P}",
                        "NON_FOLDABLE_ARGUMENT", (1, 18)),
    "floor_string_scale": ("argument-type", f"SELECT floor(2.5, 'a') AS f {P}",
                           "NON_FOLDABLE_ARGUMENT", (1, 19)),
    "inline_mixed_array": ("argument-type", f"SELECT inline(array(1, 'a')) {P}",
                           "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 15)),
    "time_bucket_mixed_origin": ("argument-type", "SELECT time_bucket(INTERVAL '1' HOUR, "
                                 "`timestamp`, CAST('2024-01-01' AS TIMESTAMP_NTZ)) AS b "
                                 f"{P}", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 52)),
    "cast_decimal_40": ("argument-type", f"SELECT CAST(eventId AS DECIMAL(40, 40)) AS d {P}",
                        "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION", (1, 13)),
    "to_binary_format": ("argument-type", f"SELECT to_binary(eventId, 'invalidFormat') AS b {P}",
                         "DATATYPE_MISMATCH.INVALID_ARG_VALUE", (1, 27)),
    "some_smallint": ("argument-type", f"SELECT some(CAST(1 AS SMALLINT)) AS s {P}",
                      "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 18)),
    "explode_struct": ("argument-type", f"SELECT explode(named_struct('a', 1)) AS x {P}",
                       "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 16)),
    "any_bigint": ("argument-type", f"SELECT any(CAST(1 AS BIGINT)) AS s {P}",
                   "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 17)),
    "explode_null": ("argument-type", f"SELECT explode(NULL) AS x {P}",
                     "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 16)),
    "get_null": ("argument-type", f"SELECT get(NULL, 0) AS x {P}",
                 "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 12)),
    "mode_null": ("argument-type", f"SELECT mode(request.latency_ms, NULL) AS x {P}",
                  "DATATYPE_MISMATCH.UNEXPECTED_NULL", (1, 33)),
    "inline_struct": ("argument-type", f"SELECT inline(named_struct('a', 1)) AS x {P}",
                      "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 15)),
    "vector_int_array": ("argument-type", f"SELECT vector_norm(array(3, 4), 2.0F) AS x {P}",
                         "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 20)),
    "time_bucket_zero": ("argument-type",
                         f"SELECT time_bucket(INTERVAL '0' SECOND, `timestamp`) AS b {P}",
                         "DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE", (1, 20)),
    "time_bucket_negative": ("argument-type", "SELECT time_bucket(INTERVAL '5' MINUTE - "
                             f"INTERVAL '15' MINUTE, `timestamp`) AS b {P}",
                             "DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE", (1, 20)),
    "regexp_replace_position": ("argument-type",
                                f"SELECT regexp_replace(eventId, 'a', 'b', 0) AS r {P}",
                                "DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE", (1, 42)),
    "pmod_strings": ("argument-type", f"SELECT pmod('1', '1') AS m {P}",
                     "DATATYPE_MISMATCH.BINARY_OP_WRONG_TYPE", (1, 8)),
    "pmod_date": ("argument-type", f"SELECT pmod(CAST(`timestamp` AS DATE), '1') AS m {P}",
                  "DATATYPE_MISMATCH.BINARY_OP_WRONG_TYPE", (1, 8)),
    "json_tuple_int": ("argument-type", f"SELECT json_tuple(eventId, 'a', 1) {P}",
                       "DATATYPE_MISMATCH.NON_STRING_TYPE", (1, 33)),
    "json_tuple_null": ("argument-type", f"SELECT json_tuple('{{\"a\": 1}}', NULL) {P}",
                        "DATATYPE_MISMATCH.NON_STRING_TYPE", (1, 31)),
    "vector_norm_int_degree": ("argument-type",
                               f"SELECT vector_norm(array(CAST(3 AS FLOAT)), 2) AS x {P}",
                               "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 45)),
    "filter_int": ("argument-type", f"SELECT filter(errors, 1) AS x {P}",
                   "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 23)),
    "exists_map": ("argument-type", f"SELECT exists(errors, map('a', true)) AS x {P}",
                   "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 23)),
    "array_sort_array": ("argument-type", f"SELECT array_sort(array(3, 1), array(0)) AS x {P}",
                         "DATATYPE_MISMATCH.UNEXPECTED_RETURN_TYPE", (1, 32)),
    "transform_keys_map": ("argument-type",
                           f"SELECT transform_keys(map('a', 1), map('k', 'v')) AS x {P}",
                           "DATATYPE_MISMATCH.INVALID_MAP_KEY_TYPE", (1, 36)),
    "cast_int_binary": ("argument-type", f"SELECT hex(CAST(request.latency_ms AS BINARY)) AS h {P}",
                        "DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION", (1, 17)),
    "cast_literal_binary": ("argument-type", f"SELECT CAST(-123 AS BINARY) AS b {P}",
                            "DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION", (1, 14)),
    "cast_string_array": ("argument-type", f"SELECT CAST(eventId AS ARRAY<STRING>) AS a {P}",
                          "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION", (1, 13)),
    "cast_string_struct": ("argument-type",
                           f"SELECT CAST(user.country AS STRUCT<s: STRING>) AS s {P}",
                           "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION", (1, 13)),
    "cast_date_int": ("argument-type", f"SELECT CAST(DATE '2020-01-01' AS INT) AS d {P}",
                      "DATATYPE_MISMATCH.CAST_WITH_FUNC_SUGGESTION", (1, 18)),
    "cast_struct_width": ("argument-type",
                          f"SELECT CAST(user AS STRUCT<a: STRING>) AS u {P}",
                          "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION", (1, 13)),
    "order_by_variant": ("argument-type", f"SELECT eventId {P} ORDER BY CAST(eventId AS VARIANT)",
                         "DATATYPE_MISMATCH.INVALID_ORDERING_TYPE", (1, 49)),
    "order_by_map": ("argument-type", f"SELECT eventId {P} ORDER BY map('a', eventId) DESC",
                     "DATATYPE_MISMATCH.INVALID_ORDERING_TYPE", (1, 44)),
    "rows_bigint_bound": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY `timestamp`\n"
                          f"  ROWS BETWEEN CURRENT ROW AND 2147483648 FOLLOWING) AS n {P}",
                          "SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE", (1, 8)),
    "range_string_order": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY eventId\n"
                           f"  RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS n {P}",
                           "SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE", (1, 8)),
    "frame_unbounded_following": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY `timestamp`\n"
                                  f"  ROWS BETWEEN UNBOUNDED FOLLOWING AND 1 FOLLOWING) AS n {P}",
                                  "SPECIFIED_WINDOW_FRAME_INVALID_BOUND", (1, 8)),
    "frame_backwards": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY request.latency_ms\n"
                        f"  RANGE BETWEEN 1 FOLLOWING AND 1 PRECEDING) AS n {P}",
                        "SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON", (1, 8)),
    "range_without_order": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId\n"
                            f"  RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS n {P}",
                            "RANGE_FRAME_WITHOUT_ORDER", (1, 8)),
    "range_two_orders": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY request.latency_ms, eventId\n"
                         f"  RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS n {P}",
                         "RANGE_FRAME_MULTI_ORDER", (1, 8)),
    "range_timestamp_by_number": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY `timestamp`\n"
                                  f"  RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS n {P}",
                                  "RANGE_FRAME_INVALID_TYPE", (1, 8)),
    "range_date_by_seconds": ("window-frame", f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY CAST(`timestamp` AS DATE)"
                              f"\n  RANGE BETWEEN CURRENT ROW AND INTERVAL '1 2:3:4' DAY TO SECOND"
                              f" FOLLOWING) AS n {P}", "RANGE_FRAME_INVALID_TYPE", (1, 8)),
    "date_words": ("invalid-literal", f"SELECT date 'mar 11 2016' AS d {P}",
                   "INVALID_TYPED_LITERAL", (1, 8)),
    "date_no_such_day": ("invalid-literal", f"SELECT date '2016-02-30' AS d {P}",
                         "INVALID_TYPED_LITERAL", (1, 8)),
    "timestamp_hour": ("invalid-literal", f"SELECT timestamp '2016-03-11 25:00:00' AS t {P}",
                       "INVALID_TYPED_LITERAL", (1, 8)),
    "double_range": ("invalid-literal", f"SELECT 1E309 AS n {P}",
                     "INVALID_NUMERIC_LITERAL_RANGE", (1, 8)),
    "decimal_39": ("invalid-literal", f"SELECT 12345678901234567890123456789012345678.9 AS n {P}",
                   "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION", (1, 8)),
    "interval_day_fraction": ("invalid-literal", f"SELECT interval '1.5' day AS i {P}",
                              "INVALID_INTERVAL_FORMAT", (1, 8)),
    "interval_day_range": ("invalid-literal", f"SELECT interval '1-2' day AS i {P}",
                           "INVALID_INTERVAL_FORMAT", (1, 8)),
    "interval_year_month": ("invalid-literal", f"SELECT interval '1 2' year to month AS i {P}",
                            "INVALID_INTERVAL_FORMAT", (1, 8)),
    "interval_string_then_alias": ("invalid-literal", f"SELECT interval '1' fake_unit {P}",
                                   "INVALID_TYPED_LITERAL", (1, 8)),
    "interval_nanoseconds": ("invalid-literal", f"SELECT interval '10' nanoseconds AS i {P}",
                             "INVALID_INTERVAL_FORMAT.INVALID_UNIT", (1, 8)),
    "interval_year_to_second": ("invalid-literal", f"SELECT interval '1' year to second AS i "
                                f"{P}", "INVALID_INTERVAL_FORMAT.UNSUPPORTED_FROM_TO_EXPRESSION",
                                (1, 8)),
    "interval_unit_typo": ("invalid-literal", f"SELECT interval '1 dya' AS i {P}",
                           "INVALID_TYPED_LITERAL", (1, 8)),
    "group_by_position": ("query-shape", f"SELECT eventId {P}\nGROUP BY 2",
                          "GROUP_BY_POS_OUT_OF_RANGE", (2, 10)),
    "order_by_position": ("query-shape", f"SELECT eventId {P} ORDER BY 0",
                          "ORDER_BY_POS_OUT_OF_RANGE", (1, 44)),
    "group_by_aggregate": ("query-shape", f"SELECT eventId, count(*) AS n {P} GROUP BY 1, 2",
                           "GROUP_BY_POS_AGGREGATE", (1, 62)),
    "scalar_two_columns": ("query-shape",
                           f"SELECT (SELECT eventId, `timestamp` {P}) AS x {P}",
                           "SCALAR_SUBQUERY_RETURN_MORE_THAN_ONE_OUTPUT_COLUMN", (1, 16)),
    "in_two_columns": ("query-shape",
                       f"SELECT eventId {P} WHERE eventId IN (SELECT eventId, `timestamp` {P})",
                       "IN_SUBQUERY_LENGTH_MISMATCH", (1, 41)),
    "qualify_no_window": ("query-shape", f"SELECT eventId {P} QUALIFY eventId > 'a'",
                          "QUALIFY_REQUIRES_WINDOW_FUNCTION", (1, 43)),
    # schema_of_*: a constant, non-NULL STRING (probed with constants: NULLs fail first)
    "schema_of_csv_null": ("argument-type", f"SELECT schema_of_csv(NULL) AS s {P}",
                           "DATATYPE_MISMATCH.UNEXPECTED_NULL", (1, 22)),
    "schema_of_xml_int": ("argument-type", f"SELECT schema_of_xml(42) AS s {P}",
                          "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 22)),
    "schema_of_json_column": ("function-arguments", f"SELECT schema_of_json(eventId) AS s {P}",
                              "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT", (1, 23)),
    # to_xml(x): probed with one argument (a NULL options map fails every two-argument call)
    "to_xml_map": ("argument-type", f"SELECT to_xml(map('a', 1)) AS x {P}",
                   "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 15)),
    "mask_without_str": ("function-arguments", f"SELECT mask(lowerChar => 'q') AS m {P}",
                         "REQUIRED_PARAMETER_NOT_FOUND", (1, 8)),
    "make_timestamp_ntz_seven": ("function-arguments", "SELECT make_timestamp_ntz(2021, 7, 11, 6, "
                                 f"30, 45.678, 'CET') AS t {P}", "WRONG_NUM_ARGS", (1, 8)),
    "format_string_zero_index": ("argument-type", f"SELECT format_string('%0$s', eventId) AS s {P}",
                                 "INVALID_PARAMETER_VALUE.ZERO_INDEX", (1, 22)),
    "to_number_separator_after_point": (
        "argument-type", f"SELECT to_number(eventId, '99G999D999G9') AS n {P}",
        "INVALID_FORMAT.THOUSANDS_SEPS_MUST_BEFORE_DEC", (1, 27)),
    "to_number_trailing_separator": ("argument-type", f"SELECT to_number(eventId, '999G') AS n {P}",
                                     "INVALID_FORMAT.CONT_THOUSANDS_SEPS", (1, 27)),
    "mode_string_flag": ("argument-type", f"SELECT mode(eventId, 'true') AS m {P}",
                         "UNEXPECTED_INPUT_TYPE", (1, 22)),
    "uniform_float_seed": ("argument-type", f"SELECT uniform(0, 1, CAST(NULL AS FLOAT)) AS u {P}",
                           "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 27)),
    "try_add_two_interval_kinds": ("argument-type", "SELECT try_add(INTERVAL '2' YEAR, INTERVAL '2' "
                                   f"SECOND) AS t {P}", "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE",
                                   (1, 8)),
    "get_null_string": ("argument-type", f"SELECT get(CAST(NULL AS STRING), 0) AS g {P}",
                        "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 17)),
    # a type check's own refusal (no position named): probed as the position's when the same
    # call with another type there passes
    "approx_top_k_binary": ("argument-type", "SELECT approx_top_k(CAST(eventId AS BINARY), 5) "
                            f"AS t {P}", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
                            (1, 26)),
    "to_avro_int_schema": ("argument-type", f"SELECT to_avro(named_struct('a', 1), 42) AS a {P}",
                           "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT", (1, 38)),
    "aggregate_constant_merge": ("argument-type", "SELECT aggregate(array(1, 2), array(), "
                                 f"array('a')) AS a {P}",
                                 "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", (1, 40)),
    # the tuple sketches' lgNomEntries (4 to 26) and mode (sum, min, max, alwaysone)
    "sketch_lg_out_of_range": ("argument-type", "SELECT tuple_sketch_agg_double(eventId, 1.0D, "
                               f"27) AS s {P}", "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT",
                               (1, 47)),
    "sketch_lg_null": ("argument-type", "SELECT tuple_union_agg_double(CAST(NULL AS BINARY), "
                       f"CAST(NULL AS INT)) AS s {P}", "DATATYPE_MISMATCH.UNEXPECTED_NULL",
                       (1, 53)),
    "sketch_lg_no_int": ("argument-type", "SELECT tuple_sketch_agg_double(eventId, 1.0D, "
                         f"'fifteen') AS s {P}", "CAST_INVALID_INPUT", (1, 47)),
    "sketch_mode_column": ("argument-type", "SELECT tuple_sketch_agg_double(eventId, 1.0D, 12, "
                           f"eventId) AS s {P}", "DATATYPE_MISMATCH.NON_FOLDABLE_INPUT", (1, 51)),
    "sketch_mode_unknown": ("argument-type", "SELECT tuple_sketch_agg_integer(eventId, 1, 12, "
                            f"'median') AS s {P}",
                            "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT", (1, 49)),
}

#: Valid neighbours of every finding above (each analysed by Spark too).
VALID: dict[str, str] = {
    "to_binary_formats": f"SELECT to_binary(eventId, 'HEX') AS h, to_binary(eventId, NULL) AS n {P}",
    "cast_decimal_38": f"SELECT CAST(eventId AS DECIMAL(38, 38)) AS d {P}",
    "time_bucket_same_origin": "SELECT time_bucket(INTERVAL '1' HOUR, `timestamp`, "
                               f"CAST('2024-01-01' AS TIMESTAMP)) AS b {P}",
    "inline_structs": f"SELECT inline(array(struct(1 AS a), struct(2 AS a))) {P}",
    "ceil_floor_int_scale": f"SELECT floor(2.5, -3) AS f, ceiling(3.1411, 3) AS c {P}",
    "mask_null_character": f"SELECT mask(eventId, 'A', NULL, 'd', 'o') AS m {P}",
    "month_sum_minus_month": "SELECT INTERVAL '1' YEAR + INTERVAL '2' MONTH - INTERVAL '3' "
                             f"MONTH AS x {P}",
    "negated_day_plus_hour": f"SELECT -INTERVAL '1' DAY + INTERVAL '1' HOUR AS x {P}",
    "date_add_int_product": f"SELECT date_add(`timestamp`, 1 * -1) AS d {P}",
    "if_three_args": f"SELECT IF(eventId = 'a', 'x', 'y') AS x, nvl(eventId, 'x') AS y {P}",
    "variadic": f"SELECT coalesce(eventId, 'x') AS a, concat(eventId, 1, 'x') AS b,\n"
                f"  count(eventId, user.country) OVER () AS c, greatest(1, 2, 3, 4, 5, 6, 7) AS g"
                f" {P}",
    "named_args": f"SELECT mask(eventId, upperChar => 'Y') AS m,\n"
                  f"  mask(eventId, 'Y', 'y') AS n {P}",
    "percentile_literal": "SELECT user.country AS c,\n"
                          "  percentile_approx(request.latency_ms, 0.5) AS p,\n"
                          "  percentile_approx(request.latency_ms, array(0.25, 0.75), 100) AS q\n"
                          f"{P} GROUP BY user.country",
    "lambdas": f"SELECT transform(errors, e -> upper(e.errorCode)) AS codes,\n"
               f"  aggregate(errors, 0, (acc, e) -> acc + 1) AS n,\n"
               f"  exists(errors, e -> e.severity = 'high') AS bad {P}",
    "string_literals_coerce": f"SELECT json_array_length('[1, 2]') AS n, upper(1) AS u,\n"
                              f"  'a' - date'2020-01-01' AS d, date_add(`timestamp`, 1) AS t,\n"
                              f"  date_add(`timestamp`, request.latency_ms) AS t2 {P}",
    "operators": f"SELECT request.latency_ms + 1.5 AS a, eventId || 'x' AS b,\n"
                 f"  `timestamp` - INTERVAL '1' DAY AS c, -request.latency_ms AS d,\n"
                 f"  NOT (eventId = 'a') AS e, ~request.status_code AS f {P}",
    "struct_by_name": f"SELECT errors[0]['errorCode'] AS a, errors[0].severity AS b,\n"
                      f"  user['country'] AS c {P}",
    "aggregates_by_kind": "SELECT user.country AS c, bool_and(request.latency_ms > 1) AS a,\n"
                          "  every(request.latency_ms > 1) AS b, any(request.latency_ms > 1) AS d,"
                          "\n  some(request.latency_ms > 1) AS e, bool_or(request.latency_ms > 1)"
                          f" AS f\n{P} GROUP BY user.country",
    "ordered_set_over": "SELECT eventId, percentile_cont(0.5) WITHIN GROUP (ORDER BY "
                        f"request.latency_ms) OVER () AS p {P}",
    "quantifiers": f"SELECT eventId {P} WHERE eventId LIKE ANY ('a%', 'b%')\n"
                   "  AND eventId NOT IN ('a', 'b')",
    "special_syntax": f"SELECT CAST(request.latency_ms AS DECIMAL(10, 2)) AS d,\n"
                      f"  trim(BOTH 'x' FROM eventId) AS t, EXTRACT(YEAR FROM `timestamp`) AS y,\n"
                      f"  substring(eventId FROM 1 FOR 2) AS s, position('a' IN eventId) AS p {P}",
    "distinct_count": f"SELECT count(DISTINCT eventId, user.country) AS c {P}",
    "typed_literals": "SELECT date '2016-03-11' AS a, date '2016' AS b, date '2016-3-1 xyz' AS c,\n"
                      "  date '+2016-02-03' AS d, timestamp '2016-03-11 10:00:00 UTC' AS e,\n"
                      "  timestamp '2016' AS f, timestamp_ntz '2016-03-11 10:00' AS g,\n"
                      f"  timestamp '2016-03-11T10' AS h, date '2016-02-29' AS i {P}",
    "number_literals": "SELECT -128Y AS a, - 128Y AS b, -32768S AS c, -9223372036854775808L AS d,"
                       "\n  127Y AS e, 2147483648 AS f, 9223372036854775808 AS g,\n"
                       "  99999999999999999999999999999999999999 AS h, 1E308 AS i, 1E-400 AS j,\n"
                       f"  1234567890123456789012345678901234567.8BD AS k, 1.5BD AS l {P}",
    "interval_literals": "SELECT interval '1' day AS a, interval '1.5' second AS b,\n"
                         "  interval '1 day 2 hours' AS c, interval '1-2' year to month AS d,\n"
                         "  interval '1 10:00:00' day to second AS e, interval 1 day AS f,\n"
                         f"  interval -'1' day AS g, interval 3 days 2 hours AS h {P}",
    "positions": f"SELECT eventId, count(*) AS n {P} GROUP BY 1 ORDER BY 2 DESC, 1 + 1",
    "star_positions": f"SELECT * {P} ORDER BY 5",
    "subquery_shapes": f"SELECT (SELECT max(eventId) {P}) AS m {P}\n"
                       f"WHERE (eventId, `timestamp`) IN (SELECT eventId, `timestamp` {P})\n"
                       f"  AND EXISTS (SELECT eventId, `timestamp` {P})",
    "qualify_windows": f"SELECT eventId, row_number() OVER (ORDER BY `timestamp`) AS rn {P}\n"
                       f"QUALIFY rn = 1",
    "qualify_inline": f"SELECT eventId {P}\n"
                      "QUALIFY row_number() OVER (PARTITION BY eventId ORDER BY `timestamp`) = 1",
    "lateral_view": "SELECT a.eventId, err.errorCode AS code FROM parsed_events AS a\n"
                    "LATERAL VIEW explode(errors) e AS err",
    "values_alias": "SELECT v.a FROM VALUES (1, 2) AS v(a, b)",
    "unit_forms": f"SELECT DATE_ADD(DAY, 1, `timestamp`) AS a,\n"
                  f"  DATEDIFF(MONTH, `timestamp`, `timestamp`) AS b {P}",
    "overloads": "SELECT make_timestamp(2021, 07, 11, 6, 30, 45.678) AS a,\n"
                 f"  make_timestamp(2021, 7, 11, 6, 30, 45.678, 'CET') AS b {P}",
    # a generator's columns: Spark counts positions its own way (lint does not count them)
    "generator_positions": "SELECT stack(2, 'first', count(*), 'second', CAST(0 AS BIGINT))"
                           f" AS (x1, x2), id\nFROM (SELECT 1 AS id {P}) AS t GROUP BY 2",
    "windows_with_over": f"SELECT eventId, lag(eventId) OVER (ORDER BY `timestamp`) AS a,\n"
                         "  nth_value(eventId, 2) IGNORE NULLS OVER (ORDER BY `timestamp`) AS b,\n"
                         "  1 + size(map(1, 2)) AS c, +1 AS d, 2 +array_size(array(1)) AS e\n"
                         f"{P}",
    "time_of_day": f"SELECT TIME '12:00:00' AS t, current_time() AS c, hour(`timestamp`) AS h,\n"
                   f"  date_trunc('HOUR', `timestamp`) AS d {P}",
    "interval_arithmetic": f"SELECT `timestamp` + INTERVAL '1 day 2 hours' AS a,\n"
                           f"  INTERVAL '1' MONTH + INTERVAL '2' YEAR AS b,\n"
                           f"  `timestamp` - INTERVAL '1-2' YEAR TO MONTH AS c {P}",
    "interval_sign_space": f"SELECT INTERVAL '-\t 1' DAY AS a {P}",
    "interval_string_alias": f"SELECT INTERVAL '1 day' d, INTERVAL '3' WEEKS AS w {P}",
    "casts_ansi_takes": "SELECT CAST(1 AS BOOLEAN) AS a, CAST(`timestamp` AS BIGINT) AS b,\n"
                        "  CAST(1.5 AS TIMESTAMP) AS c, CAST(errors AS STRING) AS d,\n"
                        f"  CAST(NULL AS ARRAY<INT>) AS e, CAST(eventId AS BINARY) AS f {P}",
    "casts_ansi_takes_too": "SELECT CAST(array(1) AS ARRAY<STRING>) AS g,\n"
                            "  CAST(true AS DECIMAL(3, 1)) AS h,\n"
                            "  CAST(INTERVAL '1' DAY AS BIGINT) AS i, CAST(2 AS INTERVAL DAY) AS j,\n"
                            "  CAST(user AS STRUCT<a: STRING, b: BINARY>) AS k,\n"
                            "  CAST(DATE '2020-01-01' AS TIMESTAMP_NTZ) AS l, CAST(-1 AS DOUBLE) AS m"
                            f"\n{P}",
    "function_arguments": f"SELECT filter(errors, true) AS a, exists(errors, NULL) AS b,\n"
                          f"  array_sort(array(2, 1), (x, y) -> 0) AS c,\n"
                          f"  transform_keys(map('a', 1), (k, v) -> upper(k)) AS d,\n"
                          f"  explode(array(1, 2)) AS e, date_add(`timestamp`, 1 * -1) AS f {P}",
    "orderable": f"SELECT eventId {P} ORDER BY array(1), named_struct('a', eventId), errors",
    "frames": f"SELECT count(*) OVER (PARTITION BY eventId ORDER BY `timestamp`\n"
              "  RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) AS a,\n"
              "  sum(request.latency_ms) OVER (ORDER BY request.latency_ms\n"
              "    RANGE BETWEEN 10 PRECEDING AND 5 FOLLOWING) AS b,\n"
              "  count(*) OVER (ORDER BY CAST(`timestamp` AS DATE) RANGE 1 PRECEDING) AS c,\n"
              "  count(*) OVER (ORDER BY CAST(`timestamp` AS DATE)\n"
              "    RANGE BETWEEN INTERVAL '5' DAY PRECEDING AND CURRENT ROW) AS g,\n"
              "  count(*) OVER (ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS d,\n"
              "  count(*) OVER (ORDER BY eventId, `timestamp` ROWS UNBOUNDED PRECEDING) AS e,\n"
              "  count(*) OVER (ORDER BY CAST(request.latency_ms AS BIGINT)\n"
              f"    RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS f {P}",
    "positive_constants": f"SELECT time_bucket(INTERVAL '15' MINUTE, `timestamp`) AS a,\n"
                          "  time_bucket(INTERVAL '1' MONTH - INTERVAL '0' MONTH, `timestamp`) AS b,"
                          f"\n  regexp_replace(eventId, 'a', 'b', 1) AS c {P}",
    "pmod_numbers": f"SELECT pmod(request.latency_ms, 7) AS a, pmod('10', 3) AS b,\n"
                    f"  pmod(1.5, 2) AS c {P}",
    "json_tuple_strings": f"SELECT json_tuple(eventId, 'a', 'b') {P}",
    "schema_of_constants": f"SELECT schema_of_csv('1,abc') AS a,\n"
                           "  schema_of_json('{\"a\": 1}', map('allowNumericLeadingZeros', 'true'))"
                           f" AS b, schema_of_xml('<p><a>1</a></p>') AS c {P}",
    "to_xml_struct": f"SELECT to_xml(named_struct('a', 1)) AS x, to_xml(struct(eventId), "
                     f"map('indent', '')) AS y {P}",
    "mask_named_with_str": f"SELECT mask(eventId, lowerChar => 'q') AS a, mask(str => eventId) "
                           f"AS b {P}",
    "make_timestamp_ntz_six": f"SELECT make_timestamp_ntz(2021, 7, 11, 6, 30, 45.678) AS t {P}",
    "format_string_first_index": f"SELECT format_string('%1$s %2$s', eventId, 1) AS s,\n"
                                 f"  printf('%s%%0', eventId) AS p {P}",
    "to_number_formats": f"SELECT to_number(eventId, '00,000.9MI') AS a,\n"
                         f"  to_number(eventId, '$99.99') AS b, try_to_number(eventId, 'S999G999') "
                         f"AS c {P}",
    "try_add_operands": f"SELECT try_add(1, '1') AS a, try_add(DATE'2021-01-01', "
                        "INTERVAL '2' SECOND) AS b,\n  try_add(INTERVAL '2' YEAR, INTERVAL '1' "
                        f"MONTH) AS c, try_subtract(`timestamp`, INTERVAL '1' DAY) AS d {P}",
    "sketch_parameters": "SELECT tuple_sketch_agg_double(eventId, 1.0D, 4, 'MAX') AS a,\n"
                         "  tuple_sketch_agg_integer(eventId, 1, '26', 'alwaysone') AS b,\n"
                         f"  tuple_sketch_agg_double(eventId, 1.0D) AS c {P}",
    "approx_top_k_items": f"SELECT approx_top_k(eventId, 5) AS a, approx_top_k(`timestamp`) AS b "
                          f"{P}",
    "aggregate_merge_types": f"SELECT aggregate(array(1, 2), 0, 1) AS a,\n"
                             "  reduce(array(1), array('a'), array('b')) AS b,\n"
                             f"  aggregate(array(1, 2), 0L, (acc, x) -> acc + x) AS c {P}",
    "typed_null_arguments": f"SELECT get(CAST(NULL AS ARRAY<INT>), 0) AS a,\n"
                            f"  uniform(0, 1, 42) AS b, upper(CAST(NULL AS STRING)) AS c {P}",
    "arrays_cast_or_typed": f"SELECT array_join(array(1, 2), ',') AS a,\n"
                            f"  vector_norm(array(CAST(3 AS FLOAT)), 2.0F) AS b,\n"
                            f"  coalesce(NULL, eventId) AS c, upper(NULL) AS d, size(NULL) AS e {P}",
}


def test_invalid_sql_is_flagged_where_it_is_with_sparks_class(tmp_path: Path) -> None:
    assert misreported(tmp_path, INVALID, rules=RULES, each=error_with_hint) == {}


def test_valid_neighbours_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []


def test_positions_are_the_model_files_after_jinja(tmp_path: Path) -> None:
    sql = ("{{ config(materialized='append') }}\n{% set cols = ['eventId'] %}\nSELECT\n"
           "{% for c in cols %}  {{ c }},\n{% endfor %}  IF({{ cols[0] }} = 'a', 'x') AS x\n"
           f"{P}")
    result = lint_files(tmp_path, {"m": sql})
    found = [(v.rule, v.line, v.column) for v in result.violations if v.rule in RULES]
    assert found == [("function-arguments", 5, 15)]  # IF, after the loop's tag
