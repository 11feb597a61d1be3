"""SIGKILL during a backfill (docs/RELIABILITY.md): ``runner stream`` in its own process dies
with no cleanup (a failpoint's ``exit``: ``os._exit(137)``) inside a backfill, between two of
its sink commits, and after the handover before the stream's first batch; each restart ends
with every table exact. In-process failpoints at every step: ``tests/spark/test_backfill.py``;
a crash loop adding models mid-run: ``python -m bench.crash_loop --add-models``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from runner.build import compile_project
from runner.checkpoint.query_id import read_query_id
from runner.checkpoint.registry import load_registry
from runner.demo import write_demo_files
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.base import app_id
from tests.support.events import results_into
from tests.support.projects import (
    BASE_YML,
    ENDPOINT_COUNTS,
    EXAMPLE_FILES,
    REPO_ROOT,
    SLOW_REQUESTS,
    write_project,
)
from tests.support.reference import DEAD, actual_tables, expected_tables

#: ``slow`` (120 s in CI: five runner processes, three killed), for the default suite's budget:
#: the default run crashes a backfill in process at the same points
#: (tests/spark/test_backfill.py, ``POINTS``); this runs them as real SIGKILLs in the slow set.
pytestmark = [pytest.mark.spark, pytest.mark.slow]

YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))
NEW = ("endpoint_counts", "slow_requests")


def _feed(root: Path) -> None:
    write_demo_files(root / "incoming", events=200, files=1, poison_every=40)


def _run(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _killed_run(root: Path, failpoint: str) -> str:
    """``runner stream --available-now`` in its own process group, dying at ``failpoint``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--available-now", "--progress", "json"],
        env={**os.environ, "RUNNER_FAILPOINTS": f"{failpoint}=exit"}, cwd=REPO_ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM and the Python workers
        except ProcessLookupError:
            pass
    assert proc.returncode == 137, out[-3000:]
    return out


def _committed(project, model: str) -> int | None:
    path = str(project.table_path(model))
    if not DeltaTable.is_deltatable(path):
        return None
    return DeltaTable(path).transaction_version(
        app_id(project.config.name, model, read_query_id(project.checkpoint)))


def test_sigkill_inside_between_and_after_a_backfill(tmp_path) -> None:
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=YML)
    (root / "incoming").mkdir()
    for _ in range(3):
        _feed(root)
    assert _run(load_project(root)).batches == 3
    write_project(root, {"models/endpoint_counts.sql": ENDPOINT_COUNTS,
                         "models/slow_requests.sql": SLOW_REQUESTS}, project_yml=YML)
    project = load_project(root)

    # 1. killed right after backfill batch 1 committed: both tables hold batches 0..1
    out = _killed_run(root, "backfill.after_commit:endpoint_counts@1")
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    backfilled = [r["backfill"]["batch_id"] for r in records
                  if r["type"] == "backfill_progress"]
    assert backfilled == [0]  # batch 1 committed, killed before it was reported
    assert {m: _committed(project, m) for m in NEW} == dict.fromkeys(NEW, 1)
    assert load_registry(project.checkpoint)["endpoint_counts"].state == "backfilling"

    # 2. killed inside batch 2, after the merge's commit (the other sink may or may not have
    # committed: they run in parallel)
    _killed_run(root, "sink.after_commit:endpoint_counts@2")
    assert _committed(project, "endpoint_counts") == 2

    # 3. killed after the handover, before the stream's first batch (a new file waits)
    _feed(root)
    _killed_run(root, "backfill.after_live")
    assert {m: e.state for m, e in load_registry(project.checkpoint).items()
            if m in NEW} == dict.fromkeys(NEW, "live")
    assert {m: _committed(project, m) for m in NEW} == dict.fromkeys(NEW, 2)

    # the restart runs batch 3 with every model; every table is exact
    batches = []
    _run(project, report=results_into(batches))
    assert [b.batch_id for b in batches] == [3]
    names = ("request_logs", "error_events", "performance_metrics", DEAD, *NEW)
    expected = expected_tables(root / "incoming", names)
    actual = actual_tables(project.warehouse)
    for name in names:
        assert expected[name] == actual[name], name
