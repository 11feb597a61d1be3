"""Issue 31: each model's name in the catalog, decided by compile offline (no metastore):
project.yml's ``catalog: {schema: ...}``, dbt's ``schema=``/``alias=`` per model, one name per
model, ``relation_name`` in target/manifest.json. No Spark."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from runner.cli import cli
from runner.compile.relations import Relation
from tests.support.projects import BASE_YML, write_project

REQUESTS = "SELECT eventId, request.endpoint AS endpoint FROM parsed_events\n"
CATALOG_YML = BASE_YML + "catalog:\n  schema: analytics\n"


def _compile(root: Path):
    return CliRunner().invoke(cli, ["compile", "--project-dir", str(root), "--format", "json"])


def _manifest(root: Path) -> dict:
    return json.loads((root / "target" / "manifest.json").read_text())


def test_names_default_to_the_schema_and_file_name_and_config_overrides(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {
        "models/requests.sql": REQUESTS,
        "models/orders.sql": "{{ config(schema='Finance', alias='orders_v2') }}\n" + REQUESTS,
    }, project_yml=CATALOG_YML)
    result = _compile(root)
    assert result.exit_code == 0, result.output
    models = _manifest(root)["models"]
    assert models["requests"]["relation_name"] == "analytics.requests"
    assert models["orders"]["relation_name"] == "finance.orders_v2"  # the metastore's case
    assert models["orders"]["config"]["schema"] == "Finance"


def test_a_catalog_name_gives_three_part_names(tmp_path: Path) -> None:
    yml = BASE_YML + "catalog:\n  name: lake\n  schema: analytics\n"
    root = write_project(tmp_path / "p", {"models/requests.sql": REQUESTS}, project_yml=yml)
    assert _compile(root).exit_code == 0
    assert _manifest(root)["models"]["requests"]["relation_name"] == "lake.analytics.requests"


def test_two_models_with_one_name_is_a_model_error_naming_both_files(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {
        "models/requests.sql": REQUESTS,
        "models/other.sql": "{{ config(alias='requests') }}\n" + REQUESTS,
    }, project_yml=CATALOG_YML)
    result = _compile(root)
    assert result.exit_code == 1
    assert "models/other.sql" in result.output and "models/requests.sql" in result.output
    assert "analytics.requests" in result.output


def test_without_catalog_nothing_changes_and_schema_alias_are_refused(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"models/requests.sql": REQUESTS})
    assert _compile(root).exit_code == 0
    assert _manifest(root)["models"]["requests"]["relation_name"] is None
    (root / "models" / "requests.sql").write_text("{{ config(alias='r2') }}\n" + REQUESTS)
    result = _compile(root)
    assert result.exit_code == 1
    assert "no catalog:" in result.output and "catalog: {schema:" in result.output


def test_a_name_that_is_not_an_identifier_is_refused(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {
        "models/requests.sql": "{{ config(alias='x; DROP TABLE y') }}\n" + REQUESTS,
    }, project_yml=CATALOG_YML)
    result = _compile(root)
    assert result.exit_code == 1 and "alias" in result.output
    bad = write_project(tmp_path / "q", {"models/requests.sql": REQUESTS},
                        project_yml=BASE_YML + "catalog:\n  schema: 'a.b'\n")
    assert _compile(bad).exit_code == 2


def test_names_are_sql_through_the_ast() -> None:
    relation = Relation("analytics", "orders", catalog="lake")
    assert relation.table().sql(dialect="spark") == "`lake`.`analytics`.`orders`"
    assert Relation.parse(relation.dotted) == relation


def test_docs_show_each_models_name(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {
        "models/orders.sql": "{{ config(schema='finance', alias='orders_v2') }}\n" + REQUESTS,
    }, project_yml=CATALOG_YML)
    result = CliRunner().invoke(cli, ["docs", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output
    docs = root / "target" / "docs"
    assert "<code>finance.orders_v2</code>" in (docs / "index.html").read_text()
    assert "<code>finance.orders_v2</code>" in (docs / "models" / "orders.html").read_text()
