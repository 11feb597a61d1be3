"""Reading Kafka output topics as a downstream service would: ``isolation.level=
read_committed``, every partition from the beginning to its last stable offset."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any


def read_committed(bootstrap: str, topic: str, *, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every committed record's value (JSON objects) of ``topic``, read to its end."""
    return [json.loads(v) for v in read_values(bootstrap, topic, timeout=timeout)]


def read_values(bootstrap: str, topic: str, *, timeout: float = 30.0) -> list[bytes]:
    """Every committed record's raw value of ``topic`` (aborted and open transactions'
    records are not returned, as for any ``read_committed`` consumer)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "log_level": 3})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: _high(consumer, TopicPartition(topic, p)) for p in parts}
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        out: list[bytes] = []
        done: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout
        while len(done) < len(parts) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                for p in set(parts) - done:  # past the last stable offset: markers only
                    pos = consumer.position([TopicPartition(topic, p)])[0].offset
                    if pos >= ends[p]:
                        done.add(p)
                continue
            if msg.error():
                continue
            out.append(msg.value())
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return out
    finally:
        consumer.close()


_NO_LEADER_YET = {"NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART"}


def _high(consumer: Any, partition: Any, attempts: int = 20) -> int:
    """The partition's high watermark, asked again while the broker answers with a retriable
    error (a topic just created: ``NOT_LEADER_FOR_PARTITION`` until its leader is known)."""
    from confluent_kafka import KafkaException

    for attempt in range(attempts):
        try:
            return int(consumer.get_watermark_offsets(partition, timeout=10)[1])
        except KafkaException as e:
            err = e.args[0]
            if attempt == attempts - 1 or not (err.retriable() or err.name() in _NO_LEADER_YET):
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")
