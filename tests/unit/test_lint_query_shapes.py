"""Query shapes Spark's analyser and AST builder refuse (runner/lint/recursive_cte.py,
runner/lint/query_rules.py): what each rule flags, where (the model file's line and column),
with Spark's error class, and the valid neighbours it leaves alone. The cases follow Spark's
rules (``ResolveWithCTE``, ``CheckAnalysis``, ``AstBuilder``), not the corpus's models."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runner.errors import Violation
from tests.unit.test_lint import _BASE, lint_files

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
    "interval_parts": "SELECT INTERVAL '0 month 1 day' AS a, INTERVAL '1 year 2 months' AS b,\n"
                      f"  INTERVAL '106751991 04' DAY TO HOUR AS c {P}",
}


Found = dict[str, list[tuple[str, int | None, int | None, str]]]


def _flagged(violations: Iterable[Violation]) -> Found:
    mine: Found = {}
    rules = {c[0] for c in INVALID.values()}
    for v in violations:
        if v.rule in rules:
            mine.setdefault(Path(v.path).stem, []).append((v.rule, v.line, v.column, v.message))
            assert v.severity == "error" and v.hint, v
    return mine


def test_invalid_sql_is_flagged_where_it_is_with_sparks_class(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"base": _BASE["base"], **{n: c[1] for n, c in INVALID.items()}})
    mine = _flagged(result.violations)
    wrong = {}
    for name, (rule, _, error, (line, column)) in INVALID.items():
        found = mine.get(name, [])
        if [(r, ln, c) for r, ln, c, _ in found] != [(rule, line, column)] or \
                f"[{error}]" not in found[0][3]:
            wrong[name] = found
    assert wrong == {}


def test_valid_neighbours_are_not_flagged(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"base": _BASE["base"], **VALID})
    assert [v for v in result.violations if v.severity == "error"] == []
