"""Every command on a project whose source files, checkpoint and warehouse all live in a
bucket (moto's S3 server on loopback), through the CLI in processes of their own as an
operator runs them: stream, status, snapshot, show, maintain, test, docs; a second stream on
the same checkpoint is refused while the first holds its lease; a file removed before a
replay makes the start refuse with nothing written.

The rs engine only: these commands read and maintain tables through delta-rs whatever the
engine; the spark engine's writes on S3 are covered by ``test_stream_on_s3.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.storage.objects import object_path
from runner.storage.ops import names, write_atomic
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a dozen runner processes

TABLES = ("request_logs", "error_events", "performance_metrics", "_dead_letter")


def _runner(root: Path, *args: str, env: dict[str, str], timeout: float = 600,
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", *args, "--project-dir", str(root)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _upload(local: Path, bucket_uri: str) -> None:
    for f in sorted(local.glob("*.json")):
        write_atomic(object_path(f"{bucket_uri}/incoming/{f.name}"), f.read_bytes())


def test_every_command_with_every_location_in_a_bucket(tmp_path, s3_bucket, monkeypatch) -> None:
    for key, value in s3_bucket.env.items():  # this process reads the bucket too
        monkeypatch.setenv(key, value)
    env = {**os.environ, "RUNNER_LEASE_SECONDS": "20"}
    uri = s3_bucket.uri
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n")
           .replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n"))
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml)
    local = tmp_path / "files"
    write_demo_files(local, events=900, files=2, poison_every=300)
    _upload(local, uri)

    streamed = _runner(root, "stream", "--available-now", env=env)
    assert streamed.returncode == 0, streamed.stderr[-3000:]
    expected = expected_tables(local, TABLES)
    actual = actual_tables(object_path(f"{uri}/wh"))
    assert {t: actual[t] == expected[t] for t in TABLES} == dict.fromkeys(TABLES, True)

    status = _runner(root, "status", "--format", "json", env=env)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["backlog"]["pending"] == 0 and doc["backlog"]["files_read"] == 2, doc["backlog"]
    snap = _runner(root, "snapshot", "--format", "json", env=env)
    assert snap.returncode == 0, snap.stderr
    assert set(json.loads(snap.stdout)["tables"]) >= {"request_logs", "error_events"}
    for args in (("show",), ("maintain",), ("test",), ("docs",)):
        done = _runner(root, *args, env=env)
        assert done.returncode == 0, (args, done.stdout[-1500:], done.stderr[-1500:])
    assert (root / "target" / "docs" / "index.html").is_file()

    # one writer per checkpoint: a second stream is refused while the first holds the lease
    write_demo_files(local, events=300, files=1, poison_every=300)
    _upload(local, uri)
    first = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                              str(root)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while "runner.lock" not in names(object_path(f"{uri}/cp")):
            assert first.poll() is None and time.monotonic() < deadline, first.stderr
            time.sleep(0.5)
        second = _runner(root, "stream", "--available-now", env=env)
        assert second.returncode == 75  # busy, as on local disk (docs/COMMANDS.md)
        assert "is in use by pid" in second.stderr and str(first.pid) in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=120)
    assert first.returncode in (0, 130, 143), first.stderr[-2000:]
    again = _runner(root, "stream", "--available-now", env=env)  # the lease was released
    assert again.returncode == 0, again.stderr[-2000:]
    actual = actual_tables(object_path(f"{uri}/wh"))
    assert actual["request_logs"] == expected_tables(local, TABLES)["request_logs"]

    # a batch interrupted after one table committed, its file deleted from the bucket: the
    # replay refuses (exit 2, the file named) before writing; put back, it completes exactly
    write_demo_files(local, events=300, files=1, poison_every=300)
    newest = sorted(local.glob("*.json"))[-1]
    _upload(local, uri)
    crashed = _runner(root, "stream", "--available-now", env={
        **env, "RUNNER_FAILPOINTS": "sink.after_commit:request_logs=raise"})
    assert crashed.returncode == 1, crashed.stderr[-2000:]
    object_path(f"{uri}/incoming/{newest.name}").unlink()
    refused = _runner(root, "stream", "--available-now", env=env)
    assert refused.returncode == 2 and newest.name in refused.stderr, refused.stderr[-2000:]
    _upload(local, uri)
    replayed = _runner(root, "stream", "--available-now", env=env)
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    actual = actual_tables(object_path(f"{uri}/wh"))
    expected = expected_tables(local, TABLES)
    assert {t: actual[t] == expected[t] for t in TABLES} == dict.fromkeys(TABLES, True)
