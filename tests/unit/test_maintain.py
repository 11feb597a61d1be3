"""``runner maintain`` and the stream's scheduled maintenance, on tables written by the real
delta-rs writer (no Spark): compaction, vacuum, log checkpoints and expiry, staging folders;
every retained snapshot stays readable with the same rows, and nothing is lost."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

import runner
from runner.checkpoint.ledger import Ledger
from runner.checkpoint.lock import MAINTENANCE, CheckpointLock
from runner.cli import cli
from runner.console import plural
from runner.errors import ExecutionError
from runner.events import MaintenanceFailed, MaintenanceRan, MaintenanceSkipped
from runner.ops.maintain import maintain, report_lines
from runner.sinks.maintenance import data_files_on_disk, needed_versions, prune_staging
from tests.support.fake_stream import APPENDS, DEAD, FakeStream, make_project, read

#: Vacuum without a time retention: only the ledger's kept versions decide (explicitly set).
KEEP = "maintenance:\n  keep_batches: 4\n  vacuum_retention_hours: 0\n"


def _snapshot_rows(project, batch: int) -> dict[str, Counter]:
    snap = runner.snapshot(project.root, batch=batch)
    return {name: Counter(json.dumps(r, sort_keys=True, default=str)
                          for r in read(t.path, t.version))
            for name, t in snap.tables.items() if t.version is not None}


def _assert_tables_exact(s: FakeStream) -> None:
    for name in (*APPENDS, DEAD):
        path = s.project.table_path(name)
        rows = read(str(path)) if path.exists() else []
        key = ("raw", "_batch_id") if name == DEAD else None
        got = Counter(tuple(r[k] for k in key) if key else tuple(r.values()) for r in rows)
        assert got == Counter(s.expected.get(name, [])), name
    counts = {r["endpoint"]: r["requests"]
              for r in read(str(s.project.table_path("endpoint_counts")))}
    assert counts == s.totals


def test_maintain_compacts_vacuums_and_keeps_retained_snapshots(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj", maintenance=KEEP))
    for n in range(8):
        s.batch(n, dead=n % 2)
    before = {n: _snapshot_rows(s.project, n) for n in range(4, 8)}
    disk_before = len(data_files_on_disk(s.project.table_path("endpoint_counts")))
    report = maintain(s.project)
    assert not report.stream_running and report.ledger_pruned == 4
    assert (report.oldest_batch, report.latest_batch) == (4, 7)
    by_name = {t.name: t for t in report.tables}
    assert set(by_name) == {*APPENDS, "endpoint_counts", DEAD}
    logs = by_name["request_logs"]
    assert logs.files_before == 8 and logs.files_after == 1 and logs.files_compacted == 8
    assert all(t.error is None for t in report.tables), report
    # the merge table rewrites its file every batch: files of batches 0..3 are gone
    merge = by_name["endpoint_counts"]
    assert merge.files_vacuumed >= 3 and merge.files_on_disk < disk_before
    with pytest.raises(ExecutionError, match="no longer retained"):
        runner.snapshot(s.project.root, batch=3)
    for n, rows in before.items():  # every retained cut reads back the same rows
        assert _snapshot_rows(s.project, n) == rows, n
    for n in range(8, 14):  # the stream goes on; a second maintenance expires old logs
        s.batch(n, dead=1)
    second = maintain(s.project)
    assert second.oldest_batch == 10
    assert any(t.log_files_expired > 0 for t in second.tables), second
    for n in range(10, 14):
        snap = runner.snapshot(s.project.root, batch=n)
        for name, t in snap.tables.items():
            assert all(r["_batch_id"] <= n for r in read(t.path, t.version)
                       if "_batch_id" in r), (name, n)
    _assert_tables_exact(s)


def test_merge_tables_are_not_compacted_while_a_stream_holds_the_checkpoint(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj"))
    for n in range(3):
        s.batch(n)
    with CheckpointLock(s.project.checkpoint):  # "the stream"
        report = maintain(s.project)
    by_name = {t.name: t for t in report.tables}
    assert report.stream_running
    assert by_name["endpoint_counts"].compaction.startswith("skipped: merge table")
    assert by_name["request_logs"].compaction == "done"
    assert by_name["request_logs"].files_after == 1
    _assert_tables_exact(s)


def test_one_maintenance_at_a_time(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj"))
    s.batch(0)
    other = CheckpointLock(s.project.checkpoint, MAINTENANCE)
    other.acquire()
    try:
        with pytest.raises(ExecutionError, match="another maintenance .* is running"):
            maintain(s.project, wait=0.3)
        s.keeper.maintain()  # the stream skips its turn instead of waiting
        assert any(isinstance(e, MaintenanceSkipped) for e in s.events)
    finally:
        other.release()


def test_scheduled_maintenance_runs_between_batches(tmp_path) -> None:
    s = FakeStream(make_project(
        tmp_path / "proj", maintenance="maintenance:\n  every_batches: 3\n  keep_batches: 2\n"))
    for n in range(7):
        s.batch(n, dead=1)
    runs = [e for e in s.events if isinstance(e, MaintenanceRan)]
    assert len(runs) == 2, s.events
    assert Ledger(s.project.checkpoint).batch_ids()[0] >= 4
    snap = runner.snapshot(s.project.root)
    assert snap.batch_id == 6
    _assert_tables_exact(s)


def test_maintain_select_and_cli_json(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj"))
    for n in range(3):
        s.batch(n)
    result = CliRunner().invoke(cli, ["maintain", "--project-dir", str(s.project.root),
                                      "--select", "request_logs", "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc["tables"]) == ["request_logs"]
    assert doc["tables"]["request_logs"]["files_after"] == 1
    bad = CliRunner().invoke(cli, ["maintain", "--project-dir", str(s.project.root),
                                   "--select", "request_log"])
    assert bad.exit_code == 2 and "did you mean 'request_logs'" in bad.output


def test_staging_folders_of_committed_batches_only(tmp_path) -> None:
    table = tmp_path / "t"
    app = table / "batches" / "p.m.q"
    for n in range(5):
        (app / str(n) / "part=1").mkdir(parents=True)
    (app / "1" / "part=1" / "f.parquet").write_bytes(b"x")  # a committed batch's table file
    assert prune_staging(str(table), "p.m.q", committed_batch=2) == 4  # 0 and 2, two levels
    left = sorted(p.relative_to(app).as_posix() for p in app.rglob("*"))
    assert left == ["1", "1/part=1", "1/part=1/f.parquet", "3", "3/part=1", "4", "4/part=1"]


def test_needed_versions_skips_those_a_later_kept_version_covers(tmp_path) -> None:
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    kinds = ["add", "add", "add", "remove", "add", "add"]  # version 3 removes files
    for v, kind in enumerate(kinds):
        (log / f"{v:020d}.json").write_text(json.dumps({kind: {"path": f"f{v}"}}) + "\n")
    assert needed_versions(Path(tmp_path / "t"), {0, 1, 2, 4, 5}, current=5) == [2, 5]
    assert needed_versions(Path(tmp_path / "t"), {4, 5}, current=5) == [5]
    os.remove(log / f"{4:020d}.json")  # unreadable: counts as removing
    assert needed_versions(Path(tmp_path / "t"), {3, 5}, current=5) == [3, 5]


def test_a_failing_maintenance_never_fails_the_stream(tmp_path, monkeypatch) -> None:
    from runner.runtime import after_batch

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(after_batch, "maintain_tables", broken)
    s = FakeStream(make_project(tmp_path / "proj",
                                maintenance="maintenance:\n  every_batches: 2\n"))
    for n in range(4):
        s.batch(n)
    failures = [e for e in s.events if isinstance(e, MaintenanceFailed)]
    assert len(failures) == 2 and "No space left on device" in failures[0].error
    assert Ledger(s.project.checkpoint).batch_ids() == [0, 1, 2, 3]
    _assert_tables_exact(s)


def test_vacuum_keeps_recently_removed_files_by_default(tmp_path) -> None:
    """Issue 20, item 8: vacuum ran with retention 0, deleting a file as soon as no kept
    snapshot needed it, which breaks Delta readers that lag (a downstream streaming consumer, a
    long query on an older version). By default it keeps what was removed in the last 168
    hours (Delta's own default); the report says what each table's vacuum removed."""
    s = FakeStream(make_project(tmp_path / "proj", maintenance="maintenance:\n"
                                                               "  keep_batches: 1\n"))
    for n in range(4):
        s.batch(n, dead=1)
    merge = str(s.project.table_path("endpoint_counts"))
    on_disk = data_files_on_disk(merge)
    report = maintain(s.project)
    assert {t.name: t.files_vacuumed for t in report.tables} == dict.fromkeys(
        (*APPENDS, "endpoint_counts", DEAD), 0)
    assert data_files_on_disk(merge) >= on_disk
    assert all(t.log_files_expired == 0 for t in report.tables)
    assert read(merge, 0), "version 0 (files removed by later merges) is still readable"
    assert "vacuum retention 168 h" in report_lines(report)[-1]
    _assert_tables_exact(s)

    make_project(s.project.root, maintenance="maintenance:\n  keep_batches: 1\n"
                                             "  vacuum_retention_hours: 0\n")
    s.project = runner.load_project(s.project.root)
    report = maintain(s.project)
    by_name = {t.name: t for t in report.tables}
    assert by_name["endpoint_counts"].files_vacuumed >= 3  # one file per merge rewrite
    # the kept snapshot (batch 3) names request_logs' version before the compaction
    assert by_name["request_logs"].files_vacuumed == 0
    line = next(x for x in report_lines(report) if x.startswith("endpoint_counts:"))
    assert f"vacuumed {plural(by_name['endpoint_counts'].files_vacuumed, 'file')} " in line
    assert "vacuum retention 0 h" in report_lines(report)[-1]
    _assert_tables_exact(s)


def test_vacuum_retention_must_be_a_whole_number_of_hours(tmp_path) -> None:
    root = make_project(tmp_path / "proj").root
    (root / "project.yml").write_text((root / "project.yml").read_text()
                                      + "maintenance:\n  vacuum_retention_hours: -1\n")
    result = CliRunner().invoke(cli, ["maintain", "--project-dir", str(root)])
    assert result.exit_code == 2
    assert "maintenance.vacuum_retention_hours" in result.output
