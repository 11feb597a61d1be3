"""Lint over sources and seeds: their columns are known (unknown column, types through
joins), join keys of different types warn, and the guard still refuses every other table."""

from __future__ import annotations

import pytest

from runner.build import compile_project
from runner.project.loader import load_project
from tests.support.projects import write_project

CRM = """
sources:
  - name: crm
    tables:
      - name: customers
        path: ref/customers
        columns:
          - {name: customer_id, data_type: string}
          - {name: segment, data_type: string}
          - {name: signup_day, data_type: date}
"""
OWNERS = "endpoint,team,team_id\n/a,core,1\n/b,edge,2\n"


def _compile(tmp_path, sql: str):
    project = load_project(write_project(tmp_path, {
        "models/sources.yml": CRM, "seeds/endpoint_owners.csv": OWNERS, "models/m.sql": sql}))
    return compile_project(project)


def test_unknown_column_of_a_source_with_did_you_mean(tmp_path) -> None:
    result = _compile(tmp_path, "SELECT c.customer_id, c.segmnt\n"
                                "FROM {{ source('crm', 'customers') }} c")
    (error,) = result.errors
    assert (error.rule, error.line) == ("unknown-column", 1)
    assert "segmnt" in error.message and "did you mean 'segment'" in error.message


def test_unknown_column_of_a_seed(tmp_path) -> None:
    result = _compile(tmp_path, "SELECT o.owner FROM {{ ref('endpoint_owners') }} o")
    (error,) = result.errors
    assert error.rule == "unknown-column" and "owner" in error.message


def test_types_flow_from_sources_and_seeds_through_joins(tmp_path) -> None:
    result = _compile(tmp_path, """
        SELECT e.eventId, c.signup_day, o.team_id + 1 AS next_team
        FROM parsed_events e
        JOIN {{ source('crm', 'customers') }} c ON c.customer_id = e.user.userId
        JOIN {{ ref('endpoint_owners') }} o ON o.endpoint = e.request.endpoint""")
    assert result.errors == () and not [v for v in result.violations
                                        if v.rule == "join-key-types"]
    assert [(c.name, c.type) for c in result.plan.step("m").columns] == [
        ("eventId", "STRING"), ("signup_day", "DATE"), ("next_team", "BIGINT")]


@pytest.mark.parametrize(("on", "left", "right"), [
    ("o.team_id = e.request.endpoint", "BIGINT", "STRING"),
    ("c.signup_day = e.timestamp", "DATE", "TIMESTAMP"),
    ("e.user.userId = o.team_id AND o.endpoint = e.request.endpoint", "STRING", "BIGINT"),
])
def test_join_key_types_warns_on_keys_of_different_types(tmp_path, on, left, right) -> None:
    result = _compile(tmp_path, f"""
        SELECT e.eventId FROM parsed_events e
        JOIN {{{{ source('crm', 'customers') }}}} c ON c.customer_id = e.user.userId
        JOIN {{{{ ref('endpoint_owners') }}}} o ON {on}""")
    (warning,) = [v for v in result.violations if v.rule == "join-key-types"]
    assert warning.severity == "warn" and result.errors == ()
    assert f"({left}) is compared with" in warning.message and f"({right})" in warning.message
    assert warning.line == 3 and "CAST(" in (warning.hint or "")


def test_join_key_types_passes_keys_of_one_family(tmp_path) -> None:
    result = _compile(tmp_path, """
        SELECT e.eventId FROM parsed_events e
        JOIN {{ ref('endpoint_owners') }} o ON o.team_id = e.request.latency_ms""")
    assert [v for v in result.violations if v.rule == "join-key-types"] == []


@pytest.mark.parametrize(("sql", "rule", "match"), [
    ("SELECT * FROM delta.`/data/customers` JOIN {{ source('crm', 'customers') }} c ON true",
     "unsafe-table", "delta.`/data/customers`"),
    ("SELECT * FROM crm.customers JOIN {{ ref('endpoint_owners') }} o ON true",
     "unsafe-table", "crm.customers"),
    ("SELECT * FROM crm__customers", "unknown-table",
     "'crm__customers' is read without source() or ref()"),
    ("SELECT * FROM endpoint_owners", "unknown-table",
     "'endpoint_owners' is read without source() or ref()"),
    ("SELECT * FROM crm__customer JOIN {{ source('crm', 'customers') }} c ON true",
     "unknown-table", "did you mean 'crm__customers'"),
])
def test_guard_refuses_other_tables_next_to_declared_lookups(tmp_path, sql, rule, match) -> None:
    result = _compile(tmp_path, sql)
    assert rule in [v.rule for v in result.errors]
    assert any(match in v.message for v in result.errors if v.rule == rule), result.errors


def test_direct_read_of_a_lookup_hints_the_call(tmp_path) -> None:
    result = _compile(tmp_path, "SELECT * FROM crm__customers")
    (error,) = [v for v in result.errors if v.rule == "unknown-table"]
    assert "{{ source('crm', 'customers') }}" in (error.hint or "")
