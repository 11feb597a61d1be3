"""A Kafka model's batch marker: the one place that reads it back from Kafka.

The transactional writer (:mod:`runner.sinks.kafka_out`) commits, in the same transaction as a
batch's records, the batch id as the committed offset (``batch id + 1``) of the consumer group
named by the model's transactional id on partition 0 of the control topic. :func:`marker_of`
reads it with ``isolation.level=read_committed`` (the broker answers once no transaction holds
a pending offset for that group): the writer on its first batch, to skip what a replay finds
committed, and ``runner status`` (:func:`read_markers`), to show the last batch in Kafka.

Reading needs only a consumer: no producer is made, so reading never fences a running
stream's transactional producer (``init_transactions`` would).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError

if TYPE_CHECKING:
    from confluent_kafka import Consumer

    from runner.project.kafka_outputs import KafkaOutputs

__all__ = ["brokers_of", "earlier_history", "marker_consumer", "marker_of", "read_markers",
           "reason_of"]


def brokers_of(outputs: KafkaOutputs) -> str:
    """The output brokers (``bootstrap.servers``).

    Raises:
        ConfigError: the profile's target names none (nor does a Kafka source).
    """
    if not outputs.bootstrap_servers:
        raise ConfigError("a materialized='kafka' model needs brokers: the profile target's "
                          "kafka_outputs.bootstrap_servers (or a Kafka source's)",
                          hint="add kafka_outputs: {bootstrap_servers: host:port} to the target"
                               " in profiles.yml (docs/PROFILES.md)")
    return outputs.bootstrap_servers


def reason_of(e: BaseException) -> str:
    """librdkafka's own words for ``e`` (its KafkaError's string), else ``str(e)``."""
    if e.args and hasattr(e.args[0], "str"):
        return str(e.args[0].str())
    return str(e) or type(e).__name__


def marker_consumer(outputs: KafkaOutputs, app_id: str) -> Consumer:
    """A consumer of the group whose committed offset is ``app_id``'s marker: it never
    subscribes (no group membership, no rebalance) and never commits."""
    from confluent_kafka import Consumer

    options = {k: v.get_secret_value() for k, v in outputs.options.items()}
    return Consumer({**options, "bootstrap.servers": brokers_of(outputs), "group.id": app_id,
                     "isolation.level": "read_committed", "enable.auto.commit": "false",
                     "logger": logging.getLogger("runner.kafka.client")})


def marker_of(consumer: Consumer, control_topic: str, *, timeout: float) -> int | None:
    """The last batch committed under the consumer's group (None: none yet).

    Raises:
        KafkaException: the brokers did not answer within ``timeout`` seconds, or refused.
    """
    from confluent_kafka import TopicPartition

    (got,) = consumer.committed([TopicPartition(control_topic, 0)], timeout=timeout)
    return got.offset - 1 if got.offset >= 0 else None


def read_markers(outputs: KafkaOutputs, app_ids: Mapping[str, str], *,
                 timeout: float = 10.0) -> tuple[dict[str, int | None], str | None]:
    """Each model's last batch in Kafka (``app_ids``: model -> its transactional id).

    Returns:
        ``(model -> last batch, problem)``: the batches read, and why the others could not be
        (brokers unset or not answering: asked no further, so a status waits ``timeout``
        once, not once per model); ``problem`` is None when every marker was read.
    """
    from confluent_kafka import KafkaException

    found: dict[str, int | None] = {}
    for model, app in app_ids.items():
        try:
            consumer = marker_consumer(outputs, app)
        except ConfigError as e:
            return found, e.message
        except KafkaException as e:  # a client option librdkafka refuses
            return found, f"the Kafka client could not start: {reason_of(e)}"
        try:
            found[model] = marker_of(consumer, outputs.control_topic, timeout=timeout)
        except KafkaException as e:
            return found, (f"Kafka at {outputs.bootstrap_servers} did not answer within "
                           f"{timeout:g}s ({reason_of(e)})")
        finally:
            consumer.close()
    return found, None


def earlier_history(outputs: KafkaOutputs, *, prefix: str, current: str, topic: str | None,
                    timeout: float = 10.0) -> list[str]:
    """The transactional ids, other than ``current``, of ``prefix`` + a query id (``prefix``:
    ``"<pipeline>.<model>."``, :func:`runner.sinks.base.app_id`) that committed a batch marker,
    when ``topic`` holds records and ``current`` committed none; empty when the topic holds
    none (or does not exist), or when ``current`` has a marker (this checkpoint produced the
    model: what it replays, the writer skips). ``topic`` None
    (each row's ``topic`` column routes it): the markers alone.

    Neither the markers nor the records name the topic a batch went to, so a marker of an
    earlier checkpoint together with a non-empty topic is the test: that model of this pipeline
    produced its batches, and a topic that holds records may hold them.

    Raises:
        KafkaException: the brokers did not answer within ``timeout`` seconds, or refused.
    """
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    options = {k: v.get_secret_value() for k, v in outputs.options.items()}
    consumer = marker_consumer(outputs, current)
    try:
        if marker_of(consumer, outputs.control_topic, timeout=timeout) is not None:
            return []
        if topic is not None:
            meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
            if meta is None or meta.error is not None:
                return []  # no such topic: nothing to produce twice into
            if not any(high > low for low, high in (
                    consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
                    for p in meta.partitions)):
                return []
        conf: dict[str, Any] = {**options, "bootstrap.servers": brokers_of(outputs),
                                "logger": logging.getLogger("runner.kafka.client")}
        admin = AdminClient(conf)
        groups = admin.list_consumer_groups(request_timeout=timeout).result()
        ids = sorted(g.group_id for g in groups.valid
                     if g.group_id.startswith(prefix) and g.group_id != current
                     and "." not in g.group_id[len(prefix):])
        found = []
        for app in ids:
            other = marker_consumer(outputs, app)
            try:
                if marker_of(other, outputs.control_topic, timeout=timeout) is not None:
                    found.append(app)
            finally:
                other.close()
        return found
    finally:
        consumer.close()
