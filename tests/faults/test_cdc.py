"""Change data capture (SCD 1 and SCD 2) exactly once: a change log with inserts, updates, deletes, late
and duplicate changes for a few hundred keys, cut into batches several ways, the stream killed
at a random moment (a real process dying with ``os._exit(137)`` at a failpoint), restarted,
and the table compared with the reference computed from the whole log in plain Python
(:mod:`tests.support.cdc`): identical for every cut, on both engines.

The default suite runs one cut per engine and SCD type (SCD 2 on fewer keys: each of its
batches reads back the touched keys' change log); the other cuts are ``slow``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.cdc import (
    CDC_MODEL,
    CDC_SCHEMA,
    SCD2_MODEL,
    change_log,
    cut,
    history_reference,
    history_rows,
    reference,
    table_rows,
    write_batches,
)
from tests.support.projects import BASE_YML, EVENT_SCHEMA, write_project

pytestmark = pytest.mark.spark

YML = (BASE_YML.replace(EVENT_SCHEMA, CDC_SCHEMA).replace("vars:\n  slow_ms: 1000\n", "")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))
MODEL = "customers"
#: Where a kill may land: inside the model's sink (its tombstones' commit or its table's, the
#: first that fires), between sinks and Spark's commit log, or at the start of a batch.
KILL_POINTS = (f"sink.before_commit:{MODEL}", f"sink.after_commit:{MODEL}",
               "batch.after_sinks", "batch.start")


def _project(tmp_path: Path, engine: str, batches: list[list[dict]], model: str = CDC_MODEL):
    root = write_project(tmp_path / "proj", {f"models/{MODEL}.sql": model},
                         project_yml=YML, engine=engine)
    write_batches(root / "incoming", batches)
    return load_project(root)


def _run(project) -> None:
    run_stream(project, compile_project(project).plan, mode="available_now", trigger="1 second")


def _kill_once(project, point: str, batch_id: int) -> str:
    """``runner stream --available-now`` in its own process, dying at ``point@batch_id``."""
    env = {**os.environ, "RUNNER_FAILPOINTS": f"{point}@{batch_id}=exit"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(project.root),
         "--available-now"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=300)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return f"exit {proc.returncode}: {out[-3000:]}"


def _check(project, log: list[dict], note: str, *, scd: int = 1) -> None:
    expected: dict = reference(log) if scd == 1 else history_reference(log)
    actual: dict = (table_rows if scd == 1 else history_rows)(project.warehouse / MODEL)
    wrong = {k for k in expected.keys() | actual.keys()
             if k not in actual or k not in expected
             or {c: actual[k][c] for c in expected[k]} != expected[k]}
    assert not wrong, (f"{len(wrong)} of {len(expected)} rows differ from the reference "
                       f"({note}), e.g. "
                       + "; ".join(f"{k}: expected {expected.get(k)}, got {actual.get(k)}"
                                   for k in sorted(wrong)[:3]))


def _cut_and_kill(tmp_path: Path, engine: str, how: str, seed: int, *, scd: int = 1,
                  keys: int = 300) -> None:
    log = change_log(keys=keys, seed=seed)
    batches = cut(log, how, seed=seed)
    project = _project(tmp_path, engine, batches, CDC_MODEL if scd == 1 else SCD2_MODEL)
    rng = random.Random(seed)
    point, batch_id = rng.choice(KILL_POINTS), rng.randrange(1, len(batches))
    note = f"scd {scd}, cut {how}, killed at {point}@{batch_id}"
    out = _kill_once(project, point, batch_id)
    assert "exit 137" in out, f"{note}: the kill did not happen: {out}"
    _run(project)  # the restart: replays the killed batch, then the rest
    _check(project, log, note, scd=scd)


# The default run kills each SCD type on the rs engine, the spark engine in the slow set (the
# suite's time budget: the SCD 2 kill took 138 s on spark, 50 s on rs in the CI rehearsal).
# Both engines share the CDC sink module, and tests/spark/test_cdc_sink.py writes it on both
# in the default run (replays skipped, late changes, deletes); every engine and type still
# runs in `-m slow`.
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_cdc_killed_at_random_equals_the_reference(tmp_path, delta_engine) -> None:
    _cut_and_kill(tmp_path, delta_engine, "random:6", seed=11)


# Nightly (24 s on the CI machine): random kills of the CDC path stay in the default suite
# (test_cdc_killed_at_random_equals_the_reference); this is its SCD 2 variant.
@pytest.mark.slow
@pytest.mark.parametrize("delta_engine", ["rs", "spark"], indirect=True)
def test_scd2_killed_at_random_equals_the_reference(tmp_path, delta_engine) -> None:
    _cut_and_kill(tmp_path, delta_engine, "random:4", seed=21, scd=2, keys=80)


@pytest.mark.slow
@pytest.mark.parametrize(("how", "seed"), [("one", 3), ("even:9", 5), ("singles:5", 8),
                                           ("random:12", 13)])
@pytest.mark.parametrize("scd", [1, 2])
def test_cdc_every_cut_killed_at_random(tmp_path, delta_engine, how, seed, scd) -> None:
    _cut_and_kill(tmp_path, delta_engine, how, seed, scd=scd)


def test_rebuild_and_backfill_of_a_cdc_model_give_the_same_table(tmp_path) -> None:
    """``--full-refresh --select`` drops the table with its tombstones and rebuilds it from
    the history; a CDC model new to the checkpoint is backfilled from it: the same rows as the
    reference. Both go through the writer's own ``drop`` and the per-batch path the other
    tests run on both engines; run on rs, the faster one on this machine."""
    log = change_log(keys=200, seed=4)
    project = _project(tmp_path, "rs", cut(log, "even:3"))
    _run(project)
    _check(project, log, "before the rebuild")
    tombstones = project.warehouse / MODEL / "_runner_tombstones" / "_delta_log"
    assert tombstones.is_dir()
    (project.root / "models" / "later.sql").write_text(CDC_MODEL)  # new: backfilled
    project = load_project(project.root)
    run_stream(project, compile_project(project).plan, mode="available_now",
               trigger="1 second", rebuild=[MODEL])
    _check(project, log, "after the rebuild")
    later = {k: {c: r[c] for c in ("id", "seq", "op", "name", "amount")}
             for k, r in table_rows(project.warehouse / "later").items()}
    assert later == reference(log)


def test_cdc_reference_sees_late_deletes_and_duplicates() -> None:
    """The generated log exercises what the contract is about (no Spark)."""
    log = change_log(keys=300, seed=11)
    ops = {c["op"] for c in log}
    assert ops == {"c", "u", "d"}
    seqs = [c["seq"] for c in log]
    assert len(seqs) > len(set(seqs)), "no duplicates"
    assert any(a > b for a, b in zip(seqs, seqs[1:], strict=False)), "no late changes"
    assert 0 < len(reference(log)) < 300
