"""compile refuses no model Spark accepts, by Spark's own resolution rules: SQL shaped like
the models of Spark's SQL tests that Spark accepts (``tests/corpus/spark_sql``), each cause
next to a neighbour Spark refuses that compile still refuses. Linted as the corpus is: over
the repository's project (``parsed_events``). No Spark: the verdicts are the corpus's.
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


def _errors(project: Project, sql: str) -> dict[str, str]:
    """rule -> message of each error lint reports on ``sql`` as one model."""
    model = RenderedModel("m", "models/m.sql", sql, ModelConfig(), ())
    result = lint_models(project, [model], deadline=time.monotonic() + 60)
    return {v.rule: v.message for v in result.violations if v.severity == "error"}


_T = "WITH t AS (SELECT 1 AS a, 2 AS b FROM parsed_events) "

#: SQL Spark accepts (the corpus's verdicts on the models these are shaped like).
ACCEPTED = {
    # |> DROP: the pipe operator that drops columns (pipe_operators)
    "pipe drop": "SELECT 1 AS x, 2 AS y, 3 AS z FROM parsed_events |> DROP z, y |> SELECT x",
    "pipe drop nested field": "SELECT 1 AS x, named_struct('m', named_struct('i', 2)) AS o "
                              "FROM parsed_events |> DROP o.m.i",
    # a spatial type of any SRID (st_functions)
    "geography any": "SELECT CAST(NULL AS GEOGRAPHY(ANY)) AS g, CAST(NULL AS GEOMETRY(ANY)) AS h",
}

#: SQL Spark refuses -> the rule compile refuses it with.
REFUSED = {
    "pipe drop, then the dropped column":
        ("SELECT 1 AS x, 2 AS y FROM parsed_events |> DROP x |> SELECT x", "unknown-column"),
}


@pytest.mark.parametrize("sql", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_compile_accepts_what_spark_accepts(project: Project, sql: str) -> None:
    assert _errors(project, sql) == {}


@pytest.mark.parametrize(("sql", "rule"), REFUSED.values(), ids=REFUSED.keys())
def test_compile_still_refuses_the_neighbours_spark_refuses(project: Project, sql: str,
                                                            rule: str) -> None:
    assert rule in _errors(project, sql)


@pytest.mark.parametrize("sql", ["SELECT IDENTIFIER('COAL' || 'ESCE')(NULL, 1) AS v",
                                 "SELECT 1 AS IDENTIFIER('col1')"])
def test_identifier_where_lint_cannot_read_it_is_the_guards_refusal(project: Project,
                                                                     sql: str) -> None:
    """IDENTIFIER(...) naming a function or an alias: Spark accepts it, lint's reader cannot
    read it; the guard refuses every IDENTIFIER(...) (a documented policy), and says so."""
    errors = _errors(project, sql)
    assert set(errors) == {"unsafe-table"}
    assert errors["unsafe-table"].startswith("IDENTIFIER(...) names a table, column or function")
