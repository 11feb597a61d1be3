"""Kafka: pure offset planning (:mod:`.plan`), the source's options (:mod:`.options`), the
runner's Python data source on confluent-kafka (:mod:`.datasource`), and the choice between it
and Spark's own Kafka source (:mod:`.reader`).

The reader's names are imported on first use, so that ``compile`` can validate a Kafka
source with :mod:`.plan` without importing pyspark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.sources.kafka.reader import read_kafka_stream, spark_kafka_available

__all__ = ["spark_kafka_available", "read_kafka_stream"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'runner.sources.kafka' has no attribute '{name}'")
    value = getattr(importlib.import_module("runner.sources.kafka.reader"), name)
    globals()[name] = value
    return value
