"""A Delta table at a model's location (or the dead-letter table's) that this pipeline did not
write is refused at start, exit 2, before the Spark session: nothing is written into it, and
``--full-refresh`` does not drop it (runner/sinks/ownership.py).

The foreign tables are written with plain deltalake (``write_deltalake``), as another job
would; the refusals happen before any engine is chosen, so these run without a JVM (the spark
engine's own foreign table, written by Spark, is in tests/spark/test_foreign_tables.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import CommitProperties, DeltaTable, write_deltalake

from runner.build import compile_project
from runner.cli import cli
from runner.errors import ConfigError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.ownership import foreign_table
from tests.support.projects import ENDPOINT_COUNTS, write_project

FOREIGN = pa.table({"endpoint": ["/a", "/b"], "requests": [10, 20], "errors": [1, 2]})


def _project(tmp_path: Path):
    root = write_project(tmp_path / "proj", {"models/endpoint_counts.sql": ENDPOINT_COUNTS})
    (root / "incoming").mkdir()
    (root / "incoming" / "e.json").write_text(json.dumps({
        "eventId": "e1", "timestamp": "2024-01-01T00:00:00Z",
        "request": {"endpoint": "/a", "method": "GET", "latency_ms": 5, "status_code": 200}})
        + "\n")
    return load_project(root)


def _read(path: Path) -> tuple[int, list[dict]]:
    table = DeltaTable(str(path))
    rows = table.to_pyarrow_dataset().to_table(use_threads=False).to_pylist()
    return table.version(), sorted(rows, key=lambda r: r["endpoint"])


def _stream(project, **kw):
    plan = compile_project(project).plan
    return run_stream(project, plan, mode="available_now", trigger="1 second", **kw)


@pytest.mark.parametrize("full_refresh", [False, True], ids=["start", "full-refresh"])
def test_a_table_written_by_another_job_is_refused_and_left_alone(tmp_path, full_refresh) -> None:
    project = _project(tmp_path)
    path = project.table_path("endpoint_counts")
    write_deltalake(str(path), FOREIGN)
    write_deltalake(str(path), FOREIGN.slice(0, 1), mode="append")
    before = _read(path)
    with pytest.raises(ConfigError) as caught:
        _stream(project, full_refresh=full_refresh)
    e = caught.value
    assert e.exit_code == 2
    assert f"the table of model endpoint_counts is at {path}" in e.message
    assert "holds 2 data files at version 1 and no commit of this runner" in e.message
    assert "WRITE by delta-rs" in e.message, e.message
    assert e.hint is not None and "move that table elsewhere" in e.hint
    assert "rename models/endpoint_counts.sql" in e.hint
    assert _read(path) == before  # neither merged into nor dropped
    assert before[1][0] == {"endpoint": "/a", "requests": 10, "errors": 1}


def test_the_command_exits_2_naming_the_table(tmp_path) -> None:
    project = _project(tmp_path)
    path = project.table_path("endpoint_counts")
    write_deltalake(str(path), FOREIGN)
    result = CliRunner().invoke(cli, ["stream", "--available-now", "--project-dir",
                                      str(project.root)])
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and "did not write" in result.output
    assert "internal error" not in result.output
    assert _read(path) == (0, sorted(FOREIGN.to_pylist(), key=lambda r: r["endpoint"]))


def test_a_foreign_dead_letter_table_is_refused(tmp_path) -> None:
    project = _project(tmp_path)
    path = project.table_path(project.config.dead_letter)
    write_deltalake(str(path), pa.table({"raw": ["x"], "reason": ["theirs"]}))
    with pytest.raises(ConfigError, match="the dead-letter table is at") as caught:
        _stream(project)
    assert caught.value.hint is not None and "dead_letter:" in caught.value.hint
    assert DeltaTable(str(path)).version() == 0


def test_another_pipelines_table_is_refused_naming_its_app_id(tmp_path) -> None:
    project = _project(tmp_path)
    path = project.table_path("endpoint_counts")
    write_deltalake(str(path), FOREIGN, commit_properties=CommitProperties(
        custom_metadata={"runner.app_id": "billing.endpoint_counts.q1"}))
    with pytest.raises(ConfigError, match=r"another pipeline \(app id "
                                          r"billing\.endpoint_counts\.q1\)"):
        _stream(project)


def test_what_counts_as_ours(tmp_path) -> None:
    """Empty tables, this pipeline's tags (any checkpoint), this checkpoint's query id (a
    renamed model's table) and this checkpoint's app transaction are ours; nothing else."""
    def check(path: Path, run_id: str | None = "q9") -> str | None:
        return foreign_table(str(path), pipeline="test_pipeline", model="m", run_id=run_id)

    assert check(tmp_path / "none") is None
    empty = tmp_path / "empty"
    write_deltalake(str(empty), FOREIGN.slice(0, 0))  # a name registered ahead: no file
    assert check(empty) is None

    def tagged(name: str, app: str) -> Path:
        write_deltalake(str(tmp_path / name), FOREIGN, commit_properties=CommitProperties(
            custom_metadata={"runner.app_id": app}))
        return tmp_path / name

    assert check(tagged("other_checkpoint", "test_pipeline.m.q1")) is None
    assert check(tagged("renamed_model", "test_pipeline.old_name.q9")) is None
    assert check(tagged("renamed_model2", "old_pipeline.m.q9")) is None
    assert check(tagged("other_pipeline", "test_pipelinex.m.q9x")) is not None
    assert check(tagged("untagged", "")) is not None
    txn = tmp_path / "txn"
    from deltalake.transaction import Transaction

    write_deltalake(str(txn), FOREIGN, commit_properties=CommitProperties(
        app_transactions=[Transaction(app_id="test_pipeline.m.q9", version=3)]))
    assert check(txn) is None and check(txn, run_id=None) is not None
