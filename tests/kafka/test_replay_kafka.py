"""The replay rule on Kafka (docs/RELIABILITY.md "The replay rule"): batch 1 fails after the
dead-letter table and some models committed it; retention (DeleteRecords) then removes part of
its offsets. The restart refuses (exit 2) naming the batch and the partition's lost offsets,
with nothing written, on both readers. Before, both failed inside the batch's parse (an
``ExecutionError``, exit 1, a reader's stack trace in the message)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError, ExecutionError
from tests.kafka.test_stream_kafka import EVENT_OFFSETS, Topic, _delete_records, _project, _run


#: Spark's reader (clusters) in the default run; the Python one (the same offsets) with -m slow.
@pytest.mark.parametrize("reader", ["spark", pytest.param("python", marks=pytest.mark.slow)])
def test_replay_refused_when_its_offsets_were_deleted(apache_kafka: str, reader: str, spark: Any,
                                                      tmp_path: Path, armed: Any) -> None:
    topic = Topic.create(apache_kafka, partitions=1)
    topic.send(40, poison_every=10)
    project = _project(tmp_path / "p", topic, reader=reader,
                       models={"models/event_offsets.sql": EVENT_OFFSETS})
    assert [b.input_rows for b in _run(project)[1]] == [40]  # batch 0: offsets 0..39
    topic.send(40, poison_every=10)  # batch 1: offsets 40..79
    armed("sink.before_commit:event_offsets@1=raise")
    with pytest.raises(ExecutionError, match="failpoint sink.before_commit:event_offsets"):
        _run(project)
    armed("")
    assert not (project.checkpoint / "commits" / "1").exists()
    _delete_records(apache_kafka, topic.name, {0: 50})  # retention: 40..49 gone
    with pytest.raises(ConfigError) as refused:
        _run(project)
    message = str(refused.value)
    assert "batch 1 must be replayed" in message, message
    assert "partition 0: offsets 40..49 are no longer available" in message, message
    assert "fail_on_data_loss: false" in message and refused.value.exit_code == 2
    assert not (project.checkpoint / "commits" / "1").exists()
