"""Ctrl-C in the terminal while the runner's Python Kafka reader is reading: the terminal
signals the whole foreground process group, Spark's Python workers included, and PySpark
gives each worker Python's own SIGINT handler. The read must finish (the batch in flight
completes, exit 0), not die with KeyboardInterrupt and fail the batch."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from runner.sinks.tables import read_table
from tests.kafka.test_stream_kafka import Topic
from tests.spark.test_stop import NOT_CLEAN, _env, _Terminal
from tests.support.projects import EVENT_SCHEMA, EXAMPLE_FILES, write_project

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _wait_for(path: Path, text: str, timeout: float = 150) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError(f"no {text!r} in {path}")


# Slow (~27 s): Ctrl-C mid-batch stays in the default suite for the files source
# (tests/spark/test_stop.py); this is the Python Kafka reader's own case.
@pytest.mark.slow
def test_ctrl_c_while_the_python_reader_reads(kafka_broker: str, tmp_path: Path) -> None:
    topic = Topic.create(kafka_broker, partitions=1)
    topic.send(40, poison_every=0)
    yml = f"""\
name: kafka_stop
source:
  type: kafka
  bootstrap_servers: {kafka_broker}
  topic: {topic.name}
  reader: python
schema: >-
  {EVENT_SCHEMA}
warehouse: wh
checkpoint: cp
delta:
  engine: rs
spark:
  master: local[1]
vars:
  slow_request_ms: 1000
"""
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml)
    term = _Terminal([sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
                      "--trigger", "2 seconds"], _env("source.read=sleep:8"))
    _wait_for(root / "logs" / "spark.log", "failpoint source.read sleeping")
    term.ctrl_c()
    term.expect(r"stop requested")
    assert term.wait() == 0, term.text
    for word in NOT_CLEAN:
        assert word not in term.text, term.text
    assert "done (stopped by signal): 1 batch, 40 records in" in term.text, term.text
    assert read_table(str(root / "wh/request_logs")).num_rows == 40
