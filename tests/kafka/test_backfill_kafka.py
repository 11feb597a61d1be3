"""Models added to a Kafka pipeline that has processed several batches are backfilled from the
topic (the real broker), batch by batch with the checkpoint's offsets, before the stream goes
on. The reference is what was produced (``tests/kafka/test_stream_kafka.py``'s helpers)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from runner.events import ModelJoining
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

LIVE = ("request_logs", "error_events", "performance_metrics", "_dead_letter")


#: (broker, reader, Delta engine): the embedded path and the production path.
PATHS = [("tansu", "python", "rs"), ("apache", "spark", "spark")]


@pytest.mark.parametrize(("bootstrap", "reader", "engine"), PATHS, indirect=["bootstrap"],
                         ids=[f"{b}-{r}-{e}" for b, r, e in PATHS])
def test_new_models_backfilled_from_the_topic(bootstrap: str, reader: str, engine: str,
                                              spark: Any, tmp_path: Path) -> None:
    topic = Topic.create(bootstrap, partitions=3)
    topic.send(300, poison_every=50)
    project = _project(tmp_path / "p", topic, source_extra="  max_offsets_per_trigger: 120\n",
                       reader=reader, engine=engine)
    _, batches = _run(project)
    assert [b.input_rows for b in batches] == [120, 120, 60]
    versions = {n: DeltaTable(str(project.table_path(n))).version() for n in LIVE}

    # Two models join: an append that shows each record's offset and batch, an accumulating
    # merge. The backfill reads batches 0..2 again, with their own offsets and batch ids.
    project = _project(tmp_path / "p", topic, source_extra="  max_offsets_per_trigger: 120\n",
                       models={"models/event_offsets.sql": EVENT_OFFSETS,
                               "models/endpoint_counts.sql": ENDPOINT_COUNTS},
                       reader=reader, engine=engine)
    events = Recorder()
    summary, batches = _run(project, report=events)
    progress = events.backfill
    assert summary.batches == 0
    assert [(p.batch_id, p.input_rows) for p in progress if not p.done] == [
        (0, 120), (1, 120), (2, 60)]
    assert ModelJoining("event_offsets", "new", "backfill", start=0, committed=2,
                        next_batch=3) in events
    assert {n: DeltaTable(str(project.table_path(n))).version() for n in LIVE} == versions
    _check_tables(project, topic, merge=True)
    # Each backfilled row carries its original batch id: with the dead letters (written by
    # the stream), the same layout as the rate limit made live.
    assert _per_batch_partitions(project) == {0: Counter({0: 40, 1: 40, 2: 40}),
                                              1: Counter({0: 40, 1: 40, 2: 40}),
                                              2: Counter({0: 20, 1: 20, 2: 20})}

    # The stream goes on with them.
    topic.send(90, poison_every=50)
    _, batches = _run(project)
    assert [(b.batch_id, b.input_rows) for b in batches] == [(3, 90)]
    _check_tables(project, topic, merge=True)



#: The record is engine-independent (the checkpoint's, read at start-up); the production path
#: runs it too, in the slow set (the default suite backfills on delta-spark above).
RETENTION_PATHS = [pytest.param("tansu", "python", "rs", id="tansu-python-rs"),
                   pytest.param("apache", "spark", "spark", id="apache-spark-spark",
                                marks=pytest.mark.slow)]


@pytest.mark.parametrize(("bootstrap", "reader", "engine"), RETENTION_PATHS,
                         indirect=["bootstrap"])
def test_backfill_past_sparks_retention_keeps_each_batch_id(bootstrap: str, reader: str,
                                                            engine: str, spark: Any,
                                                            tmp_path: Path) -> None:
    """Spark keeps the offsets of its last ``minBatchesToRetain`` batches only (2 here); the
    runner keeps the rest itself, so a model added after 6 batches is backfilled batch by batch
    under the original ids, as the stream wrote the other tables."""
    topic = Topic.create(bootstrap, partitions=3)
    topic.send(360, poison_every=50)
    spark_conf = ("  conf:\n    spark.sql.streaming.minBatchesToRetain: '2'\n")
    project = _project(tmp_path / "p", topic, source_extra="  max_offsets_per_trigger: 60\n",
                       reader=reader, engine=engine, spark_extra=spark_conf)
    _, batches = _run(project)
    assert [b.input_rows for b in batches] == [60] * 6
    retained = [int(p.name) for p in (project.checkpoint / "offsets").iterdir()
                if p.name.isdigit()]
    assert min(retained) >= 3  # Spark's own retention did delete batches 0.. of its logs

    project = _project(tmp_path / "p", topic, source_extra="  max_offsets_per_trigger: 60\n",
                       models={"models/event_offsets.sql": EVENT_OFFSETS}, reader=reader,
                       engine=engine, spark_extra=spark_conf)
    events = Recorder()
    _run(project, report=events)
    progress = events.backfill
    assert [(p.batch_id, p.input_rows) for p in progress if not p.done] == [
        (b, 60) for b in range(6)]
    assert _per_batch_partitions(project) == {b: Counter({0: 20, 1: 20, 2: 20})
                                              for b in range(6)}
    _check_tables(project, topic)
