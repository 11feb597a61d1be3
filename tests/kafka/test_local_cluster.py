"""The production path on a real (local) cluster: ``runner stream`` with ``local-cluster[2,1,1024]``
(a master, two workers and two executor JVMs, as on a cluster), Spark's own Kafka source reading
a real Apache Kafka broker in the executors, and delta-spark writing every table from them.

On ``local[2]`` the driver and the "executors" share one JVM, so classpath and serialisation
mistakes (a jar only the driver has, a closure that does not pickle, Python workers that cannot
import the runner) stay hidden; here they fail. One run, as a user runs it (the CLI in its own
process); the tables are read back with delta-rs and compared with what was produced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.project.loader import load_project
from tests.kafka.test_stream_kafka import EVENT_OFFSETS, Topic, _check_tables, _project
from tests.support.projects import ENDPOINT_COUNTS, REPO_ROOT

#: ``slow`` (87 s in CI: a master, two workers, two executor JVMs and a broker), for the default
#: suite's budget; the default run keeps ``local-cluster`` for the files source
#: (tests/spark/test_stream_cli.py, tests/spark/test_sinks_rs.py), and this runs in the slow set.
pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]


def test_local_cluster_reads_kafka_in_executors_and_writes_with_delta_spark(
        apache_kafka: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The event log's settings are not on project.yml's allowlist (a path to write): the test
    # opts in as a deployment would (runner/project/spark_conf.py), for the stream it starts
    # and for its own reads of the project.
    monkeypatch.setenv("RUNNER_ALLOW_SPARK_CONF",
                       "spark.eventLog.enabled,spark.eventLog.compress,spark.eventLog.dir")
    topic = Topic.create(apache_kafka, partitions=4)
    topic.send(1600, poison_every=100)
    project = _project(tmp_path / "p", topic, reader="spark", engine="spark",
                       master="local-cluster[2,1,1024]",
                       source_extra="  max_offsets_per_trigger: 800\n",
                       models={"models/event_offsets.sql": EVENT_OFFSETS,
                               "models/endpoint_counts.sql": ENDPOINT_COUNTS})
    # Spark's event log records which executor ran each task.
    events = tmp_path / "events"
    events.mkdir()
    yml = project.root / "project.yml"
    yml.write_text(yml.read_text().replace(
        "  master: local-cluster[2,1,1024]\n",
        "  master: local-cluster[2,1,1024]\n  conf:\n    spark.eventLog.enabled: true\n"
        f"    spark.eventLog.compress: false\n    spark.eventLog.dir: {events.as_uri()}\n"))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "runner", "stream", "--available-now", "--progress", "json",
         "--project-dir", str(project.root)],
        env=env, cwd=str(project.root), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    batches = [json.loads(line) for line in done.stdout.splitlines()
               if line.startswith('{"batch_id"')]
    assert [b["input_rows"] for b in batches] == [800, 800], done.stdout
    # The tasks ran in the two executor JVMs, not in the driver.
    ran_on = set()
    for log in events.rglob("events_*"):  # Spark 4: a folder per app, JSON-lines files
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                ran_on.add(event["Task Info"]["Executor ID"])
    assert ran_on == {"0", "1"}, ran_on
    _check_tables(load_project(project.root), topic, merge=True)
