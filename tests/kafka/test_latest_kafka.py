"""``starting_offsets: latest`` on the runner's Python reader: where batch 0 started is
resolved once, recorded in the checkpoint (``runner.kafka_start.json``) and used ever after.

Before, it was never recorded: a crash inside batch 0 resolved it again on the replay, past
batch 0's end (the tables that had not committed batch 0 lost it), and a backfill started batch
0 at the earliest offset (a new table got records no other table has).

Python reader only: Spark's own Kafka source records batch 0's start itself (``sources/0/0``).
Tansu broker (the embedded path). Both Delta engines, the spark one marked ``slow`` (about 40 s
on the 2-core machine): what is tested is the reader's record of where batch 0 started, which
no engine touches; a replayed Kafka batch on delta-spark is tested in the default suite by
``tests/kafka/test_stream_kafka.py`` (its crash replay, spark engine).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner.checkpoint.identity import KAFKA_START_FILE, read_kafka_start
from runner.events import ModelJoining
from runner.project.loader import Project, load_project
from tests.faults.test_faults import _reap, _spawn
from tests.kafka.test_stream_kafka import (
    EVENT_OFFSETS,
    Topic,
    _check_tables,
    _per_batch_partitions,
    _project,
    _run,
)
from tests.support.events import Recorder
from tests.support.projects import ENDPOINT_COUNTS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

OFFSETS = {"models/event_offsets.sql": EVENT_OFFSETS}


def _latest(root: Path, topic: Topic, engine: str, models: dict[str, str]) -> Project:
    _project(root, topic, models=models, reader="python", engine=engine)
    yml = root / "project.yml"
    yml.write_text(yml.read_text().replace("starting_offsets: earliest",
                                           "starting_offsets: latest"))
    return load_project(root)


# Slow on both engines (~46 s for rs on the CI machine, a restart and a replay): what `latest`
# resolves to is checked in the default suite by tests/kafka/test_kafka_source.py (parsed,
# resolved against the partitions, and read by the Python reader on a real broker).
@pytest.mark.slow
@pytest.mark.parametrize("delta_engine", ["rs", "spark"])
def test_latest_is_resolved_once_and_batch_0_replayed_from_there(
        kafka_broker: str, delta_engine: str, spark: Any, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    if delta_engine == "spark":
        request.getfixturevalue("delta_spark")  # the jars, as the delta_engine fixture asks
    topic = Topic.create(kafka_broker, partitions=3)
    topic.send(60, poison_every=25)  # before the pipeline's first start: `latest` skips them
    root = tmp_path / "p"
    project = _latest(root, topic, delta_engine, OFFSETS)
    # In its own process, so the failpoints reach Spark's Python worker that plans the batches
    # (its environment is the JVM's, fixed at launch): `latest` is resolved, then held while 90
    # records arrive; batch 0 reads them, and the process dies (os._exit) once request_logs
    # committed batch 0.
    proc = _spawn(project, failpoint="kafka.initial_offset=sleep:8,"
                                     "sink.after_commit:request_logs@0=exit")
    deadline = time.monotonic() + 300
    while not (project.checkpoint / KAFKA_START_FILE).exists():
        assert proc.poll() is None and time.monotonic() < deadline, _reap(proc, 5)[1][-3000:]
        time.sleep(0.2)
    topic.send(90, poison_every=25)  # batch 0
    code, out = _reap(proc, timeout=300)
    assert code == 137, out[-3000:]
    assert read_kafka_start(project.checkpoint) == {topic.name: {"0": 20, "1": 20, "2": 20}}

    topic.send(30, poison_every=25)  # a replay resolving `latest` again would start past these
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
    events = Recorder()
    summary, _ = _run(project, report=events)
    assert summary.batches == 0
    assert ModelJoining("endpoint_counts", "new", "backfill", start=0, committed=1,
                        next_batch=2) in events, events
    _check_tables(project, since_start, merge=True)
