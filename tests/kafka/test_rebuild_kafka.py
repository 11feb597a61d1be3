"""A rebuild on Kafka checks, then acts: records deleted from the topic before the rebuild
(retention, DeleteRecords) make it refuse before dropping anything, under
``fail_on_data_loss: true``.

One Delta engine (rs): the refusal comes before any table is written or dropped; the tables a
rebuild writes are checked on both engines in tests/faults/test_rebuild.py. Apache Kafka only:
Tansu does not implement DeleteRecords.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.checkpoint.registry import REGISTRY_FILE
from runner.errors import ConfigError
from runner.sinks.tables import current_version
from tests.kafka.test_stream_kafka import Topic, _delete_records, _project, _run

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.mark.parametrize(("reader", "refusal"), [
    # both readers record where batch 0 started (the Python reader: runner.kafka_start.json;
    # Spark's source: sources/0/0): offsets 0..9 of batch 0 are gone
    ("python", r"(?s)no longer hold the whole history of batches 0..1.*offsets 0..9"),
    ("spark", r"(?s)no longer hold the whole history of batches 0..1.*offsets 0..9"),
])
def test_rebuild_refused_when_the_topic_lost_records_of_the_history(
        apache_kafka: str, reader: str, refusal: str, spark: Any, tmp_path: Path) -> None:
    topic = Topic.create(apache_kafka, partitions=1)
    project = _project(tmp_path / "p", topic, reader=reader)
    for _ in range(2):
        topic.send(40, poison_every=0)
        _run(project)
    _delete_records(apache_kafka, topic.name, {0: 10})  # retention removed offsets 0..9
    table = project.table_path("error_events")
    version = current_version(table)
    registry = (project.checkpoint / REGISTRY_FILE).read_text()
    with pytest.raises(ConfigError, match=refusal):
        _run(project, rebuild=["error_events"])
    assert current_version(table) == version  # nothing dropped or written
    assert (project.checkpoint / REGISTRY_FILE).read_text() == registry
