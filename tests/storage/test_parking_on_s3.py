"""Parking and catch-up with the source folder, the checkpoint and the warehouse in a bucket
(moto's S3 server), both engines: tests/faults/test_parking.py's scenario. A model whose SQL
divides by zero on batch 1's data only is parked with the model that refs it; every other table
goes on (batches 0..2, exact); the registry in the bucket, ``runner status`` and ``runner
snapshot`` say so; the fixed SQL catches both up from the history in the bucket on the next
start, exactly once, and the catch-up restates the snapshot of batch 2. Tables are read back
with delta-rs through the bucket.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from runner.checkpoint.registry import load_registry
from runner.ops.snapshot import snapshot_of
from runner.ops.status import collect_status
from runner.project.loader import load_project
from runner.sinks.tables import read_table
from runner.storage.objects import ObjectPath
from tests.faults.test_parking import CHILD, FIXED, FRAGILE, OTHERS, YML, _feed, _ids, _run
from tests.support.locations import put
from tests.support.projects import EXAMPLE_FILES, write_project
from tests.support.reference import assert_exact

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # four runs against the bucket per engine


def _upload(root: Path, uri: str) -> None:
    """The input files not in the bucket yet, oldest first, each in a second of its own (S3
    listings give the second: Spark takes files oldest first)."""
    for path in sorted((root / "incoming").glob("*.json"), key=lambda p: p.stat().st_mtime):
        target = ObjectPath("s3", uri.removeprefix("s3://"), f"incoming/{path.name}")
        if not target.is_file():
            time.sleep(1.1)
            put(target, path.read_bytes())


def _table_ids(uri: str, name: str) -> Counter:
    return Counter(read_table(f"{uri}/wh/{name}").column("eventId").to_pylist())


def test_a_parked_model_catches_up_from_the_history_in_a_bucket(
        tmp_path: Path, s3_bucket, monkeypatch, delta_engine: str) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    uri = s3_bucket.uri
    yml = (YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n"))
    files = {**EXAMPLE_FILES, "models/fragile.sql": FRAGILE, "models/fragile_child.sql": CHILD}
    root = write_project(tmp_path / "proj", files, project_yml=yml, engine=delta_engine)
    (root / "incoming").mkdir()  # the local copies the reference reads
    project = load_project(root)
    assert isinstance(project.checkpoint, ObjectPath)

    _feed(root, 1)
    _upload(root, uri)
    _run(root)  # batch 0: every model fine
    first = sorted((root / "incoming").glob("*.json"))
    _feed(root, 2, bad=True, age=30)  # batch 1: fragile divides by zero
    _feed(root, 3)  # batch 2: fragile would be fine, but it is parked
    _upload(root, uri)
    summary = _run(root)
    assert set(summary.parked) == {"fragile", "fragile_child"}
    assert {p.batch_id for p in summary.parked.values()} == {1}
    assert_exact(root / "incoming", project.warehouse, OTHERS)  # batches 0..2
    assert _table_ids(uri, "fragile") == _ids(root, first)  # still at batch 0
    assert _table_ids(uri, "fragile_child") == _ids(root, first)
    registry = load_registry(project.checkpoint)
    assert registry is not None
    assert (registry["fragile"].state, registry["fragile"].left_at) == ("parked", 1)
    assert "DIVIDE_BY_ZERO" in registry["fragile"].error
    assert collect_status(project).to_dict()["parked"]["fragile"]["since"] == 1
    snap = snapshot_of(project)
    assert snap.batch_id == 2 and snap.tables["fragile"].parked_since == 1

    (root / "models" / "fragile.sql").write_text(FIXED)
    through_batch_2 = sorted((root / "incoming").glob("*.json"))
    _feed(root, 4)
    _upload(root, uri)
    summary = _run(root)  # batches 1..2 from the history in the bucket, then batch 3
    assert not summary.parked
    everything = sorted((root / "incoming").glob("*.json"))
    assert_exact(root / "incoming", project.warehouse, OTHERS)
    assert _table_ids(uri, "fragile") == _ids(root, everything)  # nothing lost, nothing twice
    assert _table_ids(uri, "fragile_child") == _ids(root, everything)
    registry = load_registry(project.checkpoint)
    assert registry is not None and registry["fragile"].state == "live"
    old = snapshot_of(load_project(root), batch=2)  # restated: fragile at batches 0..2
    assert old.tables["fragile"].parked_since is None
    at_2 = old.delta_table("fragile")
    assert at_2 is not None
    rows = at_2.to_pyarrow_dataset().to_table(use_threads=False)
    assert Counter(rows.column("eventId").to_pylist()) == _ids(root, through_batch_2)
