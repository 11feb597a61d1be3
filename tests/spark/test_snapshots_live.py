"""Snapshots and maintenance against a real, running ``runner stream`` process.

One stream (``--trigger '1 second'``) reads files added one by one, with maintenance every 2
batches inside the stream; a failpoint holds the merge table's commit back 2 s in every batch
(``sink.before_commit:endpoint_counts=sleep:2``), so each batch has a window in which
``request_logs`` already holds it and ``endpoint_counts`` does not. Meanwhile this process:

- reads ``runner.snapshot()`` cuts over and over and checks a cross-table invariant that only a
  consistent cut keeps: the rows of ``request_logs`` = the sum of ``endpoint_counts.requests``;
- as the control, reads the same two tables at their latest versions, one after the other:
  that breaks the invariant (in the window above);
- runs ``runner maintain`` (the library call) again and again, concurrently with the stream's
  commits and its own maintenance.

Then the stream is stopped (SIGTERM) and every table is compared with a reference computed
from the input files: concurrent maintenance lost nothing and doubled nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import runner
from runner.checkpoint.ledger import Ledger
from runner.demo import write_demo_files
from runner.ops.maintain import maintain
from runner.project.loader import load_project
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = pytest.mark.spark

FILES = 6
YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n")
       # retention 0: vacuum deletes what the 3 kept snapshots do not need, under the readers
       + "maintenance:\n  every_batches: 2\n  keep_batches: 3\n  vacuum_retention_hours: 0\n")


def _rows(path: str, version: int | None = None) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(path, version=version).to_pyarrow_dataset().to_table(
        columns=None, use_threads=False).to_pylist()


def _consistent(logs: list[dict], counts: list[dict]) -> bool:
    return len(logs) == sum(r["requests"] for r in counts)


# slow: 44 s (a real stream of 6 one-file batches, each held back 2 s), the longest default
# test left, and the suite's 25-minute budget has no room for it on a loaded machine; the
# pieces run by default in tests/unit/test_snapshots.py, tests/faults/test_snapshot_lag.py
# and tests/faults/test_snapshot_faults.py.
@pytest.mark.slow
def test_snapshots_are_consistent_and_maintenance_loses_nothing_while_streaming(
        tmp_path: Path) -> None:
    root = write_project(tmp_path / "proj",
                         {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS},
                         project_yml=YML)
    incoming = root / "incoming"
    write_demo_files(incoming, events=60, files=1, poison_every=20, seed=0)
    project = load_project(root)
    logs_path = str(project.table_path("request_logs"))
    counts_path = str(project.table_path("endpoint_counts"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "RUNNER_FAILPOINTS": "sink.before_commit:endpoint_counts=sleep:2"}
    proc = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                             str(root), "--trigger", "1 second", "--progress", "json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    ledger = Ledger(project.checkpoint)
    cuts = control_breaks = maintained = 0
    merge_skipped = append_compacted = False
    try:
        deadline = time.monotonic() + 600
        fed = 1
        while time.monotonic() < deadline and proc.poll() is None:
            done = ledger.batch_ids()
            if done and done[-1] >= FILES - 1:
                break
            if done and done[-1] >= fed - 1 and fed < FILES:  # one new file per batch
                write_demo_files(incoming, events=60, files=1, poison_every=20, seed=fed)
                fed += 1
            if not done:
                time.sleep(0.2)
                continue
            snap = runner.snapshot(root)
            logs = _rows(snap.path("request_logs"), snap.version("request_logs"))
            counts = _rows(snap.path("endpoint_counts"), snap.version("endpoint_counts"))
            assert _consistent(logs, counts), (snap, len(logs), counts)
            cuts += 1
            # the control: the latest version of each table, read one after the other
            if not _consistent(_rows(logs_path), _rows(counts_path)):
                control_breaks += 1
            if cuts % 4 == 0:  # runner maintain from another process, while the stream runs
                report = maintain(project)
                maintained += 1
                by_name = {t.name: t for t in report.tables}
                assert report.stream_running
                merge_skipped |= by_name["endpoint_counts"].compaction.startswith("skipped")
                append_compacted |= by_name["request_logs"].files_compacted > 0
                assert all(t.error is None for t in report.tables), [
                    t.error for t in report.tables]
        assert proc.poll() is None, "".join(out) + (proc.stderr.read() if proc.stderr else "")
        assert ledger.batch_ids()[-1] >= FILES - 1, "".join(out)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=180)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    reader.join(timeout=10)
    assert proc.returncode == 0, err
    assert cuts >= 5 and maintained >= 1, (cuts, maintained)
    assert control_breaks >= 1, "latest-version reads never saw a half-written batch"
    assert merge_skipped and append_compacted
    events = [json.loads(line) for line in out if line.startswith("{")]
    assert any(e["type"] == "maintenance_ran" and e["event"].startswith("maintenance:")
               for e in events), events

    expected = expected_tables(incoming)
    actual = actual_tables(project.warehouse)
    for name in expected:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (name, sum(lost.values()), sum(extra.values()))
    for batch in ledger.batch_ids():  # every retained cut still reads, and is consistent
        snap = runner.snapshot(root, batch=batch)
        assert _consistent(_rows(snap.path("request_logs"), snap.version("request_logs")),
                           _rows(snap.path("endpoint_counts"),
                                 snap.version("endpoint_counts"))), batch
