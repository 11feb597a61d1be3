"""``runner stream`` with Delta and Kafka models together, exactly once across SIGKILLs: a
``read_committed`` consumer sees every expected record once, every Delta table is exact.

One test per Delta engine (the default suite's budget): each runs the real CLI in a process
killed (``os._exit(137)``, no clean-up, as a SIGKILL leaves things) first just before the
Kafka transaction's commit, then right after it and before Spark's commit log, then to the
end. The rs run reads through the runner's Python Kafka reader, the spark run through Spark's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from runner.demo import POISON, event_lines
from runner.project.loader import load_project
from runner.sinks.tables import read_table
from tests.support.brokers import create_topic, produce
from tests.support.kafka_out import read_committed
from tests.support.projects import EVENT_SCHEMA, EXAMPLE_FILES, write_project

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

KAFKA_MODEL = """
{{{{ config(materialized='kafka', topic='{topic}') }}}}
SELECT eventId AS key, eventId, request.endpoint AS endpoint, _batch_id
FROM parsed_events
"""


def _project(root: Path, bootstrap: str, source: str, out: str, *, engine: str,
             reader: str, models: dict[str, str] | None = None) -> Path:
    yml = f"""\
name: kafka_out_pipeline
source:
  type: kafka
  bootstrap_servers: {bootstrap}
  topic: {source}
  starting_offsets: earliest
  max_offsets_per_trigger: 40
  reader: {reader}
schema: >-
  {EVENT_SCHEMA}
warehouse: wh
checkpoint: cp
delta:
  engine: {engine}
spark:
  master: local[2]
vars:
  slow_request_ms: 1000
"""
    files = {**EXAMPLE_FILES, "models/events_out.sql": KAFKA_MODEL.format(topic=out),
             **(models or {})}
    return write_project(root, files, project_yml=yml)


def _stream(root: Path, failpoint: str = "", timeout: float = 240) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--available-now"], env={**os.environ, "RUNNER_FAILPOINTS": failpoint},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, out


# Both paths are in the slow run (`-m slow`): 74 s (spark engine, Spark's reader) and 2-3 min
# (rs, the Python reader) on the 2-core machine, the longest tests of the suite, which was over
# its 25-minute budget with them. The default suite keeps the writer's exactly-once tests on a
# real broker (tests/kafka/test_kafka_outputs.py: replay skipped, fencing, a parked topic).
@pytest.mark.slow
@pytest.mark.parametrize("delta_engine", ["spark", "rs"])
def test_kafka_and_delta_models_exactly_once_across_kills(tmp_path, apache_kafka,
                                                          delta_engine) -> None:
    source, out = f"events_{uuid.uuid4().hex[:8]}", f"out_{uuid.uuid4().hex[:8]}"
    create_topic(apache_kafka, source, 2)
    create_topic(apache_kafka, out, 3)
    lines = list(event_lines(160, poison_every=25))
    produce(apache_kafka, source, [(i % 2, line, None) for i, line in enumerate(lines)])
    valid = [json.loads(v)["eventId"] for v in lines if v not in POISON]
    reader = "python" if delta_engine == "rs" else "spark"
    root = _project(tmp_path, apache_kafka, source, out, engine=delta_engine, reader=reader)

    code, log = _stream(root, "sink.before_commit:events_out@1=exit")
    assert code == 137, log
    seen = Counter(r["eventId"] for r in read_committed(apache_kafka, out))
    assert seen and set(seen.values()) == {1}  # batch 0 only; batch 1's transaction aborted
    code, log = _stream(root, "sink.after_commit:events_out@2=exit")
    assert code == 137, log
    code, log = _stream(root)
    assert code == 0, log

    records = read_committed(apache_kafka, out)
    counts = Counter(r["eventId"] for r in records)
    assert sorted(counts) == sorted(set(valid)) and set(counts.values()) == {1}, counts
    project = load_project(root)
    logs = read_table(project.table_path("request_logs"))
    assert sorted(logs.column("eventId").to_pylist()) == sorted(set(valid))
