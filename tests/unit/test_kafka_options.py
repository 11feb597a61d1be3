"""The Kafka source's settings have one owner: project.yml's ``KafkaSource`` becomes the readers'
``KafkaSourceOptions`` in one function, and the Python data source's string options round-trip
through it (no Spark, no broker)."""

from __future__ import annotations

from typing import Any

import pytest

from runner.errors import ConfigError
from runner.project.config import KafkaSource
from runner.sources.kafka.options import KafkaSourceOptions, client_properties
from runner.sources.kafka.reader import spark_source_options

SECRET = "hunter2-do-not-log"


def kafka_source(**settings: Any) -> KafkaSource:
    return KafkaSource.model_validate({"type": "kafka", "bootstrap_servers": "b:9092",
                                       "topic": "t", **settings})


def test_from_source_splits_tuning_from_client_properties() -> None:
    source = kafka_source(
        topic=["a,b", " c", "a"], starting_offsets={"a": {"0": 1}, "b": {"0": -2}, "c": {"0": -1}},
        max_offsets_per_trigger=50, fail_on_data_loss=False,
        options={"min_partitions": 4, "timeout_ms": "1000", "client.id": "x",
                 "sasl.password": SECRET})
    opts = KafkaSourceOptions.from_source(source, start_record="/ck")
    assert opts.topics == ("a", "b", "c")
    assert opts.starting_offsets == {("a", 0): 1, ("b", 0): -2, ("c", 0): -1}
    assert (opts.max_offsets_per_trigger, opts.fail_on_data_loss) == (50, False)
    assert (opts.min_partitions, opts.timeout_ms, opts.read_timeout_ms) == (4, 1000, None)
    assert opts.start_record == "/ck"
    assert opts.client_config == {"client.id": "x", "sasl.password": SECRET}
    assert client_properties(source) == opts.client_config
    assert SECRET not in repr(opts)


def test_the_string_options_round_trip() -> None:
    source = kafka_source(topic=["a", "b"], starting_offsets={"a": {"1": 7, "0": 5}, "b": {"0": -1}},
                          max_offsets_per_trigger=9,
                          options={"read_timeout_ms": "2000", "max_records_per_partition": "10",
                                   "security.protocol": "SASL_SSL"})
    opts = KafkaSourceOptions.from_source(source, start_record="/ck")
    strings = opts.to_options()
    assert strings["starting_offsets"] == '{"a": {"0": 5, "1": 7}, "b": {"0": -1}}'
    assert strings["kafka.security.protocol"] == "SASL_SSL"
    assert "timeout_ms" not in strings and "min_partitions" not in strings  # unset stays unset
    assert KafkaSourceOptions.parse(strings) == opts
    plain = KafkaSourceOptions.from_source(kafka_source())
    assert KafkaSourceOptions.parse(plain.to_options()) == plain
    assert (plain.timeout_s, plain.read_timeout_s) == (5.0, 30.0)  # the Python reader's defaults


@pytest.mark.parametrize("settings, message", [
    ({"topic": []}, "at least one topic"),
    ({"starting_offsets": {"u": {"0": 1}}}, "not subscribed: u"),
    ({"options": {"min_partitions": "zero"}}, "min_partitions must be a positive integer"),
    ({"options": {"timeout_ms": "0"}}, "timeout_ms must be a positive integer"),
])
def test_from_source_refuses_what_the_readers_refuse(settings: dict[str, Any],
                                                     message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KafkaSourceOptions.from_source(kafka_source(**settings))


def test_reserved_client_properties_are_the_python_readers_to_refuse() -> None:
    """Spark's source has its own rules for client properties (it takes ``group.id``); the
    Python reader refuses the ones it manages when it parses its string options."""
    opts = KafkaSourceOptions.from_source(kafka_source(options={"group.id": "g"}))
    with pytest.raises(ConfigError, match="kafka.group.id is not allowed"):
        KafkaSourceOptions.parse(opts.to_options())


def test_spark_source_options() -> None:
    opts = KafkaSourceOptions.from_source(kafka_source(
        topic="a,b", max_offsets_per_trigger=9, fail_on_data_loss=False,
        options={"min_partitions": "4", "read_timeout_ms": "7000", "client.id": "x"}))
    assert spark_source_options(opts, None) == {
        "kafka.bootstrap.servers": "b:9092", "subscribe": "a,b", "startingOffsets": "earliest",
        "failOnDataLoss": "false", "kafka.client.id": "x", "minPartitions": "4",
        "kafkaConsumer.pollTimeoutMs": "7000", "maxOffsetsPerTrigger": "9"}
    bounded = spark_source_options(opts, 30.0)  # a third of it per attempt, three attempts
    assert (bounded["kafka.request.timeout.ms"], bounded["kafka.default.api.timeout.ms"],
            bounded["fetchOffset.numRetries"]) == ("10000", "10000", "3")
    assert bounded["kafkaConsumer.pollTimeoutMs"] == "7000"  # the options' own value wins
    own = KafkaSourceOptions.from_source(kafka_source(options={"request.timeout.ms": "500"}))
    assert spark_source_options(own, 30.0)["kafka.request.timeout.ms"] == "500"
