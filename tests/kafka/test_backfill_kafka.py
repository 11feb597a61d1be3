"""Models added to a Kafka pipeline that has processed several batches are backfilled from the
topic (the real broker), batch by batch with the checkpoint's offsets, before the stream goes
on. The reference is what was produced (``tests/kafka/test_stream_kafka.py``'s helpers)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

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
    events, progress = [], []
    summary, batches = _run(project, on_event=events.append, on_backfill=progress.append)
    assert summary.batches == 0
    assert [(p.batch_id, p.input_rows) for p in progress if not p.done] == [
        (0, 120), (1, 120), (2, 60)]
    assert any("model event_offsets is new to this checkpoint: backfilling batches 0..2" in e
               for e in events)
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

