"""Sources and seeds at compile time: declarations, rendering, columns, the plan's lookups
(docs/OPERATIONS.md)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from runner.build import compile_project
from runner.errors import ConfigError
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
          - {name: since, data_type: date}
"""

ENRICHED = """
SELECT e.eventId, c.segment, o.team
FROM parsed_events e
LEFT JOIN {{ source('crm', 'customers') }} c ON c.customer_id = e.user.userId
LEFT JOIN {{ ref('endpoint_owners') }} o ON o.endpoint = e.request.endpoint
"""

OWNERS = "endpoint,team,weight\n/a,core,1\n/b,edge,2\n"


def _project(tmp_path, files):
    return load_project(write_project(tmp_path, files))


def test_source_and_seed_fill_the_plans_lookups(tmp_path) -> None:
    project = _project(tmp_path, {"models/sources.yml": CRM, "models/enriched.sql": ENRICHED,
                                  "seeds/endpoint_owners.csv": OWNERS})
    result = compile_project(project)
    assert result.errors == ()
    step = result.plan.step("enriched")
    assert step.lookups == ("crm__customers", "endpoint_owners")
    assert step.depends_on == ()
    assert "LEFT JOIN crm__customers c" in step.sql and "LEFT JOIN endpoint_owners o" in step.sql
    by_view = {lk.view: lk for lk in result.plan.lookups}
    crm, seed = by_view["crm__customers"], by_view["endpoint_owners"]
    assert (crm.kind, crm.name, crm.catalog) == ("source", "crm.customers", False)
    assert crm.location == str((tmp_path / "ref" / "customers").resolve())
    assert [(c.name, c.type) for c in crm.columns] == [
        ("customer_id", "STRING"), ("segment", "STRING"), ("since", "DATE")]
    assert (seed.kind, seed.location) == ("seed", str(tmp_path / "seeds" / "endpoint_owners.csv"))
    assert [(c.name, c.type) for c in seed.columns] == [
        ("endpoint", "STRING"), ("team", "STRING"), ("weight", "BIGINT")]
    assert seed.content_hash and len(seed.content_hash) == 64
    assert [(c.name, c.type) for c in step.columns] == [
        ("eventId", "STRING"), ("segment", "STRING"), ("team", "STRING")]
    manifest = result.plan.to_manifest()
    assert set(manifest["lookups"]) == {"crm__customers", "endpoint_owners"}
    assert manifest["models"]["enriched"]["lookups"] == ["crm__customers", "endpoint_owners"]


def test_columns_are_read_from_the_delta_log_when_omitted(tmp_path) -> None:
    table = tmp_path / "ref" / "customers"
    write_deltalake(str(table), pa.table({
        "customer_id": pa.array(["u1"], pa.string()),
        "score": pa.array([1], pa.int64()),
        "tags": pa.array([["a"]], pa.list_(pa.string())),
        "address": pa.array([{"city": "x", "zip": 1}],
                            pa.struct([("city", pa.string()), ("zip", pa.int32())]))}))
    project = _project(tmp_path, {
        "models/sources.yml": "sources: [{name: crm, tables: [{name: customers, "
                              "path: ref/customers}]}]",
        "models/m.sql": "SELECT c.customer_id, c.address.city FROM {{ source('crm', "
                        "'customers') }} c JOIN parsed_events e ON e.user.userId = c.customer_id"})
    result = compile_project(project)
    assert result.errors == ()
    (lookup,) = result.plan.lookups
    assert [(c.name, c.type) for c in lookup.columns] == [
        ("customer_id", "STRING"), ("score", "BIGINT"), ("tags", "ARRAY<STRING>"),
        ("address", "STRUCT<city: STRING, zip: INT>")]


def test_declared_columns_differing_from_the_table_are_an_error(tmp_path) -> None:
    write_deltalake(str(tmp_path / "ref" / "customers"), pa.table({
        "customer_id": pa.array([1], pa.int64()), "region": pa.array(["eu"], pa.string())}))
    project = _project(tmp_path, {"models/sources.yml": CRM, "models/enriched.sql": ENRICHED,
                                  "seeds/endpoint_owners.csv": OWNERS})
    with pytest.raises(ConfigError) as e:
        compile_project(project)
    message = e.value.message
    assert "customer_id is declared STRING, the table has BIGINT" in message
    assert "segment is declared but not in the table" in message
    assert "region (STRING) is in the table but not declared" in message
    assert e.value.path == "models/sources.yml" and e.value.line == 4


def test_undeclared_unreadable_source_says_what_to_do(tmp_path) -> None:
    project = _project(tmp_path, {
        "models/sources.yml": "sources: [{name: crm, tables: [{name: customers, "
                              "path: ref/missing}]}]",
        "models/m.sql": "SELECT customer_id FROM {{ source('crm', 'customers') }}"})
    with pytest.raises(ConfigError, match="source crm.customers: its columns are not declared "
                                          "and there is no Delta table at") as e:
        compile_project(project)
    assert "declare columns" in (e.value.hint or "")


@pytest.mark.parametrize(("call", "match"), [
    ("source('crm', 'customer')", "source 'crm' has no table 'customer' (did you mean 'customers'?)"),
    ("source('cmr', 'customers')", "unknown source 'cmr' (did you mean 'crm'?)"),
    ("ref('endpoint_owner')", "unknown model or seed 'endpoint_owner' (did you mean "
                              "'endpoint_owners'?)"),
])
def test_unknown_source_or_seed_did_you_mean(tmp_path, call, match) -> None:
    project = _project(tmp_path, {"models/sources.yml": CRM,
                                  "seeds/endpoint_owners.csv": OWNERS,
                                  "models/m.sql": f"SELECT 1 AS x FROM {{{{ {call} }}}}"})
    result = compile_project(project)
    assert [v.rule for v in result.errors] == ["template"]
    assert match in result.errors[0].message
    assert (result.errors[0].path, result.errors[0].line) == ("models/m.sql", 1)


@pytest.mark.parametrize(("body", "match", "hint"), [
    ("{% if is_incremental() %}WHERE 1 = 1{% endif %}", "is_incremental() is dbt's",
     "materialized='merge'"),
    ("FROM {{ this }}", "{{ this }} is dbt's: a model does not read its own table", "merge"),
    ("{{ this.name }}", "{{ this }} is dbt's", "merge"),
    ("{{ config(materialized='incremental') }}", "materialized='incremental' is dbt's",
     "every model is incremental here"),
    ("{{ config(materialized='table') }}", "materialized='table' is dbt's", "writes each batch"),
    ("{{ config(materialized='view') }}", "materialized='view' is dbt's", "no views of models"),
    ("{{ config(post_hook='OPTIMIZE t') }}", "unknown key 'post_hook'",
     "post_hook is dbt's: no SQL runs around a model here"),
    ("{{ config(incremental_strategy='merge') }}", "unknown key 'incremental_strategy'",
     "incremental_strategy is dbt's: every model is incremental"),
    ("-- {{ target.name }}", "{{ target }} is dbt's profile target", "{{ var('name') }}"),
    ("{{ log('building') }}", "log() is dbt's", "target/compiled"),
    ("{% set r = run_query('SELECT 1') %}", "run_query() is dbt's", "source("),
    ("{{ dbt_utils.star(ref('m')) }}", "dbt_utils is a dbt package", "macros/*.sql"),
    ("{{ adapter.quote('x') }}", "{{ adapter }} is dbt's", "macro"),
])
def test_dbt_habits_say_what_to_write_instead(tmp_path, body, match, hint) -> None:
    project = _project(tmp_path, {"models/m.sql": f"SELECT eventId FROM parsed_events\n{body}"})
    result = compile_project(project)
    (error,) = result.errors
    assert (error.rule, error.path, error.line) == ("template", "models/m.sql", 2)
    assert match in error.message and "undefined" not in error.message
    assert hint in (error.hint or "")
