"""Kafka topics as outputs: the deployment's connection for them, and a Kafka model's config rules.

A model with ``config(materialized='kafka', topic='orders-enriched')`` writes its rows to a
topic (docs/KAFKA.md "Kafka outputs"). The topic's name is the project's; the brokers and the
client's security properties are the deployment's (the profile target's ``kafka_outputs``,
by default the Kafka source's), never project.yml's: a pull request must not choose where
records, or credentials, go.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runner.project.maps import SecretMap

__all__ = ["CONTROL_TOPIC", "KafkaOutputs", "check_kafka_model"]

#: The runner-owned topic whose partition 0 anchors each Kafka model's batch marker: the
#: consumer-group offset a transaction commits with its records (runner.sinks.kafka_out).
CONTROL_TOPIC = "_runner_batches"


class KafkaOutputs(BaseModel):
    """Where Kafka models produce: brokers, client properties (librdkafka's names: security,
    SASL, TLS) and the control topic. Set by the profile's target; unset keys default to the
    Kafka source's brokers and options (a files source has none to lend)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bootstrap_servers: str | None = None
    options: SecretMap = Field(default_factory=dict)
    control_topic: str = Field(default=CONTROL_TOPIC, min_length=1, pattern=r"^[A-Za-z0-9._-]+$")


#: Config keys that only mean something for a Delta table.
_TABLE_ONLY = ("unique_key", "merge_update", "merge_condition", "partition_by", "sequence_by",
               "apply_as_deletes", "track_history_column_list")


def check_kafka_model(config: Any) -> None:
    """A Kafka model's keys (``config``: a :class:`runner.project.config.ModelConfig`, which
    imports this module): ``topic`` belongs to ``materialized='kafka'`` (whose rows may
    route themselves with a ``topic`` column instead: checked by compile's ``kafka-columns``
    rule, which sees the columns); no table keys on a Kafka model.

    Raises:
        ValueError: the message pydantic reports at the model's config() line.
    """
    if config.materialized != "kafka":
        if config.topic is not None:
            raise ValueError("topic only applies to materialized='kafka'")
        return
    used = [k for k in _TABLE_ONLY if getattr(config, k) not in (None, (), {})]
    if used:
        raise ValueError(f"{used[0]} is a table's key; a materialized='kafka' model writes "
                         "records to a topic (key, value, headers, partition columns)")
