"""`runner stream` as a real process: graceful stop on SIGTERM, JSON progress, and a run on
``local-cluster`` proving the work runs on executors (not only in the driver)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark

MODELS = EXAMPLE_FILES


def _project(tmp_path: Path, spark_block: str = "spark:\n  master: local[2]\n") -> Path:
    yml = (BASE_YML.replace("spark:\n  master: local[2]\n", spark_block)
           .replace("slow_ms: 1000", "slow_request_ms: 1000"))
    return write_project(tmp_path / "proj", MODELS, project_yml=yml)


def _runner(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                             str(root), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_sigterm_stops_after_the_batch_in_flight(tmp_path) -> None:
    root = _project(tmp_path)
    write_demo_files(root / "incoming", events=2000, files=2, poison_every=0)
    proc = _runner(root, "--trigger", "1 second", "--progress", "json")
    lines = []
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(json.loads(line))
        if "batch_id" in lines[-1]:
            break
    assert any("batch_id" in d for d in lines), (lines, proc.stderr.read() if proc.stderr else "")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    docs = lines + [json.loads(line) for line in out.splitlines() if line.strip()]
    summary = docs[-1]["summary"]
    assert summary["stopped_by_signal"] is True and summary["input_rows"] == 2000
    assert "Traceback" not in err
    assert read_table(str(root / "wh/request_logs")).num_rows == 2000


def test_local_cluster_runs_on_executors(tmp_path) -> None:
    events = tmp_path / "events"
    root = _project(tmp_path, "spark:\n  master: local-cluster[2,1,1024]\n  conf:\n"
                              "    spark.eventLog.enabled: true\n"
                              "    spark.eventLog.compress: false\n"
                              f"    spark.eventLog.dir: {events}\n")
    events.mkdir()
    write_demo_files(root / "incoming", events=4000, files=4, poison_every=1000)
    proc = _runner(root, "--available-now")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err + out
    task_executors = set()
    # Spark 4 writes a folder per app: events_<n>_* files (JSON lines) and an appstatus marker
    for log in events.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                task_executors.add(event["Task Info"]["Executor ID"])
    assert task_executors and "driver" not in task_executors, task_executors
    assert len(task_executors) == 2  # both executor JVMs did work
    assert read_table(str(root / "wh/performance_metrics")).num_rows == 3996
    assert read_table(str(root / "wh/_dead_letter")).num_rows == 4
