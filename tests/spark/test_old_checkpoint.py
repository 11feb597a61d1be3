"""A checkpoint and warehouse written by main at 943e661 (before the checkpoint directory got
its own package, ``runner.checkpoint``) keep working: every file under the checkpoint keeps its
format, so today's runner reads its status and history and streams on with every table exact.

The fixture (``tests/fixtures/checkpoint_943e661``) is the example project plus the
accumulating ``endpoint_counts`` merge, after one ``runner stream --available-now`` of that
commit over two input files. One engine (rs, as written): what is tested is the checkpoint's
format, which no engine owns; engine hand-over has tests of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.registry import load_registry
from runner.checkpoint.spark_logs import last_committed
from runner.demo import write_demo_files
from runner.ops.status import collect_status
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sources.history import file_batches
from tests.support.reference import actual_tables, compare, expected_tables

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint_943e661"
WRITTEN_AT = "file:///tmp/oldcp/proj/"  # where the fixture was made: Spark's file log says so


def _relocate(root: Path) -> None:
    """Point the file source's log at the copy (it names files by absolute URI); the log's
    checksum file goes with the old content (Hadoop verifies it when present)."""
    for entry in (root / "cp" / "sources" / "0").iterdir():
        if entry.name.startswith("."):
            entry.unlink()
        else:
            entry.write_text(entry.read_text().replace(WRITTEN_AT, root.as_uri() + "/"))


@pytest.mark.spark
def test_a_checkpoint_written_by_the_previous_layout_streams_on_exactly(
        spark, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    _relocate(root)
    project = load_project(root)
    cp = project.checkpoint
    assert last_committed(cp) == 0
    assert set(load_registry(cp) or {}) == {"endpoint_counts", "error_events",
                                            "performance_metrics", "request_logs"}
    assert [len(b.files) for b in file_batches(cp, through=0)] == [2]
    status = collect_status(project)
    assert status.snapshot_batch == 0 and status.committed_batch == 0
    assert {t.name: t.last_batch for t in status.tables if t.name != "_dead_letter"} == {
        "endpoint_counts": 0, "error_events": 0, "performance_metrics": 0, "request_logs": 0}

    write_demo_files(root / "incoming", events=50, files=1, seed=3, poison_every=20)
    summary = run_stream(project, compile_project(project).plan, mode="available_now",
                         trigger="1 second")
    assert summary.batches == 1
    assert last_committed(cp) == 1
    diff = compare(expected_tables(root / "incoming", owners=None),  # its models join no seed
                   actual_tables(project.warehouse))
    wrong = {name: d for name, d in diff.items() if d["lost"] or d["duplicated_or_extra"]}
    assert wrong == {}
    assert diff["request_logs"]["actual_rows"] > 114  # the old batch and the new one
