"""``starting_offsets: latest`` on the runner's Python reader: where batch 0 started is
resolved once, recorded in the checkpoint (``runner.kafka_start.json``) and used ever after.

Before, it was never recorded: a start before any record arrived resolved `latest` again on the
next start (the records in between were never read); a crash inside batch 0 resolved it again
on the replay, past batch 0's end (the tables that had not committed batch 0 lost it); and a
backfill started batch 0 at the earliest offset (a new table got records no other table has).

Python reader only: Spark's own Kafka source records batch 0's start itself (``sources/0/0``).
Tansu broker (the embedded path). Both Delta engines: what is checked is what lands in Delta.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner.checkpoint.identity import read_kafka_start
from runner.errors import RunnerError
from runner.project.loader import Project, load_project
from tests.kafka.test_stream_kafka import (
    EVENT_OFFSETS,
    Topic,
    _check_tables,
    _per_batch_partitions,
    _project,
    _run,
)
from tests.support.projects import ENDPOINT_COUNTS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

OFFSETS = {"models/event_offsets.sql": EVENT_OFFSETS}


def _latest(root: Path, topic: Topic, engine: str, models: dict[str, str]) -> Project:
    _project(root, topic, models=models, reader="python", engine=engine)
    yml = root / "project.yml"
    yml.write_text(yml.read_text().replace("starting_offsets: earliest",
                                           "starting_offsets: latest"))
    return load_project(root)


def test_latest_is_resolved_once_and_batch_0_replayed_from_there(
        kafka_broker: str, delta_engine: str, spark: Any, tmp_path: Path, armed) -> None:
    topic = Topic.create(kafka_broker, partitions=3)
    topic.send(60, poison_every=25)  # before the pipeline's first start: `latest` skips them
    root = tmp_path / "p"
    project = _latest(root, topic, delta_engine, OFFSETS)
    _, batches = _run(project)  # nothing after `latest` yet: no batch, but the start is kept
    assert batches == []
    assert read_kafka_start(project.checkpoint) == {topic.name: {"0": 20, "1": 20, "2": 20}}

    topic.send(90, poison_every=25)  # batch 0 (before: lost, `latest` resolved again)
    armed("sink.after_commit:request_logs@0")  # batch 0 dies after one table committed it
    with pytest.raises(RunnerError, match="failpoint"):
        _run(project)
    armed("")
    topic.send(30, poison_every=25)  # the replay of batch 0 must still start before these
    _, batches = _run(project)
    assert [b.batch_id for b in batches] == [0, 1]
    since_start = replace(topic, records=topic.records[60:])
    _check_tables(project, since_start)  # every table has batch 0 exactly, and batch 1
    assert _per_batch_partitions(project) == {0: Counter({0: 30, 1: 30, 2: 30}),
                                              1: Counter({0: 10, 1: 10, 2: 10})}

    # A new model is backfilled over batches 0..1 from the recorded start, not the earliest
    # offset: it gets batch 0's records and none of the 60 from before the first start.
    project = _latest(root, topic, delta_engine,
                      {**OFFSETS, "models/endpoint_counts.sql": ENDPOINT_COUNTS})
    events: list[str] = []
    summary, _ = _run(project, on_event=events.append)
    assert summary.batches == 0
    assert any("endpoint_counts is new to this checkpoint: backfilling batches 0..1" in e
               for e in events), events
    _check_tables(project, since_start, merge=True)
