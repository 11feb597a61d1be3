"""``runner compile --state`` (runner/compile/state.py): what a change does to each deployed
model's table, at compile time, as the stream's start-up would (runner/runtime/start/evolution.py):
the pull request sees a refusal before it is merged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import write_project

DEPLOYED = {
    "models/grows.sql": "SELECT eventId, user.country AS country FROM parsed_events",
    "models/grows_ok.sql": "{{ config(on_schema_change='append_new_columns') }}\n"
                           "SELECT eventId FROM parsed_events",
    "models/shrinks.sql": "SELECT eventId, user.country AS country FROM parsed_events",
    "models/retyped.sql": "SELECT eventId, request.latency_ms AS ms FROM parsed_events",
    "models/same.sql": "SELECT eventId FROM parsed_events",
    "models/gone.sql": "SELECT eventId FROM parsed_events",
}
CHANGED = {
    "models/grows.sql": "SELECT eventId, user.country AS country, user.userId AS uid "
                        "FROM parsed_events",
    "models/grows_ok.sql": "{{ config(on_schema_change='append_new_columns') }}\n"
                           "SELECT eventId, user.userId AS uid FROM parsed_events",
    "models/shrinks.sql": "SELECT eventId FROM parsed_events",
    "models/retyped.sql": "SELECT eventId, CAST(request.latency_ms AS STRING) AS ms "
                          "FROM parsed_events",
    "models/fresh.sql": "{{ config(backfill=false) }}\nSELECT eventId FROM parsed_events",
}


def _compile(root: Path, *args: str):
    return CliRunner().invoke(cli, ["compile", "--project-dir", str(root), *args])


@pytest.fixture
def deployed(tmp_path: Path) -> tuple[Path, Path]:
    """(project root, the deployed manifest's folder) after the change."""
    root = write_project(tmp_path / "proj", DEPLOYED)
    assert _compile(root).exit_code == 0
    prod = tmp_path / "prod"
    shutil.copytree(root / "target", prod)
    (root / "models" / "gone.sql").unlink()
    write_project(root, CHANGED)
    return root, prod


def test_state_reports_what_the_next_start_would_do(deployed) -> None:
    root, prod = deployed
    assert _compile(root).exit_code == 0  # without --state the change compiles clean
    result = _compile(root, "--state", str(prod))
    assert result.exit_code == 1, result.output
    out = result.output
    assert "models/grows.sql: error [state] grows gains columns uid, and on_schema_change " \
           "is 'fail': the stream refuses to start with it" in out
    assert "grows_ok gains columns uid: the next start adds them" in out
    assert "shrinks's output changes against the deployed table (columns removed: country)" \
        in out
    assert "types changed: ms INT -> STRING" in out
    assert "new model fresh: written from the next batch on (backfill=false)" in out
    assert "model gone is gone or disabled: its table stays" in out
    assert "same" not in out.replace("the same", "")


def test_state_takes_the_manifest_file_and_json_output(deployed) -> None:
    root, prod = deployed
    result = _compile(root, "--state", str(prod / "manifest.json"), "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.output)
    found = {(v["path"], v["severity"]) for v in doc["violations"] if v["rule"] == "state"}
    assert ("models/grows.sql", "error") in found and ("models/fresh.sql", "warn") in found


@pytest.mark.parametrize("content", [None, "not json", '{"no": "models"}'])
def test_a_bad_state_exits_2(tmp_path: Path, content: str | None) -> None:
    root = write_project(tmp_path / "proj", {"models/m.sql": "SELECT eventId FROM parsed_events"})
    state = tmp_path / "state.json"
    if content is not None:
        state.write_text(content)
    result = _compile(root, "--state", str(state))
    assert result.exit_code == 2, result.output
    assert "--state:" in result.output
