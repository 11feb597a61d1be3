"""compile refuses no model Spark accepts: SQL from Spark's own SQL tests that Spark's session
accepted (``tests/corpus/spark_sql``), each next to a neighbour Spark refuses that compile
still refuses. Linted as the corpus is: over the repository's project (``parsed_events``).
"""

from __future__ import annotations

import time

import pytest

from runner.compile.render import RenderedModel
from runner.lint import lint_models
from runner.project.config import ModelConfig
from runner.project.loader import Project, load_project
from tests.support.spark_sql_corpus import REPO


@pytest.fixture(scope="module")
def project() -> Project:
    return load_project(REPO)


def _errors(project: Project, sql: str) -> set[str]:
    model = RenderedModel("m", "models/m.sql", sql, ModelConfig(), ())
    result = lint_models(project, [model], deadline=time.monotonic() + 60)
    return {v.rule for v in result.violations if v.severity == "error"}


_T = "WITH t AS (SELECT 1 AS a, 2 AS b FROM parsed_events) "
_TU = "WITH t AS (SELECT 1 AS a, 2 AS b FROM parsed_events), u AS (SELECT 1 AS a, 3 AS c FROM parsed_events) "

#: SQL Spark accepts (checked in Spark's session: the corpus's verdicts).
ACCEPTED = [
    _T + "SELECT a IS NOT DISTINCT FROM b AS same, a IS DISTINCT FROM NULL AS other FROM t",
    # a NATURAL JOIN joins on the columns both sides have: one column each, listed first by *
    _TU + "SELECT a, b, c FROM t NATURAL JOIN u",
    _TU + "SELECT * FROM t NATURAL LEFT JOIN u",
    _TU + "SELECT x FROM t JOIN u USING (a) CROSS JOIN LATERAL (SELECT a + 1 AS x)",
    # NOT before a parenthesised tuple is the operator, not a call of not() with two arguments
    _T + "SELECT a FROM t WHERE NOT (a, b) IN (SELECT a, b FROM t)",
    # Spark compares grouped expressions canonicalized: 1 + a is a + 1
    _T + "SELECT sum(b) AS s FROM t GROUP BY a + 1, b * 2 ORDER BY 1 + a, 2 * b",
    # grouping sets give the virtual column grouping__id
    _T + "SELECT a, grouping__id AS g FROM t GROUP BY CUBE (a, b) ORDER BY grouping__id",
    _T + "SELECT a, sum(b) AS s FROM t GROUP BY GROUPING SETS ((a), ()) HAVING GROUPING__ID > 0",
    _T + "SELECT a, b, grouping__id AS g FROM t GROUP BY a, b WITH ROLLUP",
    # ORDER BY/HAVING col1.a: the select list's col1 has the field (the source's is a string)
    "SELECT STRUCT(1 AS a) AS col1 FROM (SELECT 'a' AS col1 FROM parsed_events) AS t "
    "GROUP BY col1 HAVING col1.a > 0 ORDER BY col1.a",
    # an aggregate of the enclosing query's columns in a subquery's WHERE is the enclosing one's
    _T + "SELECT a FROM t GROUP BY a HAVING max(b) = (SELECT 1 WHERE max(b) = 1)",
    # a field of NULL is NULL
    "SELECT col.a AS x FROM (SELECT NULL AS col FROM parsed_events) AS t",
    # a semi or anti join only filters: none of its relation's columns are output
    _T + "SELECT * FROM t LEFT SEMI JOIN t AS u ON t.a = u.a",
    _T + "SELECT a FROM t LEFT ANTI JOIN t AS u ON t.a = u.b",
    # what sqlglot's Spark dialect does not read (runner/lint/sql/spark_dialect.py)
    _T + "SELECT a >>> 2 AS u, a >>> b >> 1 AS v, (a >>> (b >>> 1)) >>> 2 AS w FROM t",
    "SELECT CAST(NULL AS ARRAY<ARRAY<ARRAY<INT>>>) AS n, 20181117 >>> 2 AS u",
    "SELECT INTERVAL 1 YEAR -2 MONTHS AS j, -INTERVAL -1 DAY 1 HOUR -1 MINUTE 1 SECOND AS k",
    _T + "SELECT * FROM t PIVOT (sum(b) + 1 AS s, avg(b) AS m FOR a IN (1 AS one, 2 AS two))",
    "SELECT TIMEDIFF(HOUR, current_timestamp(), current_timestamp()) AS d",
    "SELECT CURRENT_PATH = CURRENT_PATH() AS same",
    "SELECT j:a.b AS v, j:a AS w FROM (SELECT '{\"a\": {\"b\": 1}}' AS j FROM parsed_events)",
    # `|> AS t` names the relation so far t (these two and their neighbours below: checked in a
    # Spark 4.2 session, not in the corpus)
    "SELECT * FROM parsed_events |> AS t |> WHERE t.eventId IS NOT NULL",
    "FROM parsed_events |> AS t |> SELECT t.eventId",
]

#: SQL Spark refuses -> the rule compile refuses it with (neighbours of the accepted SQL).
REFUSED = {
    _T + "SELECT count(DISTINCT) AS n FROM t": "syntax",
    _TU + "SELECT a FROM t JOIN u ON t.b = u.c": "ambiguous-column",
    _TU + "SELECT a FROM t NATURAL JOIN u CROSS JOIN t AS v": "ambiguous-column",
    _TU + "SELECT x FROM t JOIN u ON t.a = u.a CROSS JOIN LATERAL (SELECT a + 1 AS x)":
        "ambiguous-column",
    _T + "SELECT NOT a AS x FROM t": "argument-type",
    _T + "SELECT sum(b) AS s FROM t GROUP BY a + 1 ORDER BY 1 - a": "missing-aggregation",
    _T + "SELECT a, grouping__id AS g FROM t GROUP BY a": "unknown-column",
    _T + "SELECT a >> > 2 AS u FROM t": "syntax",
    _T + "SELECT * FROM t JOIN t AS u ON t.a = u.a": "duplicate-output-column",
    "SELECT TIMEDIFF(current_timestamp(), current_timestamp()) AS d": "unsafe-function",
    "SELECT STRUCT(1 AS a) AS col1 FROM (SELECT 'a' AS col1 FROM parsed_events) AS t "
    "GROUP BY col1 HAVING col1.b > 0": "unknown-column",
    "SELECT col.a AS x FROM (SELECT 1 AS col FROM parsed_events) AS t": "unknown-column",
    _T + "SELECT a FROM t GROUP BY a HAVING (SELECT max(u.b) FROM t AS u WHERE max(u.b) = 1) = 1":
        "misplaced-aggregate",
    "SELECT j:a.b AS v FROM (SELECT '{}' AS k FROM parsed_events)": "unknown-column",
    "FROM parsed_events |> AS t |> SELECT t.nope": "unknown-column",
    "FROM parsed_events |> AS t |> SELECT parsed_events.eventId": "unknown-column",
}


@pytest.mark.parametrize("sql", ACCEPTED)
def test_compile_accepts_what_spark_accepts(project: Project, sql: str) -> None:
    assert _errors(project, sql) == set()


@pytest.mark.parametrize("sql", REFUSED)
def test_compile_still_refuses_the_neighbours_spark_refuses(project: Project, sql: str) -> None:
    assert REFUSED[sql] in _errors(project, sql)
