"""The Kafka source over Spark Connect: ``runner stream`` as a client (``SPARK_REMOTE``) reads
a real broker (Tansu, the shared fixture) through the runner's Python reader, registered in the
client's session and run by the server's Python workers (Spark's own Kafka source is not
probed over Connect: docs/CONNECT.md). Two runs: the second starts from the offsets the first
committed. Every valid record lands once, from its own partition and offset; poison records
are dead letters.

Engine ``rs`` only: what differs over Connect here is the source; the sinks are the files
source's (tests/connect/test_connect.py). Nightly (``slow``): two client runs and a Kafka
reader's start on the server, about 40-80 s on the CI machine.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from runner.sinks.tables import read_table
from tests.kafka.test_stream_kafka import EVENT_OFFSETS, Topic
from tests.support.connect_runs import run_client
from tests.support.projects import EVENT_SCHEMA, EXAMPLE_FILES, write_project

pytestmark = [pytest.mark.spark, pytest.mark.connect, pytest.mark.kafka]


def _yml(topic: Topic) -> str:
    return f"""\
name: kafka_pipeline
source:
  type: kafka
  bootstrap_servers: {topic.bootstrap}
  topic: {topic.name}
  starting_offsets: earliest
schema: >-
  {EVENT_SCHEMA}
warehouse: wh
checkpoint: cp
delta:
  engine: rs
vars:
  slow_request_ms: 1000
"""


def _check(root: Path, topic: Topic) -> None:
    good = [r for r in topic.records if not r.poison]
    offsets = read_table(root / "wh" / "event_offsets").to_pylist()
    assert Counter((r["_partition"], r["_offset"], r["eventId"]) for r in offsets) == Counter(
        (r.partition, r.offset, json.loads(r.value)["eventId"]) for r in good)
    assert Counter(r["eventId"] for r in read_table(root / "wh" / "request_logs").to_pylist()
                   ) == Counter(json.loads(r.value)["eventId"] for r in good)
    dead = read_table(root / "wh" / "_dead_letter").to_pylist()
    assert Counter(r["raw"] for r in dead) == Counter(
        r.value for r in topic.records if r.poison)


@pytest.mark.slow  # 40-80 s: two client runs, each starting the Kafka reader on the server
def test_kafka_source_over_connect(tmp_path: Path, connect_server, kafka_broker: str) -> None:
    topic = Topic.create(kafka_broker, partitions=2)
    root = write_project(tmp_path / "p", {**EXAMPLE_FILES,
                                          "models/event_offsets.sql": EVENT_OFFSETS},
                         project_yml=_yml(topic))
    for count in (120, 80):
        topic.send(count, poison_every=40)
        code, out = run_client(root, connect_server.url, "--available-now")
        assert code == 0, out[-4000:]
        assert "source kafka" in out, out
        _check(root, topic)
