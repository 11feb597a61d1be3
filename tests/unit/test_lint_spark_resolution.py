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
_TU = _T[:-1] + ", u AS (SELECT 1 AS a, 3 AS c FROM parsed_events) "

#: SQL Spark accepts (the corpus's verdicts on the models these are shaped like).
ACCEPTED = {
    # |> DROP: the pipe operator that drops columns (pipe_operators)
    "pipe drop": "SELECT 1 AS x, 2 AS y, 3 AS z FROM parsed_events |> DROP z, y |> SELECT x",
    "pipe drop nested field": "SELECT 1 AS x, named_struct('m', named_struct('i', 2)) AS o "
                              "FROM parsed_events |> DROP o.m.i",
    # a spatial type of any SRID (st_functions)
    "geography any": "SELECT CAST(NULL AS GEOGRAPHY(ANY)) AS g, CAST(NULL AS GEOMETRY(ANY)) AS h",
    # a generator's aliases are seen by the whole select list (generators_resolution_edge_cases)
    "generator alias before it": "SELECT col + 1 AS col2, explode(array(1, 2)) AS col",
    "generator alias in a generator before it":
        "SELECT explode(arr) AS col, explode(array(array(0), array(1))) AS arr",
    # a generator in an aggregating SELECT: its inputs are _gen_input_<i>, which GROUP BY may
    # name and its ordinals count
    "generator inputs by name": _T + "SELECT stack(2, 'x', count(*), a, 'y', 0L, 1) AS (p, q, r), b "
                                     "FROM t GROUP BY _gen_input_3, b",
    "generator inputs by ordinal": _T + "SELECT stack(2, 'x', count(*), a, 'y', 0L, 1) AS (p, q, r), "
                                        "b FROM t GROUP BY 2, 3",
    "generator input by ordinal": _T + "SELECT b, explode(array(a)) FROM t GROUP BY b, 2",
    # GROUP BY an alias two select-list items have: the first (group_by_alias)
    "group by a repeated alias": _T + "SELECT a AS x, b AS y, count(*) AS n FROM t "
                                      "GROUP BY b, x",
    # t.* of the enclosing query's t, in a scalar or lateral subquery (scalar_subquery_select,
    # postgresql_join)
    "outer star in a scalar subquery":
        "SELECT (SELECT t1.* FROM (SELECT 2 AS c2 FROM parsed_events) AS t2 LIMIT 1) AS v "
        "FROM (SELECT 1 AS c1 FROM parsed_events) AS t1",
    "outer star in a lateral subquery":
        _T + "SELECT s2.a AS x FROM t CROSS JOIN LATERAL (SELECT t.a) AS s1 "
             "CROSS JOIN LATERAL (SELECT s1.* FROM t AS u LIMIT 1) AS s2",
    # a column without an alias is named after Spark's text of its expression, which GROUP BY
    # and ORDER BY may use (group_by_alias, order_by_alias)
    "group by a generated name": _T + "SELECT concat_ws(' ', a, b) FROM t "
                                      "GROUP BY `concat_ws( , a, b)`",
    "order by a generated name": _T + "SELECT concat_ws(' ', a, b) FROM t "
                                      "ORDER BY `concat_ws( , a, b)`",
    "count(*) is named count(1)": _T + "SELECT count(*) FROM t ORDER BY `count(1)`",
    "group by a generated name of subqueries":
        _T + "SELECT (SELECT a FROM t) + (SELECT b FROM t) FROM parsed_events "
             "GROUP BY `(scalarsubquery() + scalarsubquery())`",
    # each expression of grouping sets is a column of the grouped rows (grouping_set)
    "order by a grouping set's expression": _T + "SELECT a, b FROM t "
                                                 "GROUP BY GROUPING SETS (a, b, b + 1) ORDER BY `(b + 1)`",
    # CTEs of one name in nested WITH clauses, and pipe aliases of one name (cte, pipe_operators)
    "one CTE name in two WITH clauses": "WITH t AS (SELECT 1 AS a FROM parsed_events) SELECT * "
                                        "FROM (WITH t AS (SELECT 2 AS a FROM parsed_events) "
                                        "SELECT * FROM t)",
    # a relation's grouped column (order_by_and_having_on_top_of_aggregate_with_join)
    "a grouped column by its relation": _TU + "SELECT sum(b) AS s FROM t NATURAL JOIN u "
                                              "GROUP BY t.a ORDER BY t.a",
    "another relation's column inside an aggregate":
        _TU + "SELECT sum(b) AS s FROM t NATURAL JOIN u GROUP BY t.a ORDER BY max(u.a)",
    # ORDER BY over HAVING (order_by_and_having_on_top_of_aggregate_with_join): what HAVING
    # reads of the select list, an ORDER BY of outputs and grouped columns, no HAVING
    "order by an alias, HAVING on it": _T + "SELECT sum(b) AS s FROM t GROUP BY a HAVING s > 5 "
                                            "ORDER BY s",
    "order by an aggregate, HAVING on the select list's":
        _T + "SELECT sum(b) FROM t GROUP BY a HAVING sum(b) > 5 ORDER BY sum(b)",
    "order by a grouped column over HAVING":
        _T + "SELECT sum(b) AS s FROM t GROUP BY a HAVING max(b) > 5 ORDER BY a + 1",
    "order by an aggregate without HAVING": _T + "SELECT sum(b) AS s FROM t GROUP BY a "
                                                 "ORDER BY max(b)",
    "order by a select-list item HAVING filters on": _T + "SELECT sum(b) + 1 FROM t "
                                                           "HAVING sum(b) + 1 > 0 ORDER BY sum(b) + 1",
    # grouping() of a grouping set's expression, however written (group_analytics)
    "grouping of a rollup's column": _T + "SELECT a, grouping(t.a) AS g FROM t "
                                          "GROUP BY a, b WITH ROLLUP",
    "grouping of a grouping set's expression": _T + "SELECT a + 1 AS c, grouping(a + 1) AS g "
                                                    "FROM t GROUP BY GROUPING SETS ((a + 1), ())",
    "grouping_id of a cube": _T + "SELECT a, grouping_id(a, b) AS g FROM t GROUP BY CUBE (a, b)",
    # * EXCEPT of columns that do not overlap; the fields EXTRACT takes (selectexcept, extract)
    "except two columns": _T + "SELECT * EXCEPT (a, b) FROM t",
    "extract's fields": "SELECT EXTRACT(DOW_ISO FROM timestamp) AS d, date_part('yrs', timestamp) "
                        "AS y, EXTRACT(secs FROM timestamp) AS s FROM parsed_events",
    # ORDER BY after a set operation: its result's columns, or the first branch's by relation
    "order a union by its column": _T + "SELECT a FROM t UNION ALL SELECT b FROM t ORDER BY a",
    "order a union by the first branch's relation":
        _T + "SELECT a FROM t UNION ALL SELECT b FROM t ORDER BY t.a",
    # the functions Spark 4.2 calls without parentheses (current_database_catalog)
    "niladic functions": "SELECT current_date AS d, current_user AS u, user AS v, "
                         "session_user AS s, current_path AS p FROM parsed_events",
    # ORDER BY names the select list's alias, not the relation's two columns of that name
    # (name_precedence_in_order_by_and_having_with_conflicting_attributes)
    "order by an alias over a relation's repeated name":
        "SELECT 3 AS col1 FROM (SELECT 1 AS col1, 2 AS col1 FROM parsed_events) ORDER BY col1",
    # one column selected twice is one column (pipe_operators, cte)
    "a column its relation selects twice": _T + "SELECT u.a AS x FROM (SELECT a, b, a FROM t) AS u",
    # an aggregating SELECT's other aliases stay seen next to a generator's of the same name
    "an alias next to a generator's, with an aggregate":
        "SELECT 1 AS p, posexplode(array('x')) AS (p2, v), p * 10 AS q, count(*) AS n "
        "FROM parsed_events",
    # GROUP BY ALL groups by the items without an aggregate (group_by_all)
    "group by all, an item with an aggregate over grouped columns":
        _T + "SELECT a, a + count(*) AS n FROM t GROUP BY ALL",
    "group by all, a generator's arguments without an aggregate":
        _T + "SELECT stack(2, a + 10L, count(b)) FROM t GROUP BY ALL",
    # a subquery's HAVING compares its group with the enclosing query's column (subquery_in)
    "outer reference in a subquery's HAVING":
        _T + "SELECT a, min(b) AS m FROM t WHERE b IN (SELECT max(u.b) FROM t AS u "
             "GROUP BY u.a HAVING u.a > t.a) GROUP BY a",
}

#: SQL Spark refuses -> the rule compile refuses it with.
REFUSED = {
    "pipe drop, then the dropped column":
        ("SELECT 1 AS x, 2 AS y FROM parsed_events |> DROP x |> SELECT x", "unknown-column"),
    "a generated name Spark does not give": (
        _T + "SELECT concat_ws(' ', a, b) FROM t GROUP BY `concat_ws(' ', a, b)`",
        "unknown-column"),
    "a grouping expression's name without grouping sets": (
        _T + "SELECT a, count(*) AS n FROM t GROUP BY a, b + 1 ORDER BY `(b + 1)`",
        "unknown-column"),
    "one CTE name twice in one WITH": (
        "WITH t AS (SELECT 1 AS a FROM parsed_events), T AS (SELECT 2 AS a FROM parsed_events) "
        "SELECT * FROM t", "query-shape"),
    "another relation's column of the grouped name": (
        _TU + "SELECT sum(b) AS s FROM t NATURAL JOIN u GROUP BY t.a ORDER BY u.a",
        "missing-aggregation"),
    "another relation's column of the grouped name, joined on": (
        _TU + "SELECT sum(b) AS s FROM t JOIN u ON t.a = u.a GROUP BY t.a HAVING u.a > 0",
        "missing-aggregation"),
    "order by an aggregate over HAVING on another": (
        _T + "SELECT sum(b) AS s FROM t GROUP BY a HAVING max(b) > 5 ORDER BY max(b)",
        "query-shape"),
    "order by a grouped expression over HAVING on a column": (
        _T + "SELECT sum(b) AS s FROM t GROUP BY a + 1 HAVING a + 1 > 0 ORDER BY a + 1",
        "query-shape"),
    "grouping without grouping sets": (_T + "SELECT a, grouping(a) AS g FROM t GROUP BY a",
                                       "grouping-shape"),
    "grouping of no grouping set's expression": (
        _T + "SELECT a, grouping(b) AS g FROM t GROUP BY ROLLUP (a)", "query-shape"),
    "except one column twice": (_T + "SELECT * EXCEPT (a, a) FROM t", "query-shape"),
    "except a column and its field": (
        "SELECT * EXCEPT (user, user.country) FROM parsed_events", "query-shape"),
    "extract a field Spark does not have": (
        "SELECT EXTRACT(EPOCH FROM timestamp) AS e FROM parsed_events", "query-shape"),
    "date_part of a field Spark does not have": (
        "SELECT date_part('microseconds', timestamp) AS e FROM parsed_events", "query-shape"),
    "except a column no relation has": (_T + "SELECT * EXCEPT (c) FROM t", "unknown-column"),
    "two relations of one alias": (
        "WITH s(x) AS (SELECT 42 FROM parsed_events) SELECT s.x FROM "
        "(SELECT 10 FROM parsed_events) AS s(x) CROSS JOIN s", "ambiguous-column"),
    "order a union by the second branch's column": (
        _T + "SELECT a FROM t EXCEPT SELECT b FROM t ORDER BY b", "unknown-column"),
    "current_catalog without parentheses": (
        "SELECT current_catalog AS c FROM parsed_events", "unknown-column"),
    "localtimestamp without parentheses": (
        "SELECT localtimestamp AS c FROM parsed_events", "unknown-column"),
    "a name its relation has twice": (
        "SELECT col1 AS c FROM (SELECT 1 AS col1, 2 AS col1 FROM parsed_events) AS t",
        "ambiguous-column"),
    "a name its relation has twice, qualified": (
        "SELECT t.col1 AS c FROM (SELECT 1 AS col1, 2 AS col1 FROM parsed_events) AS t",
        "ambiguous-column"),
    "a generator's alias in GROUP BY": (
        _T + "SELECT a, explode(array(1, 2)) AS e FROM t GROUP BY a, e", "unknown-column"),
    "a generator's alias in an aggregating select list": (
        "SELECT explode(array(1, 2)) AS c, c + 1 AS d, count(*) AS n FROM parsed_events",
        "unknown-column"),
    "group by all, a column outside an item's aggregate": (
        _T + "SELECT a + count(*) AS n FROM t GROUP BY ALL", "missing-aggregation"),
    "generator inputs are not seen by HAVING":
        (_T + "SELECT stack(2, 'x', count(*), a, 'y', 0L, 1) AS (p, q, r), b FROM t "
              "GROUP BY _gen_input_3, b HAVING _gen_input_3 > 0", "unknown-column"),
    "generator input ordinal, another column not grouped":
        (_T + "SELECT b, explode(array(a)) FROM t GROUP BY 2", "missing-aggregation"),
    "group by a repeated alias, the second not grouped":
        (_T + "SELECT a AS x, b AS x, count(*) AS n FROM t GROUP BY x", "missing-aggregation"),
    "outer star of no relation": (
        "SELECT (SELECT t3.* FROM (SELECT 2 AS c2 FROM parsed_events) AS t2 LIMIT 1) AS v "
        "FROM (SELECT 1 AS c1 FROM parsed_events) AS t1", "unknown-column"),
    "the subquery's own column not grouped in its HAVING":
        (_T + "SELECT a FROM t WHERE b IN (SELECT max(u.b) FROM t AS u GROUP BY u.a "
              "HAVING u.b > t.a) GROUP BY a", "missing-aggregation"),
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


def _columns(project: Project, sql: str) -> list[str]:
    model = RenderedModel("m", "models/m.sql", sql, ModelConfig(), ())
    result = lint_models(project, [model], deadline=time.monotonic() + 60)
    return [c.name for c in result.columns["m"]]


def test_columns_without_an_alias_have_the_names_spark_gives_them(project: Project) -> None:
    """Spark's own names (its analysed schema of the same SELECT, in the corpus): operators in
    parentheses, literals bare, calls by the name written, a cast of a column by the
    column, a field of a column by the field (tests/spark/test_lint_resolution_vs_spark.py
    checks them against Spark)."""
    sql = NAMED
    assert _columns(project, sql) == SPARK_NAMES


def test_a_field_of_a_value_is_named_after_its_text(project: Project) -> None:
    """Spark names ``f(x).a`` after the whole text, not ``a``: two of them are no duplicate."""
    sql = ("SELECT from_json(eventId, 'a INT').a, from_json(request.method, 'a INT').a "
           "FROM parsed_events")
    assert "duplicate-output-column" not in _errors(project, sql)


#: A SELECT of columns without an alias, and the names Spark gives them.
NAMED = ("SELECT concat_ws(' ', eventId, 1.50), user.country || 'x', -1, -request.latency_ms, "
         "eventId IS NOT NULL, eventId != 'a', CASE eventId WHEN 'a' THEN 1 ELSE 2 END, "
         "IF(eventId = 'x', 1, 2), errors[0], upper(user.country), CAST(eventId AS INT), "
         "CAST(user.country AS DECIMAL(4, 2)), 1L, user.country, (SELECT 1) FROM parsed_events")
SPARK_NAMES = [
    "concat_ws( , eventId, 1.50)", "concat(user.country, x)", "-1", "(- request.latency_ms)",
    "(eventId IS NOT NULL)", "(NOT (eventId = a))", "CASE WHEN (eventId = a) THEN 1 ELSE 2 END",
    "(IF((eventId = x), 1, 2))", "errors[0]", "upper(user.country)", "eventId",
    "CAST(user.country AS DECIMAL(4,2))", "1", "country", "scalarsubquery()"]


def test_two_columns_spark_names_alike_are_one_name_twice(project: Project) -> None:
    """CAST(eventId AS INT) is named eventId by Spark: with eventId itself, a Delta table
    cannot hold both."""
    errors = _errors(project, "SELECT eventId, CAST(eventId AS INT) FROM parsed_events")
    assert "duplicate-output-column" in errors
