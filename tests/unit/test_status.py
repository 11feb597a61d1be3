"""``runner status`` without Spark: tables, batches, backlog, dead letters, lock holder, last
run; text and JSON."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest
from click.testing import CliRunner

from runner.checkpoint.lock import CheckpointLock
from runner.checkpoint.runs import RunRecord
from runner.cli import cli
from runner.errors import ExecutionError
from runner.ops.status import collect_status, status_lines
from tests.support.fake_stream import APPENDS, DEAD, FakeStream, make_project


def _spark_logs(project, *, read: list[str], committed: int, planned: int) -> None:
    """What Spark's file source keeps: the files log, the offsets and the commits."""
    cp = project.checkpoint
    (cp / "sources" / "0").mkdir(parents=True, exist_ok=True)
    (cp / "offsets").mkdir(exist_ok=True)
    (cp / "commits").mkdir(exist_ok=True)
    incoming = project.root / "incoming"
    lines = [json.dumps({"path": f"file://{incoming / n}", "timestamp": 1, "batchId": 0})
             for n in read]
    (cp / "sources" / "0" / "9.compact").write_text("v1\n" + "\n".join(lines[:-1]) + "\n")
    (cp / "sources" / "0" / "10").write_text("v1\n" + lines[-1] + "\n")
    for b in range(planned + 1):
        (cp / "offsets" / str(b)).write_text("v1\n{}\n" + json.dumps({"logOffset": b}) + "\n")
    for b in range(committed + 1):
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_status_reports_tables_batches_backlog_and_dead_letters(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj"))
    for n in range(4):
        s.batch(n, dead=n)  # 0, 1, 2, 3 dead letters
    incoming = s.project.root / "incoming"
    for i in range(5):
        (incoming / f"events-{i}.json").write_text("{}\n")
    (incoming / ".events-9.json.tmp").write_text("{}\n")  # hidden: not a source file
    _spark_logs(s.project, read=[f"events-{i}.json" for i in range(3)], committed=3, planned=4)

    status = collect_status(s.project, batches=2)
    doc = status.to_dict()
    assert doc["batches"] == {"snapshot": 3, "snapshot_at": doc["batches"]["snapshot_at"],
                              "committed": 3, "in_flight": 4}
    assert set(doc["tables"]) == {*APPENDS, "endpoint_counts", DEAD}
    logs = doc["tables"]["request_logs"]
    assert logs["last_batch"] == 3 and logs["version"] == 3 and logs["snapshot_version"] == 3
    assert logs["files"] == 4 and logs["bytes"] > 0 and logs["log_files"] >= 4
    assert doc["tables"][DEAD]["last_batch"] == 3
    assert doc["backlog"]["pending"] == 2 and doc["backlog"]["next_files"] == [
        "events-3.json", "events-4.json"]
    assert doc["dead_letters"]["per_batch"] == {"2": 2, "3": 3}
    assert doc["dead_letters"]["latest_reasons"] == ["invalid JSON"]
    assert doc["lock"] is None and doc["last_run"] is None
    text = "\n".join(status_lines(status))
    assert "not running" in text and "backlog: 2 files not read yet" in text
    assert "batch 4 in flight or to be replayed" in text

    result = CliRunner().invoke(cli, ["status", "--project-dir", str(s.project.root),
                                      "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.output)["backlog"]["pending"] == 2


def test_status_names_the_lock_holder_and_the_last_error(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj"))
    s.batch(0)
    with pytest.raises(ExecutionError):
        with RunRecord(s.project.checkpoint):
            raise ExecutionError("model request_logs failed in batch 1: boom", hint="fix it")
    with CheckpointLock(s.project.checkpoint):
        doc = collect_status(s.project).to_dict()
    assert doc["lock"]["held"] is True and doc["lock"]["pid"] == os.getpid()
    assert doc["lock"]["host"] == socket.gethostname()
    assert doc["last_run"]["outcome"] == "failed"
    assert doc["last_run"]["error"].startswith("model request_logs failed in batch 1: boom")
    after = collect_status(s.project)
    assert after.lock is not None and after.lock["held"] is False
    text = "\n".join(status_lines(after))
    assert "not running" in text and "last run: failed" in text and "hint: fix it" in text


def test_a_run_that_died_is_reported_as_such(tmp_path) -> None:
    s = FakeStream(make_project(tmp_path / "proj"))
    s.batch(0)
    record = {"command": "stream", "pid": 999_999, "host": socket.gethostname(),
              "started_at": "2026-01-01T00:00:00Z", "ended_at": None, "outcome": "running",
              "error": None}
    (s.project.checkpoint / "last_run.json").write_text(json.dumps(record))
    run = collect_status(s.project).last_run
    assert run is not None and run["outcome"] == "died"
    with RunRecord(s.project.checkpoint):
        pass
    run = collect_status(s.project).last_run
    assert run is not None and run["outcome"] == "finished" and run["error"] is None


def test_status_of_a_project_that_never_ran(tmp_path) -> None:
    project = make_project(tmp_path / "proj")
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["status", "--project-dir", str(project.root)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "not running" in result.output and "backlog: 0 files" in result.output
    assert time.perf_counter() - started < 10


def test_status_snapshot_and_maintain_start_no_jvm(tmp_path) -> None:
    """The operator commands read files and Delta logs only: pyspark is never imported."""
    import subprocess
    import sys

    s = FakeStream(make_project(tmp_path / "proj"))
    s.batch(0)
    code = ("import sys; from click.testing import CliRunner; from runner.cli import cli; "
            "d = sys.argv[1]\n"
            "for args in (['status'], ['snapshot', '--format', 'json'], ['maintain']):\n"
            "    r = CliRunner().invoke(cli, [*args, '--project-dir', d])\n"
            "    assert r.exit_code == 0, r.output\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code, str(s.project.root)], check=True)
