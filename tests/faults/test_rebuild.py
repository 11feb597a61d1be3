"""A rebuild (``--full-refresh --select m``) checks, then acts: it refuses before dropping
anything when the history it would replay is incomplete (a new model's backfill too), and
afterwards the snapshot ledger names the rebuilt table's versions, not the dropped table's.

Both engines: what is checked is what lands in Delta tables.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from runner.checkpoint.ledger import Ledger
from runner.checkpoint.registry import REGISTRY_FILE
from runner.errors import ConfigError
from runner.ops.maintain import maintain
from runner.ops.snapshot import snapshot
from runner.project.loader import load_project
from runner.sinks.inspect import open_table
from runner.sinks.tables import current_version
from tests.faults.test_operations import _feed, _project, _run
from tests.support.projects import ENDPOINT_COUNTS
from tests.support.reference import assert_exact, expected_tables

pytestmark = pytest.mark.spark

TABLES = ("request_logs", "error_events", "performance_metrics")


def test_rebuild_refuses_before_dropping_when_an_input_file_is_gone(
        tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine)
    _feed(root, 1)
    _run(root)
    first = sorted((root / "incoming").iterdir())
    _feed(root, 2)
    _run(root)
    gone = first[0]
    kept = gone.read_bytes()
    gone.unlink()  # archived by a retention job: batch 0 can no longer be replayed
    table = root / "wh" / "error_events"
    version, registry = current_version(table), (root / "cp" / REGISTRY_FILE).read_text()
    with pytest.raises(ConfigError, match=rf"(?s){gone.name} \(batch 0\).*put the file\(s\) back"):
        _run(root, rebuild=["error_events"])  # before: dropped, then "history incomplete"
    assert current_version(table) == version  # nothing changed
    assert (root / "cp" / REGISTRY_FILE).read_text() == registry
    new = root / "models" / "endpoint_counts.sql"  # a new model would miss batch 0's rows
    new.write_text(ENDPOINT_COUNTS)
    with pytest.raises(ConfigError, match=r"(?s)cannot backfill endpoint_counts.*"
                                          r"backfill=false"):
        _run(root)
    assert not (root / "wh" / "endpoint_counts").exists()
    assert (root / "cp" / REGISTRY_FILE).read_text() == registry
    new.unlink()
    gone.write_bytes(kept)
    _run(root, rebuild=["error_events"])
    assert_exact(root / "incoming", root / "wh", TABLES)


def _errors_at(path: Path, version: int | None) -> Counter:
    """error_events at ``version``, read with delta-rs, in the reference's shape."""
    if version is None:
        return Counter()
    rows = open_table(str(path), version).to_pyarrow_table().to_pylist()
    return Counter((r["eventId"], r["errorCode"], r["severity"]) for r in rows)


def test_after_a_rebuild_every_snapshot_names_the_rebuilt_tables_versions(
        tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine)
    for seed in (1, 2):
        _feed(root, seed)
        _run(root)
    maintain(load_project(root))  # compaction: the old table's versions run ahead
    _feed(root, 3)
    _run(root)
    assert Ledger(root / "cp").batch_ids() == [0, 1, 2]  # one batch per file
    _run(root, rebuild=["error_events"])
    assert_exact(root / "incoming", root / "wh", TABLES)
    expected = {}
    for batch in (0, 1, 2):
        upto = tmp_path / f"upto{batch}"
        upto.mkdir()
        for f in sorted((root / "incoming").glob("events-*.json"))[:batch + 1]:
            shutil.copy(f, upto / f.name)
        expected[batch] = expected_tables(upto)["error_events"]
    for step in ("rebuilt", "maintained"):  # maintenance keeps what the entries name
        for batch in (0, 1, 2):  # each cut holds exactly the files of batches <= k
            snap = snapshot(root, batch=batch)
            actual = _errors_at(root / "wh" / "error_events", snap.version("error_events"))
            assert actual == expected[batch], f"{step}, batch {batch}"
        maintain(load_project(root))
