"""Exactly once at the edges of the operations the runner offers: each either keeps every
table exact or refuses before it changes anything (exit 2 through the CLI: a ConfigError).

Both engines: what is checked is what lands in Delta tables.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.identity import IDENTITY_FILE
from runner.checkpoint.registry import REGISTRY_FILE
from runner.demo import write_demo_files
from runner.errors import ConfigError, RunnerError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import current_version
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project
from tests.support.reference import assert_exact

pytestmark = pytest.mark.spark

YML = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
DISABLED = "{{ config(enabled=false) }}\n"


def _project(tmp_path: Path, engine: str):
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=YML, engine=engine)
    (root / "incoming").mkdir(exist_ok=True)
    return root


def _feed(root: Path, seed: int) -> None:
    write_demo_files(root / "incoming", events=120, files=1, seed=seed, poison_every=40)


def _run(root: Path, **kw):
    project = load_project(root)
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def test_re_enabling_a_model_kept_through_a_full_refresh_is_refused_then_rebuilt(
        tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine)
    model = root / "models" / "error_events.sql"
    sql = model.read_text()
    _feed(root, 1)
    _run(root)
    model.write_text(DISABLED + sql)  # disabled: its table is kept ...
    _run(root, full_refresh=True)  # ... through a full refresh (a new checkpoint)
    _feed(root, 2)
    _run(root)
    model.write_text(sql)  # back: before, it was backfilled from batch 0 into the old table
    table = root / "wh" / "error_events"
    version, registry = current_version(table), (root / "cp" / REGISTRY_FILE).read_text()
    with pytest.raises(ConfigError, match="(?s)error_events already holds batches of another "
                                          "checkpoint.*--full-refresh --select"):
        _run(root)
    assert current_version(table) == version  # nothing changed
    assert (root / "cp" / REGISTRY_FILE).read_text() == registry
    _run(root, rebuild=["error_events"])  # the way out the message names
    assert_exact(root / "incoming", root / "wh", ("request_logs", "error_events", "performance_metrics"))


def test_renaming_the_pipeline_between_a_crash_and_its_replay_is_refused(
        tmp_path: Path, delta_engine: str, armed) -> None:
    root = _project(tmp_path, delta_engine)
    _feed(root, 1)
    _run(root)
    _feed(root, 2)
    armed("sink.after_commit:request_logs@1")  # batch 1 dies after one table committed it
    with pytest.raises(RunnerError):
        _run(root)
    armed("")
    yml = (root / "project.yml").read_text()
    (root / "project.yml").write_text(yml.replace("name: test_pipeline", "name: renamed"))
    version = current_version(root / "wh" / "request_logs")
    with pytest.raises(ConfigError, match="(?s)belongs to pipeline 'test_pipeline'.*"
                                          "name: test_pipeline"):
        _run(root)  # before: the replay wrote batch 1 into request_logs a second time
    assert current_version(root / "wh" / "request_logs") == version
    # A checkpoint made before the record: the tables' app ids tell the name.
    (root / "cp" / IDENTITY_FILE).unlink()
    with pytest.raises(ConfigError, match="belongs to pipeline 'test_pipeline'"):
        _run(root)  # before: the new name was recorded and the replay wrote batch 1 twice
    assert current_version(root / "wh" / "request_logs") == version
    assert not (root / "cp" / IDENTITY_FILE).exists()
    (root / "project.yml").write_text(yml)
    _run(root)
    assert_exact(root / "incoming", root / "wh", ("request_logs", "error_events", "performance_metrics"))
    record = json.loads((root / "cp" / IDENTITY_FILE).read_text())
    assert record == {"name": "test_pipeline", "source": "files:incoming"}
