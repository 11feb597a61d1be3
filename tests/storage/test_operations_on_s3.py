"""The operations that change the model set, with every location in a bucket (moto's S3
server), both engines, each command a process of its own as in production: a model added to a
running pipeline is backfilled from the history in the bucket, then ``--full-refresh --select``
rebuilds one table from that history; every table holds exactly what the input calls for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.storage.objects import object_path
from runner.storage.ops import write_atomic
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a handful of runner processes

FIRST = ("request_logs", "error_events", "_dead_letter")
ALL = (*FIRST, "performance_metrics")


def _runner(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "runner", *args, "--project-dir", str(root)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
    return done


def _exact(local: Path, uri: str, tables: tuple[str, ...]) -> None:
    expected = expected_tables(local, tables)
    actual = actual_tables(object_path(f"{uri}/wh"))
    assert {t: actual[t] == expected[t] for t in tables} == dict.fromkeys(tables, True)


def test_backfill_and_rebuild_from_history_in_a_bucket(tmp_path, s3_bucket, monkeypatch,
                                                        delta_engine) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    env = dict(os.environ)
    uri = s3_bucket.uri
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n")
           .replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n"))
    first = {k: v for k, v in EXAMPLE_FILES.items() if "performance_metrics" not in k}
    root = write_project(tmp_path / "proj", first, project_yml=yml, engine=delta_engine)
    local = tmp_path / "files"
    for _ in range(2):  # two batches of history
        before = set(local.glob("*.json"))
        write_demo_files(local, events=400, files=1, poison_every=200)
        for f in sorted(set(local.glob("*.json")) - before):
            write_atomic(object_path(f"{uri}/incoming/{f.name}"), f.read_bytes())
        _runner(root, "stream", "--available-now", env=env)
    _exact(local, uri, FIRST)

    write_project(root, EXAMPLE_FILES, project_yml=yml, engine=delta_engine)  # a model added
    added = _runner(root, "stream", "--available-now", env=env)
    assert "performance_metrics is new to this checkpoint: backfilling batches 0..1" in (
        added.stdout + added.stderr)
    _exact(local, uri, ALL)

    rebuilt = _runner(root, "stream", "--available-now", "--full-refresh", "--select",
                      "request_logs", env=env)
    assert "request_logs" in rebuilt.stdout + rebuilt.stderr
    _exact(local, uri, ALL)
