"""A Kafka model re-enabled after a ``--full-refresh`` (rs engine, the Python Kafka reader,
Apache Kafka): without ``backfill=false`` it is new to the new checkpoint and would be
backfilled into the topic that holds its history, so the start-up refuses (exit 2) before
anything is produced; with ``backfill=false`` it continues from the next batch, each event once
in the topic (docs/KAFKA.md "Rebuilds"). Counting is a ``read_committed`` consumer's.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError
from tests.kafka.test_stream_kafka import EVENT_OFFSETS, Topic, _project, _run
from tests.support.brokers import create_topic
from tests.support.kafka_out import read_committed

# Four stream runs (a run, a --full-refresh, a refused start, a run), each a JVM-side stream
# on the shared session: well over the default suite's few seconds per feature.
pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow]

OUT = """{{{{ config(materialized='kafka', topic='{topic}'{extra}) }}}}
SELECT eventId AS key, eventId, _batch_id
FROM parsed_events
"""


def _ids(bootstrap: str, topic: str) -> Counter[str]:
    return Counter(r["eventId"] for r in read_committed(bootstrap, topic))


def test_a_kafka_model_re_enabled_after_a_full_refresh_needs_backfill_false(
        apache_kafka: str, spark: Any, tmp_path: Path) -> None:
    source = Topic.create(apache_kafka, partitions=2)
    first = {json.loads(r.value)["eventId"] for r in source.send(40, poison_every=25)
             if not r.poison}
    out = f"out_{uuid.uuid4().hex[:8]}"
    create_topic(apache_kafka, out, 2)
    root = tmp_path / "p"
    target = {"kafka_outputs": {"bootstrap_servers": apache_kafka}}

    def project(extra: str = "", disabled: bool = False) -> Any:
        sql = OUT.format(topic=out, extra=extra)
        models = {"models/event_offsets.sql": EVENT_OFFSETS,
                  "models/events_out.sql": ("{{ config(enabled=false) }}\n" + sql) if disabled
                  else sql}
        return _project(root, source, reader="python", engine="rs", models=models,
                        target=target)

    _run(project())
    assert _ids(apache_kafka, out) == Counter(first)

    # The documented refresh: the Kafka model disabled, then --full-refresh.
    _run(project(disabled=True), full_refresh=True)
    later = {json.loads(r.value)["eventId"] for r in source.send(20, poison_every=25)
             if not r.poison}

    # Re-enabled without backfill=false: refused before anything is produced.
    with pytest.raises(ConfigError) as refused:
        _run(project())
    message = f"{refused.value.message} {refused.value.hint}"
    assert "events_out" in message and out in message and "backfill=false" in message
    assert "new topic" in message and refused.value.exit_code == 2
    assert _ids(apache_kafka, out) == Counter(first)

    # With backfill=false: from the next batch on, each event once.
    _run(project(extra=", backfill=false"))
    assert _ids(apache_kafka, out) == Counter(first | later)
