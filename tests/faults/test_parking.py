"""A failing model is parked, not fatal (``on_model_error: park``, docs/OPERATIONS.md).

A model whose SQL fails at run time on data of batch 1 only (an ANSI ``DIVIDE_BY_ZERO``):
the run completes every other table, the model and the model that refs it stay at batch 0,
``runner stream --available-now`` exits 1 naming them (and the terminal shows no pyspark JSON
log records), ``runner status`` and ``runner snapshot`` show them; the fixed SQL catches them up
on the next start, every table exact. Both engines: what is checked is what lands in Delta.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.registry import load_registry
from runner.demo import write_demo_files
from runner.errors import ExecutionError, RunnerError
from runner.ops.snapshot import snapshot_of
from runner.ops.status import collect_status, status_lines
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, EXAMPLE_FILES, REPO_ROOT, write_project
from tests.support.reference import DEAD, assert_exact, valid_event

pytestmark = pytest.mark.spark

YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))
BAD_LATENCY = 987654321  # no demo event has it: only the line added to batch 1's file
FRAGILE = f"SELECT eventId, 100 / (request.latency_ms - {BAD_LATENCY}) AS ratio FROM parsed_events\n"
FIXED = (f"SELECT eventId, 100 / NULLIF(request.latency_ms - {BAD_LATENCY}, 0) AS ratio "
         "FROM parsed_events\n")
CHILD = "SELECT eventId FROM {{ ref('fragile') }}\n"
OTHERS = ("request_logs", "error_events", "performance_metrics", DEAD)


def _project(tmp_path: Path, engine: str, *, fragile: str = FRAGILE) -> Path:
    files = {**EXAMPLE_FILES, "models/fragile.sql": fragile, "models/fragile_child.sql": CHILD}
    root = write_project(tmp_path / "proj", files, project_yml=YML, engine=engine)
    (root / "incoming").mkdir(exist_ok=True)
    return root


def _feed(root: Path, seed: int, *, bad: bool = False, age: float = 0.0) -> None:
    """One demo file (one batch: max_files_per_trigger 1); ``bad``: plus one event whose
    latency makes the fragile model divide by zero; ``age``: its mtime that many seconds back
    (Spark takes files oldest first)."""
    incoming = root / "incoming"
    before = set(incoming.glob("*.json"))
    write_demo_files(incoming, events=60, files=1, seed=seed, poison_every=25)
    (path,) = set(incoming.glob("*.json")) - before
    if bad:
        lines = path.read_text().splitlines()
        event = json.loads(next(line for line in lines if valid_event(line)))
        event["eventId"], event["request"]["latency_ms"] = f"bad-{seed}", BAD_LATENCY
        path.write_text("\n".join([*lines, json.dumps(event)]) + "\n")
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))


def _run(root: Path, **kw):
    project = load_project(root)
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _ids(root: Path, files: list[Path]) -> Counter:
    """The event ids the fragile models must hold after ``files``."""
    return Counter(e["eventId"] for f in files for line in f.read_text().splitlines()
                   if (e := valid_event(line)) is not None)


def _table_ids(root: Path, name: str) -> Counter:
    return Counter(read_table(root / "wh" / name).column("eventId").to_pylist())


# The spark engine's run is nightly (30 s on the CI machine; the suite's 25-minute budget).
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_a_failing_model_is_parked_then_caught_up_once_fixed(
        tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine)
    _feed(root, 1)
    _run(root)  # batch 0: every model fine
    first = sorted((root / "incoming").glob("*.json"))
    _feed(root, 2, bad=True, age=30)  # batch 1: fragile divides by zero
    _feed(root, 3)  # batch 2: fragile would be fine, but it is parked
    # Through the CLI, in its own process: exit 1, one line per parked model, no pyspark
    # JSON log record with a Java stack trace on the terminal.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("RUNNER_FAILPOINTS", None)
    done = subprocess.run([sys.executable, "-m", "runner", "stream", "--available-now",
                           "--project-dir", str(root)], capture_output=True, text=True,
                          env=env, timeout=300, check=False, cwd=REPO_ROOT)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "model fragile (models/fragile.sql) parked from batch 1: [DIVIDE_BY_ZERO]" in out
    # Spark's message shown once and clean: the class once, no SQLSTATE, no ';' of its plan dump
    assert out.count("DIVIDE_BY_ZERO") == out.count("parked from batch 1: [DIVIDE_BY_ZERO]"), out
    assert "SQLSTATE" not in out and ";;" not in out, out
    assert "model fragile_child (models/fragile_child.sql) parked from batch 1: its " \
           "ancestor fragile failed" in out
    assert "2 model(s) parked during this run: fragile, fragile_child" in out
    assert "SQLQueryContextLogger" not in out and "\tat org.apache" not in out, out[:3000]
    assert_exact(root / "incoming", root / "wh", OTHERS)  # every other table has batches 0..2
    assert _table_ids(root, "fragile") == _ids(root, first)  # still at batch 0
    assert _table_ids(root, "fragile_child") == _ids(root, first)
    registry = load_registry(root / "cp")
    assert registry is not None
    assert (registry["fragile"].state, registry["fragile"].left_at) == ("parked", 1)
    assert "DIVIDE_BY_ZERO" in registry["fragile"].error
    assert registry["fragile_child"].error == "its ancestor fragile failed"
    status = collect_status(load_project(root))
    assert status.to_dict()["parked"]["fragile"]["since"] == 1
    assert any("fragile" in line and "PARKED since batch 1" in line
               for line in status_lines(status))
    snap = snapshot_of(load_project(root))
    assert snap.batch_id == 2 and snap.tables["fragile"].parked_since == 1
    assert "parked_since" not in snap.to_dict()["tables"]["request_logs"]

    (root / "models" / "fragile.sql").write_text(FIXED)
    through_batch_2 = sorted((root / "incoming").glob("*.json"))
    _feed(root, 4)
    summary = _run(root)  # catches up batches 1..2 from the history, then batch 3
    assert not summary.parked
    everything = sorted((root / "incoming").glob("*.json"))
    assert_exact(root / "incoming", root / "wh", OTHERS)
    assert _table_ids(root, "fragile") == _ids(root, everything)  # nothing lost, nothing twice
    assert _table_ids(root, "fragile_child") == _ids(root, everything)
    registry = load_registry(root / "cp")
    assert registry is not None and registry["fragile"].state == "live"
    # The catch-up restates the ledger (runner.runtime.start.restate): the snapshot of batch 2, which
    # said fragile lagged, now names the version of fragile holding exactly batches 0..2.
    old = snapshot_of(load_project(root), batch=2)
    assert old.tables["fragile"].parked_since is None
    at_2 = old.delta_table("fragile")
    assert at_2 is not None
    rows = at_2.to_pyarrow_dataset().to_table(use_threads=False)
    assert Counter(rows.column("eventId").to_pylist()) == _ids(root, through_batch_2)
    assert snapshot_of(load_project(root)).tables["fragile"].parked_since is None


def test_a_parked_model_that_fails_again_stays_parked_and_a_replay_parks_it_again(
        tmp_path: Path, delta_engine: str, armed) -> None:
    root = _project(tmp_path, delta_engine)
    _feed(root, 1)
    _feed(root, 2, bad=True)
    first = [min((root / "incoming").glob("*.json"), key=lambda p: p.stat().st_mtime)]
    os.utime(first[0], (time.time() - 60, time.time() - 60))
    # The batch that parks fragile dies after its ledger entry, before Spark's commit log.
    armed("batch.after_ledger@1")
    with pytest.raises(RunnerError):
        _run(root)
    armed("")
    registry = load_registry(root / "cp")
    assert registry is not None and registry["fragile"].left_at == 1
    summary = _run(root)  # the replay of batch 1 parks it again; the others skip it
    assert set(summary.parked) == {"fragile", "fragile_child"}
    assert_exact(root / "incoming", root / "wh", OTHERS)
    assert _table_ids(root, "fragile") == _ids(root, first)
    # Restarted without a fix: the catch-up fails again on batch 1: still parked, the run
    # goes on for the others (a new batch).
    _feed(root, 3)
    summary = _run(root)
    assert {p.batch_id for p in summary.parked.values()} == {1}
    assert_exact(root / "incoming", root / "wh", OTHERS)
    assert _table_ids(root, "fragile") == _ids(root, first)
    registry = load_registry(root / "cp")
    assert registry is not None and registry["fragile"].state == "parked"


def test_on_model_error_halt_fails_the_batch_naming_the_model(
        tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine,
                    fragile="{{ config(\n    on_model_error='halt'\n) }}\n" + FRAGILE)
    _feed(root, 2, bad=True)
    with pytest.raises(ExecutionError, match="model fragile failed in batch 0") as caught:
        _run(root)
    # the division's place in the file (line 4), not in the compiled SQL (line 2)
    assert (caught.value.path, caught.value.line, caught.value.column) == \
        ("models/fragile.sql", 4, 17)
    assert str(caught.value).startswith("models/fragile.sql:4:17: model fragile failed")
    registry = load_registry(root / "cp")
    assert registry is not None and registry["fragile"].state != "parked"
