"""Query shapes Spark's analyser and AST builder refuse (runner/lint/checks/recursive_cte.py,
ast_builder.py, aggregate_calls.py, grouping.py, generators.py, format_options.py, the
additions to clauses.py and literals.py): what each rule flags, where (the model file's line and column),
with Spark's error class, and the valid neighbours it leaves alone. The cases follow Spark's
rules (``ResolveWithCTE``, ``CheckAnalysis``, ``AstBuilder``), not the corpus's models."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint import error_with_hint, lint_errors, misreported

P = "FROM parsed_events"
R = "WITH RECURSIVE r(n) AS "

#: name -> (rule, SQL, Spark's error class, (line, column) of the finding).
INVALID: dict[str, tuple[str, str, str, tuple[int, int]]] = {
    "rcte_no_union": ("recursive-cte", f"{R}(SELECT n + 1 FROM r WHERE n < 9)\nSELECT * FROM r",
                      "INVALID_RECURSIVE_CTE", (1, 16)),
    "rcte_anchor_reads_itself": ("recursive-cte",
                                 f"{R}(SELECT n FROM r UNION ALL SELECT 1 {P})\nSELECT * FROM r",
                                 "INVALID_RECURSIVE_CTE", (1, 39)),
    "rcte_intersect": ("recursive-cte",
                       f"{R}(SELECT 1 {P} INTERSECT SELECT n + 1 FROM r)\nSELECT * FROM r",
                       "INVALID_RECURSIVE_CTE", (1, 16)),
    "rcte_order_by_union": ("recursive-cte",
                            f"{R}(SELECT 1 {P} UNION ALL SELECT n + 1 FROM r ORDER BY 1)\n"
                            "SELECT * FROM r", "INVALID_RECURSIVE_CTE", (1, 16)),
    "rcte_union_distinct": ("recursive-cte",
                            f"{R}(SELECT 1 {P}\n  UNION SELECT n + 1 FROM r) SELECT * FROM r",
                            "UNION_NOT_SUPPORTED_IN_RECURSIVE_CTE", (2, 27)),
    "rcte_aggregate": ("recursive-cte",
                       f"{R}(SELECT 1 {P} UNION ALL\n  SELECT max(n) FROM r) SELECT * FROM r",
                       "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 22)),
    "rcte_group_by": ("recursive-cte",
                      f"{R}(SELECT 1 {P} UNION ALL\n  SELECT n + 1 FROM r GROUP BY n)\n"
                      "SELECT * FROM r", "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 21)),
    "rcte_window": ("recursive-cte",
                    f"{R}(SELECT 1L {P} UNION ALL\n  SELECT sum(n) OVER (ORDER BY n) FROM r)\n"
                    "SELECT * FROM r", "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 40)),
    "rcte_sorted": ("recursive-cte",
                    f"{R}(SELECT 1 {P} UNION ALL\n  (SELECT n + 1 FROM r ORDER BY n))\n"
                    "SELECT * FROM r", "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 22)),
    "rcte_aggregate_subquery": ("recursive-cte",
                                f"{R}(SELECT 1 {P} UNION ALL\n  SELECT (SELECT max(n) FROM r) {P})"
                                "\nSELECT * FROM r", "INVALID_RECURSIVE_REFERENCE.PLACE",
                                (2, 30)),
    "rcte_left_join_right": ("recursive-cte",
                             f"{R}(SELECT 1 {P} UNION ALL\n  SELECT n + 1 {P} AS t LEFT JOIN r"
                             " ON r.n = 1) SELECT * FROM r",
                             "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 50)),
    "rcte_right_join_left": ("recursive-cte",
                             f"{R}(SELECT 1 {P} UNION ALL\n  SELECT n + 1 FROM r RIGHT JOIN "
                             "parsed_events AS t ON r.n = 1) SELECT * FROM r",
                             "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 21)),
    "rcte_full_join": ("recursive-cte",
                       f"{R}(SELECT 1 {P} UNION ALL\n  SELECT n + 1 FROM r FULL JOIN "
                       "parsed_events AS t ON r.n = 1) SELECT * FROM r",
                       "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 21)),
    "rcte_anti_join": ("recursive-cte",
                       f"{R}(SELECT 1 {P} UNION ALL\n  SELECT 1 {P} AS t LEFT ANTI JOIN r"
                       " ON r.n = 1) SELECT * FROM r",
                       "INVALID_RECURSIVE_REFERENCE.PLACE", (2, 51)),
    "rollup_empty_set": ("syntax", f"SELECT eventId, count(*) AS n {P}\n"
                         "GROUP BY ROLLUP (eventId, ())", "_LEGACY_ERROR_TEMP_0051", (2, 18)),
    "cube_empty_set": ("syntax", f"SELECT eventId, count(*) AS n {P}\n"
                       "GROUP BY CUBE (eventId, ())", "_LEGACY_ERROR_TEMP_0051", (2, 16)),
    "like_any_empty": ("syntax", f"SELECT eventId {P}\nWHERE eventId LIKE ANY ()",
                       "_LEGACY_ERROR_TEMP_0064", (2, 7)),
    "frame_bound_function": ("syntax", "SELECT count(eventId) OVER (ORDER BY `timestamp`\n"
                             "  RANGE BETWEEN CURRENT ROW AND current_date() FOLLOWING) AS n "
                             f"{P}", "_LEGACY_ERROR_TEMP_0064", (2, 33)),
    "frame_bound_units": ("syntax", "SELECT count(eventId) OVER (ORDER BY `timestamp`\n"
                          "  RANGE BETWEEN CURRENT ROW AND INTERVAL '23' DAYS + INTERVAL '4' "
                          f"HOURS FOLLOWING) AS n {P}", "_LEGACY_ERROR_TEMP_0064", (2, 42)),
    "interval_mixed": ("invalid-literal", f"SELECT INTERVAL '-1 month 1 day' AS i {P}",
                       "_LEGACY_ERROR_TEMP_0029", (1, 8)),
    "interval_day_range": ("invalid-literal",
                           f"SELECT INTERVAL '106751992 04' DAY TO HOUR AS i {P}",
                           "_LEGACY_ERROR_TEMP_0063", (1, 8)),
    "within_group_round": ("aggregate-call", "SELECT round(request.latency_ms, 0)\n"
                           f"  WITHIN GROUP (ORDER BY request.latency_ms) AS r {P}",
                           "INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX", (1, 8)),
    "percentile_cont_alone": ("aggregate-call", f"SELECT percentile_cont(0.5) AS p {P}",
                              "INVALID_WITHIN_GROUP_EXPRESSION.WITHIN_GROUP_MISSING", (1, 8)),
    "mode_ordered_twice": ("aggregate-call", "SELECT mode(eventId) WITHIN GROUP (ORDER BY "
                           f"eventId) AS m {P}",
                           "INVALID_WITHIN_GROUP_EXPRESSION.WRONG_NUM_ORDERINGS", (1, 8)),
    "mode_distinct": ("aggregate-call", f"SELECT mode(DISTINCT eventId) AS m {P}",
                      "INVALID_WITHIN_GROUP_EXPRESSION.DISTINCT_UNSUPPORTED", (1, 8)),
    "listagg_distinct_order": ("aggregate-call", "SELECT listagg(DISTINCT eventId, ',')\n"
                               f"  WITHIN GROUP (ORDER BY user.country) AS l {P}",
                               "INVALID_WITHIN_GROUP_EXPRESSION.MISMATCH_WITH_DISTINCT_INPUT",
                               (1, 25)),
    "listagg_distinct_double": ("aggregate-call", "SELECT listagg(DISTINCT d, ',') WITHIN GROUP"
                                f" (ORDER BY d) AS l\nFROM (SELECT CAST(request.latency_ms AS "
                                f"DOUBLE) AS d {P}) AS t",
                                "INVALID_WITHIN_GROUP_EXPRESSION.MISMATCH_WITH_DISTINCT_INPUT"
                                "_UNSAFE_CAST", (1, 25)),
    "distinct_over_window": ("aggregate-call", f"SELECT count(DISTINCT eventId) OVER () AS n {P}",
                             "DISTINCT_WINDOW_FUNCTION_UNSUPPORTED", (1, 8)),
    "median_ordered_window": ("aggregate-call", "SELECT median(request.latency_ms)\n"
                              "  OVER (PARTITION BY eventId ORDER BY `timestamp`) AS m "
                              f"{P}", "INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC", (1, 8)),
    "window_not_defined": ("aggregate-call", f"SELECT sum(request.latency_ms) OVER w AS s {P}",
                           "MISSING_WINDOW_SPECIFICATION", (1, 8)),
    "filter_aggregate": ("aggregate-call", "SELECT sum(request.latency_ms)\n"
                         f"  FILTER (WHERE max(request.status_code) > 1) AS s {P}",
                         "INVALID_AGGREGATE_FILTER.CONTAINS_AGGREGATE", (2, 17)),
    "filter_string": ("aggregate-call", f"SELECT count(*) FILTER (WHERE eventId) AS n {P}",
                      "INVALID_AGGREGATE_FILTER.NOT_BOOLEAN", (1, 31)),
    "filter_random": ("aggregate-call", f"SELECT count(*) FILTER (WHERE rand() > 0.5) AS n {P}",
                      "INVALID_AGGREGATE_FILTER.NON_DETERMINISTIC", (1, 31)),
    "pivot_column_value": ("aggregate-call", "SELECT * FROM (SELECT eventId, user.country AS c"
                           f" {P})\n PIVOT (count(eventId) FOR c IN (eventId, 'b'))",
                           "NON_LITERAL_PIVOT_VALUES", (2, 34)),
    "count_table_star": ("aggregate-call", f"SELECT count(p.*) AS n {P} AS p",
                         "INVALID_USAGE_OF_STAR_WITH_TABLE_IDENTIFIER_IN_COUNT", (1, 14)),
    "pivot_nested": ("aggregate-call", "SELECT * FROM (SELECT eventId, user.country AS c,\n"
                     f"  request.latency_ms AS l {P}) PIVOT (sum(avg(l)) FOR c IN ('a', 'b'))",
                     "NESTED_AGGREGATE_FUNCTION", (2, 58)),
    "grouping_without_sets": ("grouping-shape", "SELECT eventId, grouping(eventId) AS g "
                              f"{P}\nGROUP BY eventId", "UNSUPPORTED_GROUPING_EXPRESSION",
                              (1, 17)),
    "grouping_id_having_empty_sets": ("grouping-shape", f"SELECT count(*) AS c {P}\n"
                                      "GROUP BY GROUPING SETS ((), ()) ORDER BY grouping_id()",
                                      "UNSUPPORTED_GROUPING_EXPRESSION", (2, 42)),
    "group_by_all_mixed": ("missing-aggregation", "SELECT request.latency_ms + count(*) AS n "
                           f"{P}\nGROUP BY ALL", "UNRESOLVED_ALL_IN_GROUP_BY", (1, 8)),
    "star_group_by_position": ("grouping-shape", f"SELECT * FROM (SELECT eventId {P}) AS t\n"
                               "GROUP BY eventId, 1", "STAR_GROUP_BY_POS", (2, 19)),
    "order_by_aggregate_windows": ("grouping-shape", "SELECT eventId, count(*) AS n,\n"
                                   "  sum(count(*)) OVER () AS total "
                                   f"{P} GROUP BY eventId\nORDER BY count(*)",
                                   "UNSUPPORTED_EXPR_FOR_OPERATOR", (3, 10)),
    "star_order_zero": ("query-shape", f"SELECT * FROM (SELECT eventId {P}) AS t ORDER BY 0",
                        "ORDER_BY_POS_OUT_OF_RANGE", (1, 65)),
    "star_order_past": ("query-shape", "SELECT * FROM (SELECT eventId, `timestamp` "
                        f"{P}) AS t\nORDER BY 3", "ORDER_BY_POS_OUT_OF_RANGE", (2, 10)),
    "generator_nested": ("generator-use", f"SELECT 1 + explode(array(1, 2)) AS s {P}",
                         "UNSUPPORTED_GENERATOR.NESTED_IN_EXPRESSIONS", (1, 12)),
    "generator_in_where": ("generator-use", f"SELECT eventId {P}\n"
                           "WHERE explode(array(1, 2)) = 2",
                           "UNSUPPORTED_GENERATOR.OUTSIDE_SELECT", (2, 7)),
    "multi_alias_literal": ("generator-use", f"SELECT 1 AS (pos, val) {P}",
                            "MULTI_ALIAS_WITHOUT_GENERATOR", (1, 8)),
    "posexplode_one_alias": ("generator-use", f"SELECT posexplode(errors) AS e {P}",
                             "UDTF_ALIAS_NUMBER_MISMATCH", (1, 8)),
    "options_struct": ("format-options", "SELECT from_json(eventId, 'a INT',\n"
                       f"  struct('PERMISSIVE' AS mode)) AS j {P}",
                       "INVALID_OPTIONS.NON_MAP_FUNCTION", (2, 3)),
    "options_number": ("format-options", "SELECT to_json(user, map('pretty', 1)) AS j "
                       f"{P}", "INVALID_OPTIONS.NON_STRING_TYPE", (1, 22)),
    "schema_number": ("format-options", f"SELECT from_csv(eventId, 1) AS c {P}",
                      "INVALID_SCHEMA.NON_STRING_LITERAL", (1, 26)),
    "csv_schema_array": ("format-options", f"SELECT from_csv(eventId, 'array<int>') AS c {P}",
                         "INVALID_SCHEMA.NON_STRUCT_TYPE", (1, 26)),
    "json_schema_unknown_type": ("format-options", f"SELECT from_json(eventId, 'a InvalidType')"
                                 f" AS c {P}", "PARSE_SYNTAX_ERROR", (1, 27)),
    "xml_schema_unknown_element": ("format-options", "SELECT from_xml(eventId, 'array<foo>') "
                                   f"AS c {P}", "UNSUPPORTED_DATATYPE", (1, 26)),
    "extract_outside_interval_range": ("query-shape", "SELECT date_part('DAY', INTERVAL '2-1' "
                                       f"YEAR TO MONTH) AS d {P}", "INVALID_EXTRACT_FIELD",
                                       (1, 8)),
    "star_alias": ("query-shape", f"SELECT p.* AS e {P} AS p", "INVALID_USAGE_OF_STAR_OR_REGEX",
                   (1, 8)),
    "union_widths": ("query-shape", f"SELECT eventId {P}\n"
                     f"UNION ALL SELECT eventId, user.country AS c {P}",
                     "NUM_COLUMNS_MISMATCH", (2, 18)),
    "limit_random": ("query-shape", f"SELECT eventId {P} LIMIT CAST(rand() * 10 AS INT)",
                     "INVALID_LIMIT_LIKE_EXPRESSION.IS_UNFOLDABLE", (1, 46)),
    "order_by_exists": ("query-shape", f"SELECT eventId {P}\nORDER BY EXISTS "
                        f"(SELECT 1 {P} AS e WHERE e.eventId = 'a')",
                        "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.UNSUPPORTED_IN_EXISTS_SUBQUERY",
                        (2, 25)),
}

#: Valid neighbours of every finding above (Spark accepts each).
VALID: dict[str, str] = {
    "rcte_plain": f"{R}(SELECT 1 {P} UNION ALL SELECT n + 1 FROM r WHERE n < 9)\n"
                  "SELECT n FROM r ORDER BY n LIMIT 10",
    "rcte_not_recursive": "WITH RECURSIVE r(n) AS (SELECT 1 FROM parsed_events UNION\n"
                          "  SELECT 2 FROM parsed_events ORDER BY 1), s AS (SELECT count(*) AS c"
                          " FROM r)\nSELECT c FROM s",
    "rcte_joins": f"{R}(SELECT 1 {P} UNION ALL\n  SELECT r.n + 1 FROM r LEFT JOIN parsed_events"
                  " AS t ON r.n = 1\n  JOIN r AS r2 ON r2.n = r.n WHERE r.n < 9)\n"
                  "SELECT n FROM r",
    "rcte_right_join": f"{R}(SELECT 1 {P} UNION ALL\n  SELECT r.n + 1 {P} AS t RIGHT JOIN r"
                       " ON r.n = 1 WHERE r.n < 9) SELECT n FROM r",
    "rcte_semi_join": f"{R}(SELECT 1 {P} UNION ALL\n  SELECT n + 1 FROM r LEFT SEMI JOIN "
                      f"parsed_events AS t ON r.n = 1) SELECT n FROM r",
    "rcte_subqueries": f"{R}(SELECT 1 {P} UNION ALL\n  SELECT (SELECT n + 1 FROM r WHERE n < 5)"
                       f" {P}) SELECT n FROM r LIMIT 5",
    "rcte_aggregate_outside": f"{R}(SELECT 1 {P} UNION ALL SELECT n + 1 FROM r WHERE n < 9),\n"
                              "  s AS (SELECT sum(n) AS total FROM r) SELECT total FROM s",
    "rcte_aggregate_other": f"{R}(SELECT 1L {P} UNION ALL\n  SELECT n + c FROM r CROSS JOIN"
                            f" (SELECT count(*) AS c {P}) AS t WHERE n < 9) SELECT n FROM r",
    "grouping_sets_empty": f"SELECT eventId, count(*) AS n {P}\n"
                           "GROUP BY GROUPING SETS ((eventId), ())",
    "rollup_cube": f"SELECT eventId, count(*) AS n {P}\nGROUP BY ROLLUP (eventId, (eventId))",
    "like_any": f"SELECT eventId {P}\nWHERE eventId LIKE ANY ('a%', 'b%')",
    "frame_bounds": "SELECT count(eventId) OVER (ORDER BY `timestamp`\n"
                    "  RANGE BETWEEN INTERVAL '1' DAY PRECEDING AND INTERVAL '2' DAY FOLLOWING)"
                    " AS a,\n  count(eventId) OVER (ORDER BY request.latency_ms\n"
                    f"  ROWS BETWEEN 2 PRECEDING AND 1 + 1 FOLLOWING) AS b {P}",
    "interval_parts": "SELECT INTERVAL '1 day 2 hours' AS a, INTERVAL '1 year 2 months' AS b,\n"
                      f"  INTERVAL '106751991 04' DAY TO HOUR AS c {P}",
    "ordered_set_calls": "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY request.latency_ms)"
                         " AS p,\n  mode(eventId) AS m, mode() WITHIN GROUP (ORDER BY eventId) AS"
                         " m2,\n  listagg(DISTINCT eventId, ',') WITHIN GROUP (ORDER BY eventId) "
                         f"AS l {P}",
    "listagg_distinct_types": "SELECT listagg(DISTINCT n, ',') WITHIN GROUP (ORDER BY n) AS a,\n"
                              "  listagg(DISTINCT d, ',') WITHIN GROUP (ORDER BY d) AS b\n"
                              "FROM (SELECT request.latency_ms AS n, CAST(`timestamp` AS DATE) AS"
                              f" d {P}) AS t",
    "aggregate_windows": "SELECT median(request.latency_ms) OVER (PARTITION BY eventId) AS m,\n"
                         "  mode() WITHIN GROUP (ORDER BY eventId)\n"
                         "    OVER (PARTITION BY user.country ORDER BY `timestamp`) AS m2,\n"
                         "  sum(request.latency_ms) OVER w AS s,\n"
                         "  count(eventId) OVER (PARTITION BY user.country) AS c\n"
                         f"{P} WINDOW w AS (PARTITION BY eventId)",
    "aggregate_filters": "SELECT count(*) FILTER (WHERE request.latency_ms > 1) AS n,\n"
                         f"  sum(request.latency_ms) FILTER (WHERE eventId LIKE 'a%') AS s {P}",
    "pivot": "SELECT * FROM (SELECT eventId, user.country AS c,\n"
             f"  request.latency_ms AS l {P}) PIVOT (sum(l) FOR c IN ('a', 'b'))",
    "grouping_sets": "SELECT eventId, grouping(eventId) AS g, count(*) AS n\n"
                     f"{P} GROUP BY ROLLUP (eventId)",
    "group_by_all": f"SELECT eventId, count(*) AS n {P} GROUP BY ALL",
    "group_by_all_global": f"SELECT count(*) + 1 AS n {P} GROUP BY ALL",
    "order_by_window_alias": "SELECT eventId, count(*) AS n, sum(count(*)) OVER () AS total\n"
                             f"{P} GROUP BY eventId ORDER BY n",
    "star_order": f"SELECT * FROM (SELECT eventId, `timestamp` {P}) AS t ORDER BY 2",
    "generators": "SELECT eventId, explode(errors) AS e FROM parsed_events",
    "generator_aliases": "SELECT posexplode(errors) AS (pos, e),\n"
                         "  stack(2, 1, 2) AS (x) FROM parsed_events",
    "lateral_generator": "SELECT eventId, e.severity FROM parsed_events\n"
                         "  LATERAL VIEW explode(errors) t AS e WHERE e.severity = 'high'",
    "format_options": "SELECT from_json(eventId, 'a INT', map('mode', 'PERMISSIVE')) AS j,\n"
                      "  to_json(user, map('pretty', 'true')) AS u,\n"
                      "  from_csv(eventId, 'a INT, b STRING') AS c,\n"
                      "  from_json(eventId, 'array<struct<a: decimal(10, 2), b: map<string, "
                      "bigint>>>') AS d,\n"
                      "  from_xml(eventId, 'a timestamp_ntz NOT NULL, b string COMMENT \"x\"')"
                      f" AS x {P}",
    "grouping_id_empty_sets": f"SELECT count(*) AS c, grouping_id() AS g {P}\n"
                              "GROUP BY GROUPING SETS ((), ())\n"
                              f"UNION ALL SELECT count(*) AS c, 0 AS g {P}\n"
                              "GROUP BY GROUPING SETS (()) HAVING grouping_id() = 0",
    "extract_interval": "SELECT EXTRACT(MONTH FROM INTERVAL '2-1' YEAR TO MONTH) AS m,\n"
                        "  EXTRACT(SECS FROM INTERVAL '1 12:34:56' DAY TO SECOND) AS s,\n"
                        f"  EXTRACT(HOUR FROM INTERVAL '5' HOURS) AS h {P}",
    "count_table_stars": f"SELECT count(p.*, p.*) AS n {P} AS p",
    "set_operations": f"SELECT eventId, 1 AS n {P}\nUNION ALL SELECT eventId, 2 AS n {P}",
    "limits": f"SELECT eventId {P} ORDER BY eventId LIMIT 2 * 5 OFFSET 1",
    "exists_in_where": f"SELECT eventId {P} WHERE EXISTS (SELECT 1 {P} AS e WHERE "
                       "e.eventId = 'a')\nORDER BY eventId",
}


def test_invalid_sql_is_flagged_where_it_is_with_sparks_class(tmp_path: Path) -> None:
    cases = {n: (rule, sql, f"[{error}]", place)
             for n, (rule, sql, error, place) in INVALID.items()}
    assert misreported(tmp_path, cases, rules={c[0] for c in INVALID.values()},
                       each=error_with_hint) == {}


def test_valid_neighbours_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []
