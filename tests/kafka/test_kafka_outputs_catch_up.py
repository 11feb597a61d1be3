"""Kafka models through a real stream (rs engine, the Python Kafka reader, Apache Kafka): a model
whose topic does not exist and one whose topic an ACL denies the producer's principal are
parked, the other models' tables stay exact, and with the topic created and the write granted
the next start catches them up exactly once; Kafka models added to a checkpoint that
holds batches are backfilled from the history (the default) or start at the next batch
(``backfill=false``). ``runner status`` and ``runner snapshot`` show them as topics.

Counting is a ``read_committed`` consumer's. One stream setup for both (two runs of the
pipeline in this process, on the shared session): about 50 s on the idle 2-core machine
(plus the shared session's and broker's start), so it stays in the default suite.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from runner.checkpoint.registry import load_registry
from runner.events import ModelJoining
from runner.ops.snapshot import snapshot_of
from runner.ops.status import collect_status, status_lines
from tests.kafka.test_stream_kafka import EVENT_OFFSETS, Topic, _check_tables, _project, _rows, _run
from tests.support.brokers import SASL_PASSWORD, SASL_USER, ApacheKafkaBroker, create_topic, deny
from tests.support.events import Recorder
from tests.support.kafka_out import read_committed

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

OUT = """{{{{ config(materialized='kafka', topic='{topic}'{extra}) }}}}
SELECT eventId AS key, eventId, _batch_id
FROM parsed_events
"""

RATE = "  max_offsets_per_trigger: 50\n"


def _models(parked: str, denied: str, late: str | None = None,
            nxt: str | None = None) -> dict[str, str]:
    models = {"models/event_offsets.sql": EVENT_OFFSETS,
              "models/events_out.sql": OUT.format(topic=parked, extra=""),
              "models/denied_out.sql": OUT.format(topic=denied, extra="")}
    if late is not None:
        models["models/late_out.sql"] = OUT.format(topic=late, extra="")
    if nxt is not None:
        models["models/next_out.sql"] = OUT.format(topic=nxt, extra=", backfill=false")
    return models


def _once(bootstrap: str, topic: str) -> dict[str, int]:
    """eventId -> batch id of every committed record of ``topic``; each id seen once."""
    records = read_committed(bootstrap, topic)
    counts = Counter(r["eventId"] for r in records)
    assert set(counts.values()) <= {1}, [e for e, n in counts.items() if n > 1][:5]
    return {r["eventId"]: r["_batch_id"] for r in records}


def test_a_parked_kafka_model_catches_up_and_added_ones_backfill_exactly_once(
        apache_kafka_node: ApacheKafkaBroker, spark: Any, tmp_path: Path) -> None:
    apache_kafka = apache_kafka_node.bootstrap
    source = Topic.create(apache_kafka, partitions=2)
    source.send(120, poison_every=25)
    parked_t, denied_t, late_t, next_t = (f"out_{uuid.uuid4().hex[:8]}" for _ in range(4))
    create_topic(apache_kafka, denied_t, 2)
    deny(apache_kafka, topic=denied_t)
    root = tmp_path / "p"
    # the Kafka models produce as the SASL user, whom the node's ACLs may deny a topic
    target = {"kafka_outputs": {
        "bootstrap_servers": apache_kafka_node.sasl_bootstrap,
        "options": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD}}}

    # 1. events_out's topic does not exist, denied_out's topic is not the client's to write:
    # both parked at batch 0, the tables go on.
    project = _project(root, source, source_extra=RATE, reader="python", engine="rs",
                       models=_models(parked_t, denied_t), target=target)
    summary, batches = _run(project)
    assert [b.batch_id for b in batches] == [0, 1, 2]
    assert set(summary.parked) == {"events_out", "denied_out"}
    entry = load_registry(project.checkpoint)["events_out"]  # type: ignore[index]
    assert (entry.state, entry.left_at) == ("parked", 0)
    assert "KAFKA_UNKNOWN_TOPIC_OR_PART" in entry.error and parked_t in entry.error
    entry = load_registry(project.checkpoint)["denied_out"]  # type: ignore[index]
    assert (entry.state, entry.left_at) == ("parked", 0)
    assert "KAFKA_TOPIC_AUTHORIZATION_FAILED" in entry.error and denied_t in entry.error
    assert read_committed(apache_kafka, denied_t) == []
    _check_tables(project, source)
    status = collect_status(project)
    line = next(x for x in status_lines(status) if x.strip().startswith("events_out "))
    assert f"kafka topic {parked_t}" in line and "PARKED since batch 0" in line, line
    assert status.to_dict()["topics"]["events_out"]["last_batch"] is None
    topic = snapshot_of(project).to_dict()["topics"]["events_out"]
    assert topic["batch"] is None and topic["parked_since"] == 0

    # 2. The topic is created and the write granted; late_out (backfilled) and next_out
    # (backfill=false) join; the next start catches events_out and denied_out up, backfills
    # late_out, then the stream goes on.
    for name in (parked_t, late_t, next_t):
        create_topic(apache_kafka, name, 2)
    deny(apache_kafka, topic=denied_t, remove=True)
    later = {json.loads(r.value)["eventId"] for r in source.send(60, poison_every=25)
             if not r.poison}
    project = _project(root, source, source_extra=RATE, reader="python", engine="rs",
                       models=_models(parked_t, denied_t, late_t, next_t), target=target)
    events = Recorder()
    summary, batches = _run(project, report=events)
    assert not summary.parked and [b.batch_id for b in batches] == [3, 4]
    assert ModelJoining("late_out", "new", "backfill", start=0, committed=2,
                        next_batch=3) in events
    _check_tables(project, source)

    # Every valid event once in each backfilled topic, with its original batch id (the
    # tables' own); next_out only from batch 3 on.
    tables = {r["eventId"]: r["_batch_id"] for r in _rows(project, "event_offsets")}
    assert _once(apache_kafka, parked_t) == tables
    assert _once(apache_kafka, denied_t) == tables
    assert _once(apache_kafka, late_t) == tables
    nxt = _once(apache_kafka, next_t)
    assert set(nxt) == later and set(nxt.values()) <= {3, 4}

    doc = snapshot_of(project).to_dict()
    assert doc["batch_id"] == 4 and not any("lag" in t for t in doc["tables"].values())
    assert doc["topics"] == {"events_out": {"topic": parked_t, "batch": 4},
                             "denied_out": {"topic": denied_t, "batch": 4},
                             "late_out": {"topic": late_t, "batch": 4},
                             "next_out": {"topic": next_t, "batch": 4}}
    assert snapshot_of(project, batch=1).to_dict()["topics"] == {
        "events_out": {"topic": parked_t, "batch": 1}, "denied_out": {"topic": denied_t, "batch": 1},
        "late_out": {"topic": late_t, "batch": 1}}
    topics = collect_status(project).to_dict()["topics"]
    assert {m: (t["last_batch"], t["error"], t["parked_since"]) for m, t in topics.items()} == {
        m: (4, None, None) for m in ("events_out", "denied_out", "late_out", "next_out")}
