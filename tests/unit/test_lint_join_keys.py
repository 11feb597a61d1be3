"""merge-key-not-unique through joins (runner/lint/resolution/join_keys.py): a join on a unique key of
the other side keeps this side's key unique; seeds' keys are read from the file, sources' from
a declared ``unique`` test; anything lint cannot prove stays an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.build import compile_project
from runner.errors import ConfigError
from runner.project.loader import load_project
from runner.project.seeds import seed_keys
from tests.support.projects import write_project

MERGE = "{{ config(materialized='merge', unique_key='endpoint') }}\n"
AGG = ("WITH agg AS (SELECT request.endpoint AS endpoint, count(*) AS n\n"
       "             FROM parsed_events GROUP BY request.endpoint)\n")
OWNERS = "endpoint,team,team_id\n/a,core,1\n/b,core,2\n"  # endpoint and team_id are keys
DUPLICATED = "endpoint,team,team_id\n/a,core,1\n/a,edge,2\n"


def _rules(tmp_path: Path, sql: str, *, owners: str = OWNERS, yml: str | None = None,
           ) -> list[str]:
    files = {"seeds/owners.csv": owners, "models/m.sql": MERGE + sql}
    if yml is not None:
        files["models/sources.yml"] = yml
    result = compile_project(load_project(write_project(tmp_path, files)))
    return [v.rule for v in result.violations if v.severity == "error"]


USERS_CASE = AGG + ("SELECT agg.endpoint, agg.n, o.team\n"
                    "FROM agg LEFT JOIN {{ ref('owners') }} o ON agg.endpoint = o.endpoint")


def test_the_users_case_a_group_by_left_joined_to_a_seed_on_its_key_compiles_clean(
        tmp_path: Path) -> None:
    assert _rules(tmp_path, USERS_CASE) == []


def test_the_same_join_on_a_seed_whose_key_repeats_is_refused(tmp_path: Path) -> None:
    assert _rules(tmp_path, USERS_CASE, owners=DUPLICATED) == ["merge-key-not-unique"]


@pytest.mark.parametrize("sql", [
    # a subquery as the left side, an INNER join, the key passed on by a star
    "SELECT a.*, o.team FROM (SELECT request.endpoint AS endpoint, count(*) AS n FROM "
    "parsed_events GROUP BY 1) a JOIN {{ ref('owners') }} o ON o.endpoint = a.endpoint",
    # the unique side on the left of a RIGHT join; more conditions only match fewer rows
    AGG + "SELECT agg.endpoint, o.team FROM {{ ref('owners') }} o RIGHT JOIN agg\n"
          "ON agg.endpoint = o.endpoint AND o.team <> 'x'",
    # two lookups, each on its key
    AGG + "SELECT agg.endpoint, o.team, p.team AS other FROM agg\n"
          "LEFT JOIN {{ ref('owners') }} o ON agg.endpoint = o.endpoint\n"
          "LEFT JOIN (SELECT DISTINCT team FROM {{ ref('owners') }}) p ON p.team = o.team",
    # a semi join keeps each row at most once whatever it matches
    AGG + "SELECT agg.endpoint FROM agg LEFT SEMI JOIN {{ ref('owners') }} o "
          "ON o.team = 'core'",
])
def test_joins_that_keep_the_key_unique_pass(tmp_path: Path, sql: str) -> None:
    assert _rules(tmp_path, sql) == []


@pytest.mark.parametrize("sql", [
    # a join on a column that is not the seed's key (team repeats)
    AGG + "SELECT agg.endpoint, o.team FROM agg LEFT JOIN {{ ref('owners') }} o "
          "ON agg.endpoint = o.team",
    # a FULL join: the seed's rows no row of agg matches add rows whose endpoint is null
    AGG + "SELECT agg.endpoint, o.team FROM agg FULL OUTER JOIN {{ ref('owners') }} o "
          "ON agg.endpoint = o.endpoint",
    # the unique side at the other end: agg's endpoint is null for every owner not matched
    AGG + "SELECT agg.endpoint, o.team FROM {{ ref('owners') }} o LEFT JOIN agg "
          "ON agg.endpoint = o.endpoint",
    # the key comes from the lookup, not from agg
    AGG + "SELECT o.endpoint, agg.n FROM agg LEFT JOIN {{ ref('owners') }} o "
          "ON agg.endpoint = o.endpoint",
    # a key of another type: a cast to a number may make two of the seed's values one
    AGG + "SELECT agg.endpoint, o.team FROM agg LEFT JOIN {{ ref('owners') }} o "
          "ON agg.endpoint = o.team_id",
    # a null-safe comparison matches the seed's rows whose key is empty, all of them
    AGG + "SELECT agg.endpoint, o.team FROM agg LEFT JOIN {{ ref('owners') }} o "
          "ON agg.endpoint <=> o.endpoint",
    # the same relation twice: lint cannot tell its columns apart, so it proves nothing
    AGG + "SELECT a.endpoint FROM agg a JOIN agg b ON a.endpoint = b.endpoint",
])
def test_joins_that_do_not_prove_the_key_are_refused(tmp_path: Path, sql: str) -> None:
    assert _rules(tmp_path, sql) == ["merge-key-not-unique"]


CRM = """
sources:
  - name: crm
    tables:
      - name: endpoints
        path: ref/endpoints
        columns:
          - name: endpoint
            data_type: string{tests}
          - {{name: tier, data_type: string}}
        {table_tests}
"""
SOURCE_CASE = AGG + ("SELECT agg.endpoint, c.tier FROM agg\n"
                     "LEFT JOIN {{ source('crm', 'endpoints') }} c ON c.endpoint = agg.endpoint")


@pytest.mark.parametrize(("tests", "table_tests", "errors"), [
    ("\n            data_tests: [unique]", "", []),
    ("\n            tests: [not_null, dbt.unique]", "", []),
    ("", "data_tests: [{unique_combination_of_columns: {combination_of_columns: [endpoint]}}]",
     []),
    ("", "data_tests: [{unique: {columns: [endpoint]}}]", []),
    ("", "", ["merge-key-not-unique"]),
    ("\n            data_tests: [not_null]", "", ["merge-key-not-unique"]),
    # a test that checks some rows only, or is switched off or a warning, is no key
    ("\n            data_tests: [{unique: {where: \"tier = 'a'\"}}]", "", ["merge-key-not-unique"]),
    ("\n            data_tests: [{unique: {config: {enabled: false}}}]", "",
     ["merge-key-not-unique"]),
    ("\n            data_tests: [{unique: {config: {severity: warn}}}]", "",
     ["merge-key-not-unique"]),
    ("", "data_tests: [{unique_combination_of_columns: {combination_of_columns: [endpoint, "
         "tier]}}]", ["merge-key-not-unique"]),
])
def test_a_source_key_is_a_declared_unique_test(tmp_path: Path, tests: str, table_tests: str,
                                                errors: list[str]) -> None:
    yml = CRM.format(tests=tests, table_tests=table_tests)
    assert _rules(tmp_path, SOURCE_CASE, yml=yml) == errors


@pytest.mark.parametrize(("tests", "table_tests", "message"), [
    ("\n            data_tests: [{accepted_values: {values: [a]}}]", "",
     "declare keys: unique"),
    ("\n            data_tests: [uniqe]", "", "did you mean 'unique'"),
    ("", "data_tests: [{unique: {columns: [endpont]}}]", "endpont"),
    ("", "data_tests: [unique]", "columns"),
])
def test_a_source_test_lint_cannot_use_is_a_config_error(tmp_path: Path, tests: str,
                                                         table_tests: str, message: str) -> None:
    yml = CRM.format(tests=tests, table_tests=table_tests)
    with pytest.raises(ConfigError) as e:
        load_project(write_project(tmp_path, {"models/sources.yml": yml,
                                              "models/m.sql": "SELECT 1 AS x"}))
    assert message in str(e.value)


def test_seed_keys_compare_typed_values_and_count_one_empty_cell(tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path, {
        "seeds/s.csv": "a,b,c,d,e\n1,x,,2026-01-01T00:00:00Z,\n01,X,5,2026-01-01 01:00:00+01:00,\n"
                       "2,y,6,,1\n",
        "models/m.sql": "SELECT 1 AS x"}))
    (seed,) = project.seeds
    # a: 1 and 01 are one BIGINT; d: one instant twice; e: two nulls (one group, as GROUP BY)
    assert seed_keys(seed) == (frozenset({"b"}), frozenset({"c"}))
    assert seed_keys(seed) is seed_keys(seed)  # read once
