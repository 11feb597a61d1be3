"""The partitions and watermarks of the subscribed topics, asked once through confluent-kafka's
admin client: the one implementation behind the Python reader's planning, the start-up check
of the brokers and ``runner status``'s backlog. No pyspark; confluent-kafka is imported here,
on first use.

Transport failures raise the library's ``KafkaException`` (each caller says it its own way:
a source error mid-stream, a configuration error at start, a line in a report); a topic that
is missing or refused is returned, not raised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.sources.kafka.offset_plan import TP, Watermarks

__all__ = ["Listing", "list_watermarks", "read_committed"]


@dataclass(frozen=True)
class Listing:
    """``marks``: watermarks of every partition of the topics that exist; ``existing``: every
    topic on the brokers; ``missing``: subscribed topics that do not exist; ``refused``:
    topic -> the broker's error for it."""

    marks: dict[TP, Watermarks]
    existing: list[str]
    missing: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


def read_committed(client_config: Mapping[str, Any]) -> bool:
    """Whether the client reads committed records only (``isolation.level``): the high
    watermark it may read is then the last stable offset, not the log end."""
    return str(client_config.get("isolation.level", "")) == "read_committed"


def list_watermarks(admin: Any, topics: Sequence[str], *, timeout: float,
                    committed: bool = False) -> Listing:
    """Ask ``admin`` (a confluent-kafka ``AdminClient``) for the topics' watermarks.

    Raises:
        KafkaException: no metadata, or no offsets, within ``timeout`` seconds.
    """
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    # All topics: naming one would make some brokers (Tansu) auto-create it.
    metadata = admin.list_topics(timeout=timeout)
    admin.poll(0)  # serves librdkafka's log queue
    tps: list[TopicPartition] = []
    missing, refused = [], {}
    for topic in topics:
        info = metadata.topics.get(topic)
        if info is None:
            missing.append(topic)
        elif info.error is not None:
            refused[topic] = info.error.str()
        else:
            tps.extend(TopicPartition(topic, p) for p in sorted(info.partitions))
    existing = sorted(metadata.topics)
    if not tps:
        return Listing({}, existing, missing, refused)
    kwargs: dict[str, Any] = {"request_timeout": timeout}
    if committed:
        from confluent_kafka import IsolationLevel

        kwargs["isolation_level"] = IsolationLevel.READ_COMMITTED
    marks: dict[str, dict[TP, int]] = {}
    for name, spec in (("low", OffsetSpec.earliest()), ("high", OffsetSpec.latest())):
        futures = admin.list_offsets({tp: spec for tp in tps}, **kwargs)
        marks[name] = {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
    return Listing({tp: Watermarks(marks["low"][tp], marks["high"][tp]) for tp in marks["low"]},
                   existing, missing, refused)
