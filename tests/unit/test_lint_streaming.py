"""The streaming-semantics lint rules (runner/lint/checks/streaming.py): windows and QUALIFY in append
and merge models (``append-window``), aggregates that are one row per event
(``append-aggregate``), time-window grouping as a merge key (``merge-key-not-unique``), and
hints that name the model's own columns, never the example project's."""

from __future__ import annotations

from pathlib import Path

from runner.lint import LintResult, Violation, rules_table
from tests.unit.test_lint import PROJECT_YML, lint_files

#: A project whose schema has no `timestamp` column: its time column is `event_ts`.
CLICKS_YML = """\
name: clicks
source:
  type: files
  path: data
schema: >-
  id STRING NOT NULL, event_ts TIMESTAMP, session STRING, url STRING, country STRING,
  items ARRAY<STRUCT<sku: STRING, qty: INT>>
"""

#: A project with no time column at all.
NO_TIME_YML = """\
name: notime
source:
  type: files
  path: data
schema: >-
  id STRING NOT NULL, seq BIGINT, session STRING, url STRING
"""

MERGE = "{{ config(materialized='merge', unique_key=%r) }}\n"


def _of(result: LintResult, rule: str, model: str = "m") -> list[Violation]:
    return [v for v in result.violations if v.rule == rule and v.path == f"models/{model}.sql"]


def _one(result: LintResult, rule: str, model: str = "m") -> Violation:
    found = _of(result, rule, model)
    assert len(found) == 1, result.violations
    return found[0]


# -- append-window ----------------------------------------------------------------------------

def test_append_window_is_a_warning_in_the_rules_table() -> None:
    assert ("append-window", "warn") in {(r, s) for r, s, _ in rules_table()}


def test_lag_per_session_in_an_append_model_warns_with_the_models_columns(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": (
        "SELECT id, session, url,\n"
        "  lag(url) OVER (PARTITION BY session ORDER BY event_ts) AS prev_url\n"
        "FROM parsed_events")}, yml=CLICKS_YML)
    v = _one(result, "append-window")
    assert (v.severity, v.line, v.column) == ("warn", 2, 3)
    assert "lag()" in v.message and "one micro-batch" in v.message
    hint = v.hint or ""
    assert "unique_key=['session']" in hint and "source.event_ts > target.event_ts" in hint
    assert "timestamp" not in hint


def test_qualify_dedup_in_an_append_model_warns(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": (
        "SELECT eventId, `timestamp`, request.endpoint AS endpoint FROM parsed_events\n"
        "QUALIFY row_number() OVER (PARTITION BY eventId ORDER BY `timestamp`) = 1")})
    v = _one(result, "append-window")
    assert v.line == 2 and "QUALIFY" in v.message and "other batches" in v.message
    assert "materialized='merge', unique_key=['eventId']" in (v.hint or "")


def test_row_number_in_a_derived_table_of_an_append_model_warns(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": (
        "SELECT userId, last_seen FROM (\n"
        "  SELECT user.userId AS userId, `timestamp` AS last_seen,\n"
        "    row_number() OVER (PARTITION BY user.userId ORDER BY `timestamp` DESC) AS rn\n"
        "  FROM parsed_events) WHERE rn = 1")})
    v = _one(result, "append-window")
    assert v.line == 3
    assert "unique_key=['userId']" in (v.hint or "")
    assert "source.last_seen > target.last_seen" in (v.hint or "")


def test_windows_within_one_event_are_not_flagged(tmp_path: Path) -> None:
    """All rows of one event are in one batch: a window partitioned by the event's id (over its
    exploded rows) sees all of them."""
    result = lint_files(tmp_path, {
        "per_event": "SELECT eventId, err.errorCode AS code,\n"
                     "  count(*) OVER (PARTITION BY eventId) AS n_errors\n"
                     "FROM parsed_events LATERAL VIEW explode(errors) e AS err",
        "first_error": "SELECT eventId, pos, err.errorCode AS code\n"
                       "FROM parsed_events LATERAL VIEW posexplode(errors) e AS pos, err\n"
                       "QUALIFY row_number() OVER (PARTITION BY eventId ORDER BY pos) = 1"})
    assert [v for v in result.violations if v.rule == "append-window"] == []
    clicks = lint_files(tmp_path / "clicks", {"items": (
        "SELECT id, item.sku AS sku, sum(item.qty) OVER (PARTITION BY id) AS qty\n"
        "FROM parsed_events LATERAL VIEW explode(items) t AS item")}, yml=CLICKS_YML)
    assert clicks.violations == ()


def test_merge_dedup_on_its_key_is_not_flagged(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "latest": MERGE % "userId" + (
            "SELECT user.userId AS userId, `timestamp` AS ts FROM parsed_events\n"
            "QUALIFY row_number() OVER (PARTITION BY user.userId ORDER BY `timestamp` DESC) = 1"),
        "latest_rn": MERGE % "userId" + (
            "SELECT userId, ts FROM (SELECT user.userId AS userId, `timestamp` AS ts,\n"
            "  row_number() OVER (PARTITION BY user.userId ORDER BY `timestamp` DESC) AS rn\n"
            "  FROM parsed_events) WHERE rn = 1"),
        "dedup": MERGE % "eventId" + (
            "SELECT eventId, `timestamp` FROM parsed_events\n"
            "QUALIFY row_number() OVER (PARTITION BY eventId ORDER BY `timestamp`) = 1")})
    assert result.violations == ()


def test_windows_over_other_batches_rows_in_a_merge_model_warn(tmp_path: Path) -> None:
    """A merge model keyed on the event: lag() per session still misses the session's earlier
    batches."""
    result = lint_files(tmp_path, {"m": MERGE % "id" + (
        "SELECT id, session, lag(url) OVER (PARTITION BY session ORDER BY event_ts) AS prev_url\n"
        "FROM parsed_events QUALIFY row_number() OVER (PARTITION BY id ORDER BY event_ts) = 1")},
        yml=CLICKS_YML)
    v = _one(result, "append-window")
    assert v.line == 2 and "lag()" in v.message and "merge model" in v.message


def test_append_window_leaves_what_other_rules_report(tmp_path: Path) -> None:
    """An unordered row_number() is window-order's error; a window in WHERE is
    misplaced-aggregate's: not reported twice."""
    result = lint_files(tmp_path, {
        "unordered": "SELECT eventId, row_number() OVER (PARTITION BY user.userId) AS rn\n"
                     "FROM parsed_events",
        "in_where": "SELECT eventId FROM parsed_events WHERE row_number() OVER\n"
                    "  (PARTITION BY user.userId ORDER BY `timestamp`) = 1"})
    assert [v for v in result.violations if v.rule == "append-window"] == []


# -- append-aggregate -------------------------------------------------------------------------

def test_aggregate_per_event_joined_back_is_not_flagged(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "m": "WITH e AS (\n"
             "  SELECT eventId, count(*) AS n FROM parsed_events\n"
             "  LATERAL VIEW explode(errors) x AS err GROUP BY eventId)\n"
             "SELECT p.eventId, p.`timestamp`, p.user.userId AS userId, coalesce(e.n, 0) AS n\n"
             "FROM parsed_events p LEFT JOIN e ON p.eventId = e.eventId",
        "grouped_by_event": "SELECT eventId, max(err.severity) AS worst\n"
                            "FROM parsed_events LATERAL VIEW explode(errors) x AS err\n"
                            "GROUP BY eventId"})
    assert result.violations == ()
    clicks = lint_files(tmp_path / "clicks", {"m": (
        "SELECT p.id, p.url, o.n_items FROM parsed_events p JOIN (\n"
        "  SELECT id, sum(item.qty) AS n_items FROM parsed_events\n"
        "  LATERAL VIEW explode(items) t AS item GROUP BY id) o ON o.id = p.id")},
        yml=CLICKS_YML)
    assert clicks.violations == ()


def test_append_aggregate_key_is_the_group_by_columns(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": (
        "SELECT request.endpoint AS endpoint, user.country AS country, 'v1' AS version,\n"
        "  count(*) AS hits, max(`timestamp`) AS last_seen\n"
        "FROM parsed_events GROUP BY request.endpoint, user.country")})
    v = _one(result, "append-aggregate")
    hint = v.hint or ""
    assert "unique_key=['endpoint', 'country']" in hint, hint
    assert "'hits': 'target.hits + source.hits'" in hint
    assert "'last_seen': 'greatest(target.last_seen, source.last_seen)'" in hint


def test_append_aggregate_joined_back_per_other_key(tmp_path: Path) -> None:
    """Grouped by user, joined back to every event: still one batch's count, and the final rows
    are not one per user, so no unique_key of the final columns is offered."""
    result = lint_files(tmp_path, {"m": (
        "WITH per_user AS (SELECT user.userId AS userId, count(*) AS n\n"
        "  FROM parsed_events GROUP BY user.userId)\n"
        "SELECT p.eventId, p.`timestamp`, u.userId, u.n AS events_of_user\n"
        "FROM parsed_events p JOIN per_user u ON p.user.userId = u.userId")})
    v = _one(result, "append-aggregate")
    hint = v.hint or ""
    assert "unique_key=['userId']" in hint and "eventId" not in hint, hint
    assert "own merge model" in hint


def test_append_aggregate_over_a_cte_passed_through(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": (
        "WITH c AS (SELECT user.country AS country, count(*) AS n FROM parsed_events\n"
        "  GROUP BY user.country)\nSELECT country, n FROM c")})
    v = _one(result, "append-aggregate")
    assert "unique_key=['country']" in (v.hint or "")
    assert "'n': 'target.n + source.n'" in (v.hint or "")


def test_append_aggregate_sees_every_aggregate_of_sparks_registry(tmp_path: Path) -> None:
    """An aggregate sqlglot reads as an anonymous call (``every``, ``histogram_numeric``) is an
    aggregate too, and so is one inside a window's argument (one test of aggregates for the whole
    linter: runner/lint/resolution/aggregates.py)."""
    result = lint_files(tmp_path, {
        "m": "SELECT every(request.status = 200) AS ok FROM parsed_events",
        "h": "SELECT histogram_numeric(request.status, 3) AS h FROM parsed_events",
        "w": "SELECT sum(max(request.status)) OVER () AS s FROM parsed_events"})
    for model in ("m", "h", "w"):
        assert _one(result, "append-aggregate", model).rule == "append-aggregate"


# -- merge-key-not-unique: time windows -------------------------------------------------------

def test_time_window_start_is_a_unique_key(tmp_path: Path) -> None:
    key = MERGE % ["country", "minute"]
    result = lint_files(tmp_path, {
        "dot_start": key + "SELECT country, window(event_ts, '1 minute').start AS minute,\n"
                           "  count(*) AS n FROM parsed_events\n"
                           "GROUP BY country, window(event_ts, '1 minute')",
        "window_start": key + "SELECT country, window.start AS minute, count(*) AS n\n"
                              "FROM parsed_events GROUP BY country, window(event_ts, '1 minute')",
        "window_end": key + "SELECT country, window.end AS minute, count(*) AS n\n"
                            "FROM parsed_events GROUP BY country, window(event_ts, '1 minute')",
        "sliding": key + "SELECT country, window.start AS minute, count(*) AS n\n"
                         "FROM parsed_events\n"
                         "GROUP BY country, window(event_ts, '10 minutes', '1 minute')",
        "session": key + "SELECT country, session_window.start AS minute, count(*) AS n\n"
                         "FROM parsed_events\n"
                         "GROUP BY country, session_window(event_ts, '5 minutes')",
        "struct": (MERGE % ["country", "w"]) + "SELECT country, window(event_ts, '1 minute') AS w,"
                                               "\n  count(*) AS n FROM parsed_events\n"
                                               "GROUP BY country, window(event_ts, '1 minute')",
        "missing_window": MERGE % "country" + "SELECT country, window.start AS minute, "
                                              "count(*) AS n\nFROM parsed_events\n"
                                              "GROUP BY country, window(event_ts, '1 minute')",
    }, yml=CLICKS_YML)
    flagged = {v.path for v in result.violations if v.rule == "merge-key-not-unique"}
    assert flagged == {"models/missing_window.sql"}
    # Spark's own form compiles clean: `window` names the grouping column, in GROUP BY first
    # or last (sqlglot alone stops at GROUP BY window( and resolves no `window` column)
    errors = {(v.path, v.rule) for v in result.violations if v.severity == "error"}
    assert errors == {("models/missing_window.sql", "merge-key-not-unique")}, result.violations
    first = lint_files(tmp_path / "first", {
        "m": key + "SELECT country, window.start AS minute, count(*) AS n FROM parsed_events\n"
                   "GROUP BY window(event_ts, '1 minute'), country"}, yml=CLICKS_YML)
    assert [v for v in first.violations if v.severity == "error"] == []


# -- hints name the model's own columns -------------------------------------------------------

def test_hints_use_the_projects_time_column(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "order": "SELECT id, row_number() OVER (PARTITION BY session) AS rn FROM parsed_events",
        "key": MERGE % "session" + "SELECT session, url FROM parsed_events",
        "nondet": MERGE % "session" + "SELECT session, max(url) AS url, now() AS seen\n"
                                      "FROM parsed_events GROUP BY session",
    }, yml=CLICKS_YML)
    hints = {v.rule: v.hint or "" for v in result.violations}
    assert set(hints) == {"window-order", "merge-key-not-unique", "nondeterministic-merge"}
    for rule, hint in hints.items():
        assert "timestamp" not in hint and "event_ts" in hint, (rule, hint)


def test_hints_without_a_time_column_use_a_placeholder(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "order": "SELECT id, row_number() OVER (PARTITION BY session) AS rn FROM parsed_events",
        "key": MERGE % "session" + "SELECT session, url FROM parsed_events",
        "lagged": "SELECT id, lag(url) OVER (PARTITION BY session ORDER BY seq) AS prev\n"
                  "FROM parsed_events",
    }, yml=NO_TIME_YML)
    hints = {v.rule: v.hint or "" for v in result.violations}
    assert set(hints) == {"window-order", "merge-key-not-unique", "append-window"}
    assert "<ts_column>" in hints["window-order"] and "<ts_column>" in hints["merge-key-not-unique"]
    assert "source.seq > target.seq" in hints["append-window"]  # its own ORDER BY column
    assert not any("timestamp" in h for h in hints.values())


def test_example_schema_hints_still_name_timestamp(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"key": MERGE % "userId"
                                   + "SELECT user.userId AS userId FROM parsed_events"},
                        yml=PROJECT_YML)
    assert "ORDER BY `timestamp` DESC" in (_one(result, "merge-key-not-unique", "key").hint or "")
