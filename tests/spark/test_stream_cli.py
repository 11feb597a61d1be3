"""`runner stream` as a real process: graceful stop on SIGTERM and JSON progress. (The run on
``local-cluster``, executors reading Kafka and writing with delta-spark, is
``tests/kafka/test_local_cluster.py``.)"""

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


def _project(tmp_path: Path) -> Path:
    yml = BASE_YML.replace("slow_ms: 1000", "slow_request_ms: 1000")
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
    # Every line is one typed event (docs/COMMANDS.md#progress-json), the summary last.
    types = [d["type"] for d in docs]
    assert types[0] == "engine_chosen" and types[-1] == "summary", types
    assert {"pipeline_started", "batch_done", "stop_requested"} <= set(types), types
    [started] = [d for d in docs if d["type"] == "pipeline_started"]
    assert (sorted(started["models"]), started["source"], started["engine"]) == (sorted(
        Path(f).stem for f in MODELS if f.startswith("models/") and f.endswith(".sql")),
        "files", "rs"), started
    assert started["event"].startswith(f"pipeline {started['project']}: ")
    [stop] = [d for d in docs if d["type"] == "stop_requested"]
    assert stop["at"] == "in_flight"
    batches = [d for d in docs if d["type"] == "batch_done"]
    assert sum(b["input_rows"] for b in batches) == 2000
    assert set(batches[0]) >= {"batch_id", "input_rows", "dead_letters", "rows", "skipped",
                               "expectations", "parked", "seconds"}
    assert "Traceback" not in err
    assert read_table(str(root / "wh/request_logs")).num_rows == 2000
