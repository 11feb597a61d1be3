"""The Kafka output writer on a real Apache Kafka node, without Spark: a batch is one
transaction with its marker, a replay is skipped, a second writer fences the first, and a
topic that does not exist, a record too large and an authorization failure are the model's own
error (parked by the batch).

Counting is a ``read_committed`` consumer's, as a downstream service would read.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from runner.errors import KafkaRecordError, SinkError
from runner.project.kafka_outputs import KafkaOutputs
from runner.sinks.base import SinkSpec
from runner.sinks.kafka_out import KafkaWriter
from tests.support.brokers import SASL_PASSWORD, SASL_USER, ApacheKafkaBroker, create_topic, deny
from tests.support.kafka_out import read_committed

pytestmark = [pytest.mark.kafka]


def _spec(topic: str | None, model: str = "orders_out") -> SinkSpec:
    return SinkSpec(model=model, path="unused", app_id=f"p.{model}.{uuid.uuid4().hex[:8]}",
                    materialized="kafka", topic=topic)


def _rows(first: int, count: int) -> pa.Table:
    return pa.table({"key": [f"k{i}" for i in range(first, first + count)],
                     "id": list(range(first, first + count))})


def test_a_batch_is_one_transaction_and_its_replay_is_skipped(apache_kafka) -> None:
    topic = f"out_{uuid.uuid4().hex[:8]}"
    create_topic(apache_kafka, topic, 2)
    outputs = KafkaOutputs(bootstrap_servers=apache_kafka)
    spec = _spec(topic)
    writer = KafkaWriter(outputs)
    assert writer.committed_version(spec) is None
    assert writer.write(spec, _rows(0, 100), 0).rows == 100
    assert writer.write(spec, _rows(100, 50), 1).rows == 50
    assert writer.write(spec, _rows(100, 50), 1).skipped
    writer.close()
    again = KafkaWriter(outputs)  # a restart: the marker is read back from Kafka
    assert again.committed_version(spec) == 1
    assert again.write(spec, _rows(0, 100), 0).skipped
    again.close()
    values = read_committed(apache_kafka, topic)
    assert sorted(int(v["id"]) for v in values) == list(range(150))


def test_a_second_writer_fences_the_first(apache_kafka) -> None:
    topic = f"out_{uuid.uuid4().hex[:8]}"
    create_topic(apache_kafka, topic, 1)
    outputs = KafkaOutputs(bootstrap_servers=apache_kafka)
    spec = _spec(topic)
    first, second = KafkaWriter(outputs), KafkaWriter(outputs)
    first.write(spec, _rows(0, 10), 0)
    second.write(spec, _rows(10, 10), 1)  # init_transactions fences the first
    with pytest.raises(SinkError, match="fenced|Fenced|FENCED"):
        first.write(spec, _rows(99, 10), 2)
    first.close()
    second.close()
    assert sorted(int(v["id"]) for v in read_committed(apache_kafka, topic)) == list(range(20))


def test_an_unknown_topic_is_the_model_s_error(apache_kafka) -> None:
    writer = KafkaWriter(KafkaOutputs(bootstrap_servers=apache_kafka), timeout=20)
    spec = _spec(f"missing_{uuid.uuid4().hex[:8]}")
    with pytest.raises(KafkaRecordError, match="does not exist") as raised:
        writer.write(spec, _rows(0, 3), 0)
    assert raised.value.error_class.startswith("KAFKA_")
    assert writer.committed_version(spec) is None
    writer.close()


def test_a_record_over_the_size_limit_is_the_model_s_error(apache_kafka) -> None:
    """``message.max.bytes`` set small in the profile's options: the transaction is aborted
    (nothing of the batch visible) and the error parks the model; the same writer then
    produces the batch once the records fit."""
    topic = f"out_{uuid.uuid4().hex[:8]}"
    create_topic(apache_kafka, topic, 1)
    outputs = KafkaOutputs(bootstrap_servers=apache_kafka,
                           options={"message.max.bytes": "2000"})  # type: ignore[dict-item]
    writer = KafkaWriter(outputs, timeout=20)
    spec = _spec(topic)
    big = pa.table({"key": ["k0", "k1"], "id": [0, 1], "pad": ["x", "x" * 5000]})
    with pytest.raises(KafkaRecordError, match="larger than") as raised:
        writer.write(spec, big, 0)
    assert raised.value.error_class == "KAFKA_MSG_SIZE_TOO_LARGE"
    assert writer.committed_version(spec) is None
    assert writer.write(spec, _rows(0, 3), 0).rows == 3
    writer.close()
    assert sorted(int(v["id"]) for v in read_committed(apache_kafka, topic)) == [0, 1, 2]


def _sasl_outputs(node: ApacheKafkaBroker) -> KafkaOutputs:
    """The writer as the SASL user, whom the shared node's ACLs may deny a resource."""
    return KafkaOutputs(bootstrap_servers=node.sasl_bootstrap, options={  # type: ignore[arg-type]
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD})


def test_an_authorization_failure_is_the_model_s_error(apache_kafka_node) -> None:
    """A topic the principal may not write (an ACL denies it), and a transactional id it may
    not use, park the model (KafkaRecordError: nothing of the batch visible); the writer's
    other model, on a topic it may write, goes on."""
    node = apache_kafka_node
    denied, allowed = f"out_{uuid.uuid4().hex[:8]}", f"out_{uuid.uuid4().hex[:8]}"
    create_topic(node.bootstrap, denied, 1)
    create_topic(node.bootstrap, allowed, 1)
    deny(node.bootstrap, topic=denied)
    no_id = _spec(allowed, model="no_id_out")
    deny(node.bootstrap, transactional_id=no_id.app_id)
    writer = KafkaWriter(_sasl_outputs(node), timeout=20)
    with pytest.raises(KafkaRecordError, match="may not write the topic") as raised:
        writer.write(_spec(denied), _rows(0, 3), 0)
    assert raised.value.error_class == "KAFKA_TOPIC_AUTHORIZATION_FAILED"
    with pytest.raises(KafkaRecordError, match="transactional id") as raised:
        writer.write(no_id, _rows(0, 3), 0)
    assert raised.value.error_class == "KAFKA_TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert writer.write(_spec(allowed, model="other_out"), _rows(0, 3), 0).rows == 3
    writer.close()
    assert read_committed(node.bootstrap, denied) == []
    assert sorted(int(v["id"]) for v in read_committed(node.bootstrap, allowed)) == [0, 1, 2]
