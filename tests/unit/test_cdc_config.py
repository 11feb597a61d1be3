"""Change-data-capture config: what is missing or does not combine is a model error naming the
file and line (exit 1), never a traceback; a valid CDC model compiles clean and its kind shows."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runner.cli import cli
from tests.support.cdc import CDC_MODEL, CDC_SCHEMA
from tests.support.projects import BASE_YML, EVENT_SCHEMA, write_project

YML = BASE_YML.replace(EVENT_SCHEMA, CDC_SCHEMA).replace("vars:\n  slow_ms: 1000\n", "")
SELECT = "SELECT id, seq, op, name, amount FROM parsed_events"


def _compile(tmp_path, config: str):
    root = write_project(tmp_path, {"models/customers.sql": f"{{{{ config({config}) }}}}\n{SELECT}"},
                         project_yml=YML)
    return CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])


@pytest.mark.parametrize(("config", "message"), [
    ("stored_as_scd_type=2", "stored_as_scd_type=2 needs unique_key and sequence_by"),
    ("materialized='merge', unique_key='id', stored_as_scd_type=2",
     "stored_as_scd_type=2 needs sequence_by"),
    ("materialized='merge', unique_key='id', apply_as_deletes=\"op = 'd'\"",
     "apply_as_deletes needs sequence_by"),
    ("sequence_by='seq'", "sequence_by needs materialized='merge' and unique_key"),
    ("materialized='merge', unique_key='id', sequence_by='seq', merge_condition='true'",
     "merge_update and merge_condition do not combine with sequence_by"),
    ("materialized='merge', unique_key='id', sequence_by='id'", "is a unique_key column"),
    ("materialized='merge', unique_key='id', sequence_by='seq', "
     "track_history_column_list=['name']", "track_history_column_list needs stored_as_scd_type=2"),
])
def test_cdc_config_errors_name_what_is_missing(tmp_path, config: str, message: str) -> None:
    result = _compile(tmp_path, config)
    assert result.exit_code == 1, result.output
    assert "models/customers.sql:1" in result.output and message in result.output, result.output
    assert "Traceback" not in result.output


def test_delete_predicate_is_guarded(tmp_path) -> None:
    result = _compile(tmp_path, "materialized='merge', unique_key='id', sequence_by='seq', "
                                "apply_as_deletes=\"reflect('java.lang.System', 'exit', 1) > 0\"")
    assert result.exit_code == 1 and "unsafe-function" in result.output, result.output


def test_cdc_model_compiles_clean_and_docs_show_its_kind(tmp_path) -> None:
    root = write_project(tmp_path, {"models/customers.sql": CDC_MODEL}, project_yml=YML)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 0 and "0 errors, 0 warnings" in result.output, result.output
    manifest = json.loads((root / "target" / "manifest.json").read_text())
    assert "customers" in json.dumps(manifest)


def test_docs_show_the_cdc_kind_and_keys(tmp_path) -> None:
    root = write_project(tmp_path, {"models/customers.sql": CDC_MODEL}, project_yml=YML)
    result = CliRunner().invoke(cli, ["docs", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output
    index = (root / "target" / "docs" / "index.html").read_text()
    assert "cdc scd1" in index
    page = (root / "target" / "docs" / "models" / "customers.html").read_text()
    assert "sequence_by" in page
    assert "op = &#39;d&#39;" in page or "op = 'd'" in page
