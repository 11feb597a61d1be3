"""Lint rules that catch Spark analysis errors offline (runner/lint/checks/analysis.py): what they
flag, where, and the valid Spark SQL they leave alone. tests/spark/test_lint_vs_spark.py runs
the same SQL through Spark's analyzer to show the two agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_lint import _BASE, lint_files

RULES = {"missing-aggregation", "misplaced-aggregate", "window-order", "ambiguous-column",
         "type-mismatch"}
MERGE = "{{ config(materialized='merge', unique_key='ep') }}\n"

#: Valid Spark SQL (each analysed by Spark in tests/spark/test_lint_vs_spark.py).
VALID: dict[str, str] = {
    "alias_qualified_group": "SELECT p.request.endpoint AS ep, count(*) AS n\n"
                             "FROM parsed_events p GROUP BY request.endpoint",
    "struct_prefix_group": "SELECT user.country AS c, count(*) AS n FROM parsed_events "
                           "GROUP BY user",
    "expression_group_filter": "SELECT upper(request.endpoint) AS ep,\n"
                               "  count(*) FILTER (WHERE request.status_code >= 500) AS errs\n"
                               "FROM parsed_events GROUP BY UPPER(Request.Endpoint)",
    "aliases_having_order": "SELECT request.endpoint AS ep, count(*) AS n, n * 2 AS twice\n"
                            "FROM parsed_events GROUP BY ep HAVING n > 1 ORDER BY twice",
    "windows_over_aggregates": "SELECT request.endpoint AS ep, sum(count(*)) OVER () AS total,\n"
                               "  rank() OVER (ORDER BY count(*) DESC) AS r\n"
                               "FROM parsed_events GROUP BY 1",
    "global_aggregate": "SELECT count(*) AS n, max(request.latency_ms) AS m FROM parsed_events",
    "lambda_over_aggregate": "SELECT request.endpoint AS ep,\n"
                             "  transform(collect_list(request.method), x -> lower(x)) AS ms\n"
                             "FROM parsed_events GROUP BY request.endpoint",
    "rollup_anonymous_aggregates": "SELECT request.endpoint AS ep,\n"
                                   "  percentile_approx(request.latency_ms, 0.5) AS p50,\n"
                                   "  mean(request.latency_ms) AS avg_ms\n"
                                   "FROM parsed_events GROUP BY ROLLUP(request.endpoint)",
    "group_derived": "SELECT ep, count(*) AS n\n"
                     "FROM (SELECT request.endpoint AS ep FROM parsed_events) GROUP BY ep",
    "subquery_in_where": "SELECT eventId FROM parsed_events WHERE request.latency_ms >\n"
                         "  (SELECT avg(request.latency_ms) FROM parsed_events)",
    "having_aggregate": "SELECT user.country AS c, count(DISTINCT user.userId) AS users\n"
                        "FROM parsed_events GROUP BY user.country HAVING count(*) > 10",
    "group_by_all": "SELECT request.endpoint AS ep, count(*) AS n FROM parsed_events "
                    "GROUP BY ALL",
    "group_by_all_having": "SELECT eventId, count(*) AS n FROM parsed_events GROUP BY ALL\n"
                           "HAVING count(*) > 1 AND eventId <> 'a' ORDER BY eventId, n",
    "lateral_group": "SELECT e.err.errorCode AS code, count(*) AS n\n"
                     "FROM parsed_events LATERAL VIEW explode(errors) e AS err\n"
                     "GROUP BY e.err.errorCode",
    "qualified_self_join": "SELECT a.eventId FROM parsed_events a\n"
                           "JOIN parsed_events b ON a.eventId = b.eventId",
    "join_using": "SELECT eventId, userId FROM parsed_events JOIN {{ ref('base') }} "
                  "USING (eventId)",
    "comparable_types": "SELECT eventId FROM parsed_events WHERE user.country = 'de'\n"
                        "  AND size(errors) > 0 AND errors[0].severity = 'high'\n"
                        "  AND request.status_code = '500' AND user IS NOT NULL",
    "named_window": "SELECT eventId, rank() OVER w AS r FROM parsed_events\n"
                    "WINDOW w AS (ORDER BY `timestamp`)",
    "ordered_ranks": "SELECT eventId, ntile(4) OVER (ORDER BY request.latency_ms) AS q,\n"
                     "  lead(eventId) OVER (PARTITION BY user.userId ORDER BY `timestamp`) AS nx,"
                     "\n  sum(request.latency_ms) OVER (PARTITION BY user.userId) AS total\n"
                     "FROM parsed_events",
}

#: Invalid Spark SQL: the rule, then the (line, column) and a piece of the message.
INVALID: dict[str, tuple[str, str, tuple[int, int], str]] = {
    "issue_example": (
        "missing-aggregation",
        "SELECT request.endpoint AS endpoint,\n  request.method AS method, count(*) AS n\n"
        "FROM parsed_events GROUP BY request.endpoint",
        (2, 3), "'request.method' is neither in GROUP BY nor inside an aggregate function"),
    "having_ungrouped": (
        "missing-aggregation",
        "SELECT request.endpoint AS ep, count(*) AS n FROM parsed_events\n"
        "GROUP BY request.endpoint HAVING request.method = 'GET'",
        (2, 34), "'request.method' is neither in GROUP BY"),
    "order_ungrouped": (
        "missing-aggregation",
        "SELECT request.endpoint AS ep, count(*) AS n FROM parsed_events\n"
        "GROUP BY request.endpoint ORDER BY `timestamp`",
        (2, 36), "'`timestamp`' is neither in GROUP BY"),
    "window_partition_ungrouped": (
        "missing-aggregation",
        "SELECT request.endpoint AS ep,\n"
        "  rank() OVER (PARTITION BY user.country ORDER BY count(*)) AS r\n"
        "FROM parsed_events GROUP BY request.endpoint",
        (2, 29), "'user.country' is neither in GROUP BY"),
    "group_by_name_of_column_and_alias": (
        # GROUP BY eventId is the source's column, not the select list's alias of user.country
        "missing-aggregation",
        "SELECT user.country AS eventId, count(*) AS n\n"
        "FROM parsed_events GROUP BY eventId",
        (1, 8), "'user.country' is neither in GROUP BY"),
    "global_aggregate": (
        "missing-aggregation",
        "SELECT eventId, count(*) AS n FROM parsed_events",
        (1, 8), "'eventId' is neither grouped (the SELECT aggregates all rows)"),
    "group_by_alias_of_aggregate": (
        "misplaced-aggregate",
        "SELECT count(*) AS n FROM parsed_events\nGROUP BY n",
        (2, 10), "[GROUP_BY_AGGREGATE] GROUP BY n names the select list's aggregate count()"),
    "group_by_all_having_ungrouped": (
        "missing-aggregation",
        "SELECT sum(request.latency_ms) AS total FROM parsed_events\n"
        "GROUP BY ALL ORDER BY eventId",
        (2, 23), "[UNRESOLVED_COLUMN] 'eventId' is not grouped by GROUP BY ALL"),
    "in_group_by": (
        "misplaced-aggregate",
        "SELECT count(*) AS n FROM parsed_events GROUP BY max(request.latency_ms)",
        (1, 50), "aggregate function max() in GROUP BY"),
    "in_join_on": (
        "misplaced-aggregate",
        "SELECT p.eventId FROM parsed_events p\n"
        "JOIN {{ ref('base') }} b ON p.eventId = b.eventId AND count(*) > 1",
        (2, 55), "aggregate function count() in JOIN ... ON"),
    "ambiguous_in_where": (
        "ambiguous-column",
        "SELECT p.eventId FROM parsed_events p JOIN {{ ref('base') }} b\n"
        "  ON p.eventId = b.eventId WHERE userId = 'u1' AND eventId > 'a'",
        (2, 52), "column 'eventId' is ambiguous: 'p' and 'b' both have it"),
    "ntile_unordered": (
        "window-order",
        "SELECT eventId, ntile(4) OVER (PARTITION BY user.userId) AS q FROM parsed_events",
        (1, 17), "window function ntile() needs ORDER BY"),
    "struct_vs_string_in_select": (
        "type-mismatch",
        "SELECT eventId, errors <> 'x' AS odd FROM parsed_events",
        (1, 17), "cannot compare ARRAY<STRUCT<errorCode: STRING, severity: STRING>> with STRING"),
}


def test_valid_spark_sql_is_not_flagged(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {**_BASE, **VALID})
    flagged = [v for v in result.violations if v.rule in RULES]
    assert not flagged, "\n".join(f"{v.location()}: [{v.rule}] {v.message}" for v in flagged)


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_spark_sql_is_flagged_where_it_is(tmp_path: Path, case: str) -> None:
    rule, sql, (line, column), message = INVALID[case]
    result = lint_files(tmp_path, {"base": _BASE["base"], "m": sql})
    mine = [v for v in result.violations if v.rule in RULES]
    assert [(v.rule, v.path, v.line, v.column) for v in mine] == [
        (rule, "models/m.sql", line, column)], mine
    assert message in mine[0].message and mine[0].severity == "error"
    assert mine[0].hint
