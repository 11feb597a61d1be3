"""The Kafka tests' broker fixture, for the Kafka source over Spark Connect."""

from tests.kafka.conftest import kafka_broker

__all__ = ["kafka_broker"]
