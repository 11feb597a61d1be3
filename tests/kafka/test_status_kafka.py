"""``runner status``'s Kafka backlog against a real broker (Tansu): lag per partition = the
partition's latest offset - the next offset the checkpoint says to read. No Spark."""

from __future__ import annotations

import json
import uuid

import pytest

from runner.ops.status import collect_status, status_lines
from runner.project.loader import load_project
from tests.support.brokers import create_topic, produce
from tests.support.projects import EVENT_SCHEMA, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.kafka


def _project(tmp_path, bootstrap: str, topic: str):
    yml = (f"name: lag\nsource:\n  type: kafka\n  bootstrap_servers: {bootstrap}\n"
           f"  topic: {topic}\nschema: >-\n  {EVENT_SCHEMA}\nwarehouse: wh\ncheckpoint: cp\n"
           "vars:\n  slow_request_ms: 1000\n")
    return load_project(write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml))


def test_lag_per_partition_from_the_checkpoint_offsets(tmp_path, kafka_broker) -> None:
    topic = f"lag-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_broker, topic, 2)
    produce(kafka_broker, topic, [(0, f'{{"n": {i}}}') for i in range(5)]
            + [(1, f'{{"n": {i}}}') for i in range(3)])
    project = _project(tmp_path, kafka_broker, topic)
    cp = project.checkpoint
    for folder in ("offsets", "commits"):
        (cp / folder).mkdir(parents=True)
    # batch 0 read up to offset 2 of partition 0 and everything of partition 1 (committed);
    # batch 1 is planned further but not committed: the lag counts from batch 0's offsets
    (cp / "offsets" / "0").write_text("v1\n{}\n" + json.dumps({topic: {"0": 2, "1": 3}}))
    (cp / "offsets" / "1").write_text("v1\n{}\n" + json.dumps({topic: {"0": 5, "1": 3}}))
    (cp / "commits" / "0").write_text("v1\n{}\n")

    status = collect_status(project)
    backlog = status.backlog.to_dict()
    assert backlog["error"] is None, backlog
    assert backlog["partitions"] == {topic: {"0": 3, "1": 0}}
    assert backlog["pending"] == 3
    assert status.in_flight_batch == 1
    assert f"backlog: 3 records behind ({topic}[0] 3, {topic}[1] 0)" in status_lines(status)


def test_an_unreachable_broker_is_reported_not_raised(tmp_path) -> None:
    project = _project(tmp_path, "127.0.0.1:1", "events")
    status = collect_status(project)
    assert status.backlog.pending is None
    assert status.backlog.error and "unreachable" in status.backlog.error
    assert any(line.startswith("backlog: unknown") for line in status_lines(status))
