"""The pull-request gate refuses what Spark refuses: a corpus of models, valid and broken, each
through ``runner compile`` and through Spark itself (``spark.sql`` over empty views shaped like
``parsed_events``: parse and analysis, as a batch would run it).

- Every model Spark refuses, compile refuses (a model error): none reaches the stream to be
  parked at its first batch.
- Every model in :data:`VALID` is accepted by both.

sqlglot's Spark dialect is lenient where Spark is not (a trailing comma, an empty ``GROUP BY``
or ``IN ()``, MySQL's ``LIMIT m, n``, a string as an alias): compile parses with Spark's own
grammar (runner/lint/spark_parser), and checks what Spark refuses right after parsing on tokens
(runner/lint/sql/spark_grammar.py); this corpus, parse and analysis, holds both. Engine-free: no
table is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.build import compile_project
from runner.project.loader import load_project
from tests.support.projects import BASE_YML, write_project

pytestmark = pytest.mark.spark

#: Models Spark refuses and sqlglot alone would accept (each was a disagreement).
REFUSED_BY_SPARK = {
    "select_trailing_comma": "SELECT eventId event_type, FROM parsed_events",
    "select_trailing_comma_where": "SELECT eventId, user, FROM parsed_events WHERE true",
    "trailing_comma_comment": "SELECT eventId -- the id\n, FROM parsed_events",
    "from_trailing_comma": "SELECT eventId FROM parsed_events,",
    "group_trailing_comma": "SELECT user.country AS c FROM parsed_events GROUP BY user.country,",
    "group_comma_having": "SELECT user.country AS c FROM parsed_events GROUP BY user.country, "
                          "HAVING count(*) > 1",
    "order_trailing_comma": "SELECT eventId FROM parsed_events ORDER BY eventId DESC,",
    "sort_trailing_comma": "SELECT eventId FROM parsed_events SORT BY eventId,",
    "call_trailing_comma": "SELECT coalesce(eventId,) AS e FROM parsed_events",
    "count_trailing_comma": "SELECT count(*,) AS n FROM parsed_events",
    "array_trailing_comma": "SELECT array(1, 2,) AS a FROM parsed_events",
    "in_trailing_comma": "SELECT eventId FROM parsed_events WHERE eventId IN ('a', 'b',)",
    "cte_trailing_comma": "WITH x AS (SELECT eventId FROM parsed_events), SELECT * FROM x",
    "window_partition_comma": "SELECT sum(request.latency_ms) OVER (PARTITION BY eventId, "
                              "ORDER BY `timestamp`) AS s FROM parsed_events",
    "lateral_view_comma": "SELECT e.errorCode AS c FROM parsed_events, "
                          "LATERAL VIEW explode(errors) x AS e",
    "lateral_view_trailing": "SELECT e.errorCode AS c FROM parsed_events "
                             "LATERAL VIEW explode(errors) x AS e,",
    "empty_group_by": "SELECT count(*) AS n FROM parsed_events GROUP BY",
    "group_by_then_order": "SELECT count(*) AS n FROM parsed_events GROUP BY ORDER BY n",
    "empty_partition_by": "SELECT sum(request.latency_ms) OVER (PARTITION BY) AS s "
                          "FROM parsed_events",
    "empty_in": "SELECT eventId FROM parsed_events WHERE eventId IN ()",
    "empty_not_in": "SELECT eventId FROM parsed_events WHERE eventId NOT IN ()",
    "group_by_empty_parens": "SELECT count(*) AS n FROM parsed_events GROUP BY ()",
    "join_on_nothing": "SELECT p.eventId FROM parsed_events p JOIN parsed_events q ON",
    "join_on_where": "SELECT p.eventId FROM parsed_events p JOIN parsed_events q ON "
                     "WHERE p.eventId = 'a'",
    "distinct_nothing": "SELECT count(DISTINCT) AS n FROM parsed_events",
    "distinct_on": "SELECT DISTINCT ON (eventId) eventId FROM parsed_events",
    "repeated_window": "SELECT eventId, rank() OVER w AS r FROM parsed_events "
                       "WINDOW w AS (ORDER BY `timestamp`), `w` AS (ORDER BY eventId)",
    "mysql_limit": "SELECT eventId FROM parsed_events LIMIT 1, 2",
    "string_alias": "SELECT eventId AS 'id' FROM parsed_events",
    "double_quoted_alias": "SELECT eventId AS \"id\" FROM parsed_events",
    "number_alias": "SELECT 1 AS 2 FROM parsed_events",
    # already refused by sqlglot: kept so the corpus holds the class, not only its new members
    "two_aliases": "SELECT eventId a b FROM parsed_events",
    "unclosed_paren": "SELECT (eventId FROM parsed_events",
    "double_equals_sign": "SELECT eventId FROM parsed_events WHERE eventId = = 'a'",
    "unfinished_between": "SELECT eventId FROM parsed_events WHERE request.latency_ms "
                          "BETWEEN 1 AND",
    "order_by_nothing_in_window": "SELECT sum(1) OVER (ORDER BY) AS s FROM parsed_events",
}

#: Models both accept, among them keywords used as names (Spark takes most as identifiers).
VALID = {
    "plain": "SELECT eventId, user.country AS country FROM parsed_events",
    "limit_offset": "SELECT eventId FROM parsed_events LIMIT 10 OFFSET 2",
    "left_function": "SELECT eventId, left(eventId, 1) AS l FROM parsed_events",
    "keyword_aliases": "SELECT eventId AS left, eventId AS offset, eventId AS window, "
                       "eventId AS limit FROM parsed_events",
    "keyword_columns": "SELECT left, offset, window FROM (SELECT eventId AS left, "
                       "eventId AS offset, eventId AS window FROM parsed_events)",
    "lateral_subquery": "SELECT p.eventId, l.n FROM parsed_events p, "
                        "LATERAL (SELECT 1 AS n) l",
    "lateral_view": "SELECT e.errorCode AS c FROM parsed_events LATERAL VIEW explode(errors) x AS e",
    "grouping_sets": "SELECT user.country AS c, count(*) AS n FROM parsed_events "
                     "GROUP BY GROUPING SETS ((user.country), ())",
    "named_window": "SELECT eventId, rank() OVER w AS r FROM parsed_events "
                    "WINDOW w AS (ORDER BY `timestamp`)",
    # Spark compares window names as written: w and W are two windows
    "windows_w_and_W": "SELECT eventId, rank() OVER w AS r, rank() OVER W AS s FROM "
                       "parsed_events WINDOW w AS (ORDER BY `timestamp`), W AS (ORDER BY eventId)",
    "left_join_on": "SELECT p.eventId FROM parsed_events p LEFT JOIN parsed_events q "
                    "ON p.eventId = q.eventId",
    "in_list": "SELECT eventId FROM parsed_events WHERE eventId IN ('a', 'b')",
    "strings_with_commas": "SELECT eventId, 'a, FROM b,' AS s FROM parsed_events /* , */",
    "backquoted_alias": "SELECT eventId AS `the id` FROM parsed_events",
    "distinct": "SELECT DISTINCT eventId FROM parsed_events",
    # Spark's time windows: the grouping column is named after the call (window.start)
    "time_window_last": "SELECT user.country AS country, window.start AS ws, count(*) AS n "
                        "FROM parsed_events GROUP BY user.country, window(`timestamp`, "
                        "'1 minute')",
    "time_window_first": "SELECT user.country AS country, window.end AS we, count(*) AS n "
                         "FROM parsed_events GROUP BY window(`timestamp`, '1 minute'), "
                         "user.country",
    "session_window": "SELECT session_window.start AS ss, count(*) AS n FROM parsed_events "
                      "GROUP BY session_window(`timestamp`, '5 minutes')",
}


@pytest.fixture(scope="module")
def spark_refuses(spark):  # type: ignore[no-untyped-def]
    """``refuses(sql)``: Spark's error class when it refuses the query, else None."""
    from pyspark.errors import PySparkException

    from runner.project.event_schema import EventSchema

    session = spark.newSession()
    from tests.support.projects import EVENT_SCHEMA

    ddl = EventSchema.parse(EVENT_SCHEMA).ddl
    session.createDataFrame([], ddl + ", _batch_id BIGINT, _source_file STRING") \
        .createOrReplaceTempView("parsed_events")

    def refuses(sql: str) -> str | None:
        try:
            session.sql(sql)
        except PySparkException as e:
            return e.getCondition() or str(e).splitlines()[0]
        return None

    return refuses


def _compile_refusals(root: Path, models: dict[str, str]) -> dict[str, list[str]]:
    """model -> the error messages compile gives it (empty: compile accepts it)."""
    write_project(root, {f"models/{name}.sql": sql + "\n" for name, sql in models.items()},
                  project_yml=BASE_YML)
    result = compile_project(load_project(root))
    errors: dict[str, list[str]] = {name: [] for name in models}
    for v in result.violations:
        name = Path(v.path).stem
        if v.severity == "error" and name in errors:
            errors[name].append(f"[{v.rule}] {v.message}")
    return errors


def test_compile_refuses_every_model_spark_refuses(spark_refuses, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spark_says = {name: spark_refuses(sql) for name, sql in REFUSED_BY_SPARK.items()}
    assert {n: e for n, e in spark_says.items() if e is None} == {}  # the corpus is right
    compiled = _compile_refusals(tmp_path / "broken", REFUSED_BY_SPARK)
    passed = {name: spark_says[name] for name, errors in compiled.items() if not errors}
    assert passed == {}, "compile passes SQL Spark refuses"
    trailing = compiled["select_trailing_comma"]
    assert trailing == ["[syntax] SQL syntax error: trailing comma before FROM: Spark refuses "
                        "it"], trailing


def test_both_accept_the_valid_models(spark_refuses, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spark_says = {name: spark_refuses(sql) for name, sql in VALID.items()}
    assert {n: e for n, e in spark_says.items() if e is not None} == {}
    compiled = _compile_refusals(tmp_path / "valid", VALID)
    assert {n: e for n, e in compiled.items() if e} == {}
