"""`runner maintain` beside a running stream whose checkpoint and tables are in a bucket
(moto's S3 server): it cannot lose a stream commit.

- rs engine: every commit (the stream's and maintenance's) is a conditional PUT, so
  maintenance runs beside the stream; after several rounds while files keep arriving, every
  table holds exactly what the input calls for.
- spark engine: delta-spark's S3 log store is single-writer per table (a check, then a plain
  PUT), so maintenance refuses while the stream holds the lease, and changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.delta import open_delta
from runner.storage.objects import object_path
from runner.storage.ops import names, write_atomic
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TABLES = ("request_logs", "error_events", "performance_metrics", "_dead_letter")


def _project(tmp_path: Path, uri: str, engine: str) -> Path:
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n")
           .replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n"))
    return write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml, engine=engine)


def _add_files(local: Path, uri: str, events: int) -> None:
    before = set(local.glob("*.json"))
    write_demo_files(local, events=events, files=1, poison_every=200)
    for f in sorted(set(local.glob("*.json")) - before):
        write_atomic(object_path(f"{uri}/incoming/{f.name}"), f.read_bytes())


def _runner(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", *args, "--project-dir", str(root)],
                          capture_output=True, text=True, timeout=900, env=env)


def _start_stream(root: Path, uri: str, env: dict[str, str]) -> subprocess.Popen[str]:
    stream = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--trigger",
                               "2 seconds", "--project-dir", str(root)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while "commits" not in names(object_path(f"{uri}/cp")):  # a first batch committed
        assert stream.poll() is None and time.monotonic() < deadline, stream.stderr
        time.sleep(1)
    return stream


@pytest.mark.parametrize("engine", ["rs", "spark"])
def test_maintain_beside_a_stream_loses_no_commit(tmp_path, s3_bucket, monkeypatch,
                                                  engine) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    env = {**os.environ, "RUNNER_LEASE_SECONDS": "20"}
    uri = s3_bucket.uri
    root = _project(tmp_path, uri, engine)
    local = tmp_path / "files"
    _add_files(local, uri, 600)
    stream = _start_stream(root, uri, env)
    try:
        for _ in range(3):
            _add_files(local, uri, 300)
            maintained = _runner(root, "maintain", env=env)
            if engine == "rs":
                assert maintained.returncode == 0, maintained.stderr[-2000:]
            else:
                assert maintained.returncode == 1
                assert "single-writer" in maintained.stderr, maintained.stderr[-2000:]
                assert "nothing was maintained" in maintained.stderr
    finally:
        stream.terminate()
        stream.wait(timeout=180)
    finished = _runner(root, "stream", "--available-now", env=env)
    assert finished.returncode == 0, finished.stderr[-2000:]
    expected = expected_tables(local, TABLES)
    actual = actual_tables(object_path(f"{uri}/wh"))
    assert {t: actual[t] == expected[t] for t in TABLES} == dict.fromkeys(TABLES, True)
    operations = {c.get("operation") for c in open_delta(f"{uri}/wh/request_logs").history()}
    maintenance = operations & {"OPTIMIZE", "VACUUM START", "VACUUM END"}
    assert bool(maintenance) == (engine == "rs"), operations  # beside the stream, or not at all
