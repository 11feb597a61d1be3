"""``runner snapshot`` (and ``runner status``) when a table lags behind the batch it names.

The batch a snapshot names must be complete in every table it lists unmarked; a table whose
model sat out the batches since its last one is listed with ``lag`` (why) and ``last_batch``
(its version holds exactly the batches up to it): not selected by ``--select``, disabled,
removed with its table left in place, back and being backfilled, new and being backfilled,
and ``--batch N`` for an N such a table never reached. Parked tables are marked the same way
(tests/faults/test_parking.py). What the CLI says is checked against the tables themselves,
read by delta-rs at the versions it names: the rows of exactly the batches it claims, no more,
no fewer. Both engines: the marks come from what landed in Delta and the checkpoint.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from runner.build import compile_project
from runner.cli import cli
from runner.demo import write_demo_files
from runner.failpoints import FailpointError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.projects import BASE_YML, write_project
from tests.support.reference import DEAD, valid_event

pytestmark = pytest.mark.spark

YML = BASE_YML.replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n")
PICK = "SELECT eventId, _batch_id FROM parsed_events\n"
MODELS = {
    "models/bronze_events.sql": PICK,
    "models/silver_events.sql": PICK,
    "models/sessions.sql": "SELECT eventId, _batch_id FROM {{ ref('silver_events') }}\n",
    "models/muted.sql": PICK,
}
DISABLED = "{{ config(enabled=false) }}\n" + PICK
NOT_SELECTED = "not selected in the last run"


def _feed(root: Path) -> None:
    """One demo file: one batch (max_files_per_trigger 1), taken in name order (mtimes)."""
    incoming = root / "incoming"
    write_demo_files(incoming, events=50, files=1, poison_every=12)
    for i, path in enumerate(sorted(incoming.glob("*.json"))):
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def _run(root: Path, *select: str) -> None:
    project = load_project(root)
    run_stream(project, compile_project(project, select=select).plan, mode="available_now",
               trigger="1 second")


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _snapshot(root: Path, batch: int | None = None) -> dict[str, Any]:
    extra = () if batch is None else ("--batch", str(batch))
    return json.loads(_cli("snapshot", "--project-dir", str(root), "--format", "json", *extra))


def _lines(root: Path, through: int | None) -> list[str]:
    """The lines of batches 0..through (batch k is the k-th file)."""
    files = sorted((root / "incoming").glob("*.json"))[:0 if through is None else through + 1]
    return [line for f in files for line in f.read_text().splitlines() if line.strip()]


def _read(t: dict[str, Any]) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    if t["version"] is None:
        return []
    return DeltaTable(t["path"], version=t["version"]).to_pyarrow_dataset().to_table(
        use_threads=False).to_pylist()


def _holds_exactly(root: Path, name: str, t: dict[str, Any], through: int | None) -> None:
    """Table ``name`` at its snapshot version holds the rows of batches 0..through only."""
    rows = _read(t)
    lines = _lines(root, through)
    if name == DEAD:
        want = len([line for line in lines if valid_event(line) is None])
        assert len(rows) == want, f"{name}: {len(rows)} dead letters, want {want}"
    else:
        want_ids = Counter(e["eventId"] for line in lines if (e := valid_event(line)))
        assert Counter(r["eventId"] for r in rows) == want_ids, (
            f"{name} at version {t['version']}: batches {sorted({r['_batch_id'] for r in rows})}"
            f", want 0..{through}")
    assert {r["_batch_id"] for r in rows} <= set(range(0 if through is None else through + 1))


def _check(root: Path, doc: dict[str, Any], lags: dict[str, tuple[int | None, str]]) -> None:
    """Every table the snapshot lists holds what it says: the unmarked ones exactly the batches
    up to batch_id, the marked ones (``lags``: name -> (last batch, reason)) up to theirs."""
    marked = {n: (t["last_batch"], t["lag"]) for n, t in doc["tables"].items() if "lag" in t}
    assert marked == lags
    for name, t in doc["tables"].items():
        _holds_exactly(root, name, t, t["last_batch"] if "lag" in t else doc["batch_id"])


def test_tables_left_out_of_the_last_runs_are_marked(tmp_path: Path, delta_engine: str,
                                                     armed) -> None:
    root = write_project(tmp_path / "proj", MODELS, project_yml=YML, engine=delta_engine)
    _feed(root)
    _feed(root)
    _run(root)  # batches 0, 1: every model
    (root / "models" / "muted.sql").write_text(DISABLED)
    _feed(root)
    _run(root, "+sessions")  # batch 2: silver_events and sessions only
    doc = _snapshot(root)
    assert doc["batch_id"] == 2
    assert set(doc["tables"]) == {*(Path(m).stem for m in MODELS), DEAD}
    _check(root, doc, {"bronze_events": (1, NOT_SELECTED), "muted": (1, "disabled")})
    _check(root, _snapshot(root, 1), {})  # --batch 1: every table had it
    text = _cli("snapshot", "--project-dir", str(root))
    assert "LAGS: holds batches up to 1 only (not selected in the last run)" in text
    status = json.loads(_cli("status", "--project-dir", str(root), "--format", "json"))
    assert status["tables"]["bronze_events"]["lag"] == NOT_SELECTED
    assert status["tables"]["bronze_events"]["snapshot_last_batch"] == 1
    assert status["tables"]["muted"]["lag"] == "disabled"
    assert status["tables"]["silver_events"]["lag"] is None
    assert "LAGS in snapshot 2" in _cli("status", "--project-dir", str(root))

    # bronze_events is back and a new model joins; the backfill stops half way (newcomer has
    # batches 0..1, bronze_events nothing new): both lag, newcomer with no version in the cut.
    (root / "models" / "newcomer.sql").write_text(PICK)
    armed("backfill.after_commit:newcomer@1=raise")
    with pytest.raises(FailpointError):
        _run(root)
    armed("")
    doc = _snapshot(root)
    _check(root, doc, {"bronze_events": (1, "being backfilled"), "muted": (1, "disabled"),
                       "newcomer": (None, "new, being backfilled")})
    _check(root, _snapshot(root, 1), {"newcomer": (None, "new, being backfilled")})

    _feed(root)
    _run(root)  # the backfill completes (ledger restated), then batch 3
    _check(root, _snapshot(root), {"muted": (1, "disabled")})
    _check(root, _snapshot(root, 2), {"muted": (1, "disabled")})

    (root / "models" / "muted.sql").unlink()  # removed: its table stays where it was
    _feed(root)
    _run(root)  # batch 4
    doc = _snapshot(root)
    assert doc["batch_id"] == 4 and "muted" not in doc["tables"]
    _check(root, doc, {})
    _check(root, _snapshot(root, 3), {"muted": (1, "removed (its SQL file is gone)")})
