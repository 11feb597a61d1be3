"""The batch ledger and consistent snapshots, on tables written by the real delta-rs writer
(no Spark): each entry names versions that hold exactly the batches up to it."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

import runner
from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.cli import cli
from runner.errors import ExecutionError
from runner.sinks.tables import current_version
from tests.support.fake_stream import APPENDS, DEAD, FakeStream, make_project, read


def _stream(tmp_path, **kw) -> FakeStream:
    return FakeStream(make_project(tmp_path / "proj", **kw))


def test_entries_hold_exactly_the_batches_up_to_them(tmp_path) -> None:
    s = _stream(tmp_path)
    s.batch(0, dead=2)
    s.batch(1, errors=0)  # error_events: no rows, no commit
    s.batch(2, requests=["/a", "/a", "/c"], dead=1)
    s.batch(3)  # no dead letters: the dead-letter table keeps its version
    ledger = Ledger(s.project.checkpoint)
    assert ledger.batch_ids() == [0, 1, 2, 3]
    for n in range(4):
        snap = runner.snapshot(s.project.root, batch=n)
        assert snap.batch_id == n
        assert set(snap.tables) == {*APPENDS, "endpoint_counts", DEAD}
        for name in (*APPENDS, DEAD):
            rows = read(snap.path(name), snap.version(name))
            assert {r["_batch_id"] for r in rows} <= set(range(n + 1)), (name, n)
            want = [r for r in s.expected.get(name, []) if r[-1] <= n]
            assert len(rows) == len(want), (name, n)
        counts = {r["endpoint"]: r["requests"] for r in
                  read(snap.path("endpoint_counts"), snap.version("endpoint_counts"))}
        logs = read(snap.path("request_logs"), snap.version("request_logs"))
        assert sum(counts.values()) == len(logs)  # the cross-table invariant of a cut


def test_a_replayed_batch_keeps_its_first_entry(tmp_path) -> None:
    s = _stream(tmp_path)
    s.batch(0)
    s.batch(1, dead=1)
    ledger = Ledger(s.project.checkpoint)
    first = ledger.get(1)
    s.batch(1, dead=1)  # Spark replays batch 1: every sink is skipped
    assert ledger.get(1) == first
    assert ledger.record(LedgerEntry(1, {"request_logs": 99})) is False
    assert ledger.get(1) == first
    assert not [n for n in os.listdir(ledger.folder) if n.startswith(".")]  # no temp files
    assert len(read(str(s.project.table_path("request_logs")))) == 4  # nothing doubled


def test_current_version_probes_from_a_hint_or_the_log(tmp_path) -> None:
    s = _stream(tmp_path)
    for n in range(5):
        s.batch(n)
    table = s.project.table_path("request_logs")
    assert current_version(table) == 4
    assert current_version(table, at_least=2) == 4
    assert current_version(table, at_least=99) == 4  # a wrong hint: the log is listed
    assert current_version(tmp_path / "nope") is None


def test_snapshot_json_shape_and_text(tmp_path) -> None:
    s = _stream(tmp_path)
    s.batch(0)
    s.batch(1, dead=1)
    result = CliRunner().invoke(cli, ["snapshot", "--project-dir", str(s.project.root),
                                      "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc) == {"batch_id", "tables"} and doc["batch_id"] == 1
    assert set(doc["tables"]) == {*APPENDS, "endpoint_counts", DEAD}
    for name, t in doc["tables"].items():
        assert set(t) == {"path", "version"}
        assert t["path"] == str(s.project.table_path(name))
    assert doc["tables"][DEAD]["version"] == 0
    text = CliRunner().invoke(cli, ["snapshot", "--project-dir", str(s.project.root),
                                    "--batch", "0"]).output
    assert text.startswith("batch 0") and "_dead_letter" in text and "no table yet" in text


def test_snapshot_errors_are_one_clear_message(tmp_path) -> None:
    s = _stream(tmp_path)
    with pytest.raises(ExecutionError, match="no batch has completed"):
        runner.snapshot(s.project.root)
    for n in range(3):
        s.batch(n)
    Ledger(s.project.checkpoint).prune(below=1)
    with pytest.raises(ExecutionError, match="batch 0 is no longer retained"):
        runner.snapshot(s.project.root, batch=0)
    result = CliRunner().invoke(cli, ["snapshot", "--project-dir", str(s.project.root),
                                      "--batch", "7"])
    assert result.exit_code == 1
    assert "batch 7 is not complete in every table (the latest complete batch is 2)" in \
        result.output
    assert "Traceback" not in result.output


def test_the_documented_recipes_read_the_same_cut(tmp_path) -> None:
    """docs/SNAPSHOTS.md: delta-rs, Polars and DuckDB read one snapshot alike."""
    import duckdb
    import polars as pl
    from deltalake import DeltaTable

    s = _stream(tmp_path)
    for n in range(3):
        s.batch(n, requests=["/a", "/b", "/b"])
    s.batch(3, requests=["/c"])
    snap = runner.snapshot(s.project.root, batch=2)
    t = snap.tables["request_logs"]
    via_rs = DeltaTable(t.path, version=t.version).to_pyarrow_dataset().count_rows()
    via_polars = pl.read_delta(t.path, version=t.version).height
    dataset = snap.delta_table("request_logs").to_pyarrow_dataset()  # noqa: F841 (DuckDB)
    via_duckdb = duckdb.sql("SELECT count(*) FROM dataset").fetchall()[0][0]
    assert via_rs == via_polars == via_duckdb == 9
    counts = pl.read_delta(snap.path("endpoint_counts"), version=snap.version("endpoint_counts"))
    assert counts["requests"].sum() == via_rs


def test_tables_a_run_does_not_write_stay_in_the_cut(tmp_path) -> None:
    """``stream --select`` writes some models only: the others keep their version in the cut,
    and a model whose file is gone leaves it."""
    from types import SimpleNamespace

    from runner.runtime.after_batch import Bookkeeper

    s = _stream(tmp_path)
    s.batch(0)
    s.batch(1)
    before = Ledger(s.project.checkpoint).get(1)
    only_logs = SimpleNamespace(sinks={"request_logs": s.sinks["request_logs"]},
                                dead_letter=s.dead)
    (s.project.root / "models" / "performance_metrics.sql").unlink()
    from runner.project.loader import load_project

    keeper = Bookkeeper(load_project(s.project.root), only_logs, query_id=s.query_id)
    keeper.after_batch(SimpleNamespace(batch_id=2, parked={}))
    entry = Ledger(s.project.checkpoint).get(2)
    assert "performance_metrics" not in entry.tables
    for name in ("error_events", "endpoint_counts", DEAD):
        assert entry.tables[name] == before.tables[name]
