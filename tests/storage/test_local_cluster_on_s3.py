"""The production shape on object storage: ``runner stream`` on ``local-cluster[2,1,1024]`` (a
master, two workers, two executor JVMs) with the source files, the checkpoint and the
warehouse all in a bucket (moto's S3 server on loopback), on both engines.

Nothing is shared between the driver and the executors but the bucket: the executors read
the source files and write the tables' data files to it through S3A, with the settings the
runner puts in the session's conf (``spark.hadoop.fs.s3a.bucket.<b>.*``, from the
``AWS_*`` variables of the driver's environment), which Spark hands to every executor; the
commits go through delta-rs (``rs``, from the driver's environment) or delta-spark
(``spark``). The tables must hold exactly what the input calls for, and Spark's event log
must show the tasks ran in the two executors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.storage.objects import object_path
from runner.storage.ops import write_atomic
from tests.support.projects import (
    BASE_YML,
    ENDPOINT_COUNTS,
    EXAMPLE_FILES,
    REPO_ROOT,
    write_project,
)
from tests.support.reference import actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TABLES = ("request_logs", "error_events", "performance_metrics", "endpoint_counts",
          "_dead_letter")


def test_local_cluster_with_every_location_in_a_bucket(tmp_path: Path, s3_bucket,
                                                       delta_engine: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in s3_bucket.env.items():  # this process reads the tables back
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("RUNNER_ALLOW_SPARK_CONF",
                       "spark.eventLog.enabled,spark.eventLog.compress,spark.eventLog.dir")
    events = tmp_path / "events"  # the event log is the test's, on the driver's disk
    events.mkdir()
    uri = s3_bucket.uri
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n  max_files_per_trigger: 2\n")
           .replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
           + "spark:\n  master: local-cluster[2,1,1024]\n  conf:\n"
           "    spark.eventLog.enabled: true\n    spark.eventLog.compress: false\n"
           f"    spark.eventLog.dir: {events.as_uri()}\n")
    root = write_project(tmp_path / "proj", {**EXAMPLE_FILES,
                                             "models/endpoint_counts.sql": ENDPOINT_COUNTS},
                         project_yml=yml, engine=delta_engine)
    local = tmp_path / "files"  # the reference's copy; the stream reads the bucket's
    write_demo_files(local, events=3000, files=4, poison_every=250)
    for f in sorted(local.glob("*.json")):
        write_atomic(object_path(f"{uri}/incoming/{f.name}"), f.read_bytes())

    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "runner", "stream", "--available-now", "--progress", "json",
         "--project-dir", str(root)],
        env=env, cwd=str(root), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    batches = [json.loads(line) for line in done.stdout.splitlines()
               if line.startswith('{"batch_id"')]
    assert len(batches) == 2, done.stdout[-2000:]
    assert not any(Path(root, p).exists() for p in ("cp", "wh", "s3:")), "wrote to disk"

    expected = expected_tables(local, TABLES)
    actual = actual_tables(object_path(f"{uri}/wh"))  # type: ignore[arg-type]
    for name in TABLES:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, f"{name}: lost {list(lost)[:3]}, extra {list(extra)[:3]}"
    assert sum(expected["request_logs"].values()) > 0

    ran_on = set()  # the tasks ran in the two executor JVMs, not in the driver
    for log in events.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                ran_on.add(event["Task Info"]["Executor ID"])
    assert ran_on == {"0", "1"}, ran_on
