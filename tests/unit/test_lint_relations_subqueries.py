"""Relations and correlated subqueries as Spark's analyser checks them
(runner/lint/checks/relations.py, subqueries.py, and the PIVOT columns and ``AS t(a, b)`` arity name
resolution finds, runner/lint/resolution/resolve.py; with the neighbouring additions to analysis.py,
frames.py, recursive_cte.py and spark_dialect.py): what each rule flags, where (the model file's line
and column), with Spark's error class, and the valid neighbours it leaves alone. The cases
follow Spark's rules (``ResolvePivot``, ``ResolveSubqueryColumnAliases``,
``CheckAnalysis.checkSubqueryExpression``), not the corpus's models."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint import lint_errors, misreported

P = "FROM parsed_events"
T = f"(SELECT eventId, user.country AS c, request.latency_ms AS l,\n  map(eventId, 1) AS m {P})"

#: Name resolution's rules: their messages do not name Spark's class.
_NAMES = ("unknown-column", "ambiguous-column")

#: name -> (rule, SQL, Spark's error class, (line, column) of the finding).
INVALID: dict[str, tuple[str, str, str, tuple[int, int]]] = {
    "arity_table": ("relation-shape", f"WITH t AS (SELECT eventId, `timestamp` {P})\n"
                    "SELECT * FROM t AS x(a, b, c)", "ASSIGNMENT_ARITY_MISMATCH", (2, 20)),
    "arity_derived": ("relation-shape", f"SELECT * FROM (SELECT eventId, `timestamp` {P})\n"
                      "  AS t(a)", "ASSIGNMENT_ARITY_MISMATCH", (2, 6)),
    "arity_cte": ("relation-shape", f"WITH t(a) AS (SELECT eventId, `timestamp` {P})\n"
                  "SELECT * FROM t", "ASSIGNMENT_ARITY_MISMATCH", (1, 6)),
    "pivot_unknown_column": ("unknown-column", f"SELECT * FROM {T}\n"
                             "PIVOT (sum(latency) FOR c IN ('a', 'b'))", "UNRESOLVED_COLUMN",
                             (3, 12)),
    "pivot_not_aggregate": ("relation-shape", f"SELECT * FROM {T}\n"
                            "PIVOT (abs(l) FOR c IN ('a', 'b'))", "_LEGACY_ERROR_TEMP_1006",
                            (3, 12)),
    "pivot_map_column": ("relation-shape", f"SELECT * FROM {T}\n"
                         "PIVOT (sum(l) FOR m IN (map('a', 1)))", "INCOMPARABLE_PIVOT_COLUMN",
                         (3, 19)),
    "pivot_value_type": ("relation-shape", f"SELECT * FROM {T}\n"
                         "PIVOT (sum(l) FOR (c, eventId) IN ('a', 'b'))",
                         "PIVOT_VALUE_DATA_TYPE_MISMATCH", (3, 36)),
    "mixed_aggregate": ("subquery-shape", f"SELECT eventId {P} AS o WHERE EXISTS (\n"
                        f"  SELECT 1 {P} AS i GROUP BY i.eventId\n"
                        "  HAVING max(i.request.latency_ms + o.request.latency_ms) > 1)",
                        "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY."
                        "AGGREGATE_FUNCTION_MIXED_OUTER_LOCAL_REFERENCES", (3, 10)),
    "outer_aggregate": ("subquery-shape", f"SELECT eventId {P} AS o WHERE EXISTS (\n"
                        f"  SELECT max(o.request.latency_ms) {P} AS i)",
                        "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.CORRELATED_REFERENCE", (2, 10)),
    "order_by_correlated": ("subquery-shape", f"SELECT eventId {P}\n"
                            "ORDER BY (SELECT upper(eventId))",
                            "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY."
                            "UNSUPPORTED_CORRELATED_SCALAR_SUBQUERY", (2, 24)),
    "random_lateral": ("subquery-shape", f"SELECT x, y FROM (SELECT eventId AS x {P}) AS t\n"
                       "JOIN LATERAL (SELECT concat(x, rand()) AS y) ON TRUE",
                       "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY."
                       "NON_DETERMINISTIC_LATERAL_SUBQUERIES", (2, 32)),
    "scalar_star": ("query-shape", "SELECT eventId,\n"
                    f"  (SELECT * FROM (SELECT eventId, `timestamp` {P}) AS t LIMIT 1) AS v {P}",
                    "INVALID_SUBQUERY_EXPRESSION.SCALAR_SUBQUERY_RETURN_MORE_THAN_ONE_OUTPUT_"
                    "COLUMN", (2, 11)),
    "group_by_all_correlated": ("missing-aggregation", "SELECT (SELECT count(*) FROM "
                                "parsed_events AS i\n  WHERE i.eventId = o.eventId) + count(*) "
                                f"AS n {P} AS o GROUP BY ALL", "UNRESOLVED_ALL_IN_GROUP_BY",
                                (2, 21)),
    "select_all_column": ("unknown-column", f"SELECT all\nFROM (SELECT eventId {P}) GROUP BY all",
                          "UNRESOLVED_COLUMN", (1, 8)),
    "window_order_by_all": ("unknown-column", "SELECT eventId,\n  rank() OVER (PARTITION BY "
                            f"eventId ORDER BY ALL) AS r {P}", "UNRESOLVED_COLUMN", (2, 46)),
    "joined_relation": ("ambiguous-column", f"WITH b AS (SELECT eventId {P})\n"
                        "SELECT j.eventId FROM (b AS x CROSS JOIN b AS y) AS j",
                        "AMBIGUOUS_REFERENCE", (2, 10)),
    "recursive_string_anchor": ("recursive-cte", f"WITH RECURSIVE t(n) AS (SELECT '7' {P}\n"
                                "  UNION ALL SELECT n + 1 FROM t WHERE n < 9) SELECT n FROM t",
                                "CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE", (2, 20)),
    "range_over_now": ("window-frame", "SELECT count(eventId) OVER (ORDER BY current_timestamp()"
                       f"\n  RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS n {P}",
                       "DATATYPE_MISMATCH.RANGE_FRAME_INVALID_TYPE", (1, 8)),
    "having_ungrouped": ("subquery-shape", f"WITH t AS (SELECT eventId AS a, 1 AS b {P})\n"
                         "SELECT a FROM t GROUP BY a HAVING EXISTS (\n"
                         f"  SELECT 1 {P} AS i GROUP BY i.eventId HAVING count(*) > b)",
                         "MISSING_ATTRIBUTES.RESOLVED_ATTRIBUTE_MISSING_FROM_INPUT", (3, 73)),
}

#: Valid neighbours: Spark accepts each.
VALID: dict[str, str] = {
    "arity_ok": f"SELECT a, b FROM (SELECT eventId, `timestamp` {P}) AS t(a, b)",
    "arity_cte_ok": f"WITH t(a, b) AS (SELECT eventId, `timestamp` {P}) SELECT a, b FROM t",
    "pivot_ok": f"SELECT * FROM {T}\nPIVOT (sum(l) + 1 AS s, count(*) AS n\n"
                "  FOR (c, eventId) IN (('a', 'x') AS ax, ('b', 'y') AS yb))",
    "pivot_literal_cast": f"SELECT * FROM {T}\nPIVOT (max(c) FOR l IN ('1', 2))",
    "correlated_filter": f"SELECT eventId {P} AS o WHERE o.request.latency_ms > (\n"
                         f"  SELECT max(i.request.latency_ms) {P} AS i WHERE i.eventId = "
                         "o.eventId)",
    "order_by_uncorrelated": f"SELECT eventId {P}\n"
                             f"ORDER BY (SELECT max(request.latency_ms) {P})",
    "lateral_deterministic": f"SELECT x, y FROM (SELECT eventId AS x {P}) AS t\n"
                             "JOIN LATERAL (SELECT upper(x) AS y) ON TRUE",
    "group_by_all_grouped": "SELECT o.eventId, (SELECT count(*) FROM parsed_events AS i\n"
                            f"  WHERE i.eventId = o.eventId) + count(*) AS n {P} AS o "
                            "GROUP BY ALL",
    "window_order_by_all_column": "SELECT x, rank() OVER (ORDER BY all) AS r\n"
                                  f"FROM (SELECT eventId AS x, 1 AS all {P})",
    "order_by_all": f"SELECT eventId, `timestamp` {P} ORDER BY ALL",
    "joined_relation_ok": f"WITH b AS (SELECT eventId {P}), c AS (SELECT `timestamp` {P})\n"
                          "SELECT j.e, t FROM (b CROSS JOIN c) AS j(e, t)",
    "joined_unaliased": f"WITH b AS (SELECT eventId {P}), c AS (SELECT eventId AS e {P})\n"
                        "SELECT b.eventId, c.e FROM (b CROSS JOIN c)",
    "recursive_number_anchor": f"WITH RECURSIVE t(n) AS (SELECT 7 {P}\n"
                               "  UNION ALL SELECT n + 1 FROM t WHERE n < 9) SELECT n FROM t",
    "range_over_today": "SELECT count(eventId) OVER (ORDER BY current_date()\n"
                        f"  RANGE BETWEEN CURRENT ROW AND 1 FOLLOWING) AS n {P}",
    "having_grouped": f"WITH t AS (SELECT eventId AS a, 1 AS b {P})\n"
                      "SELECT a FROM t GROUP BY a, b HAVING EXISTS (\n"
                      f"  SELECT 1 {P} AS i GROUP BY i.eventId HAVING count(*) > b)",
    "having_aggregated": f"WITH t AS (SELECT eventId AS a, 1 AS b {P})\n"
                         "SELECT a FROM t GROUP BY a HAVING EXISTS (\n"
                         f"  SELECT 1 {P} AS i WHERE i.eventId = a)",
    "scalar_star_one": f"SELECT eventId, (SELECT * FROM (SELECT eventId {P}) AS t LIMIT 1)\n"
                       f"  AS v {P}",
}


def test_invalid_sql_is_flagged_where_it_is_with_sparks_class(tmp_path: Path) -> None:
    # a name rule's message is the unknown/ambiguous name's, with no Spark class or hint
    cases = {n: (rule, sql, "" if rule in _NAMES else f"[{error}]", place)
             for n, (rule, sql, error, place) in INVALID.items()}
    wrong = misreported(tmp_path, cases, rules={c[0] for c in INVALID.values()},
                        each=lambda v: v.severity == "error" and (bool(v.hint) or v.rule in _NAMES))
    assert wrong == {}, {k: [m[:3] for m in v] for k, v in wrong.items()}


def test_valid_neighbours_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []
