"""The Apache Kafka fixture (``apache_kafka``): a real KRaft node that topics, producers,
consumers, the admin API's DeleteRecords (which Tansu lacks) and both of the runner's Kafka
readers work against."""

from __future__ import annotations

import os
import pickle
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from runner.project.config import KafkaSource
from runner.sources.kafka.datasource import KafkaDataSource
from runner.sources.kafka.reader import read_kafka_stream, spark_kafka_available
from tests.support.brokers import create_topic, produce

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

pytestmark = pytest.mark.kafka


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, name, partitions)
    return name


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of every record from each partition's low watermark."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        records: list[tuple[int, int, str]] = []
        at_end: set[int] = set()
        while len(at_end) < partitions:
            msg = consumer.poll(10)
            assert msg is not None, "no record nor end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            records.append((msg.partition(), msg.offset(), msg.value().decode()))
        return sorted(records)
    finally:
        consumer.close()


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        return int(low), int(high)
    finally:
        consumer.close()


def test_produce_and_read_back(apache_kafka: str) -> None:
    topic = new_topic(apache_kafka, 2)
    produce(apache_kafka, topic, [(i % 2, f'{{"i": {i}}}') for i in range(6)])
    assert consume_all(apache_kafka, topic, 2) == \
        [(i % 2, i // 2, f'{{"i": {i}}}') for i in sorted(range(6), key=lambda i: (i % 2, i))]
    assert watermarks(apache_kafka, topic, 0) == (0, 3)


def test_delete_records_moves_the_low_watermark(apache_kafka: str) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = new_topic(apache_kafka, 1)
    produce(apache_kafka, topic, [(0, f"r{i}") for i in range(5)])
    admin = AdminClient({"bootstrap.servers": apache_kafka})
    for future in admin.delete_records([TopicPartition(topic, 0, 3)]).values():
        assert future.result(timeout=10).low_watermark == 3
    assert watermarks(apache_kafka, topic, 0) == (3, 5)
    assert consume_all(apache_kafka, topic, 1) == [(0, 3, "r3"), (0, 4, "r4")]


def test_python_reader_reads_offsets_and_records(apache_kafka: str) -> None:
    topic = new_topic(apache_kafka, 2)
    produce(apache_kafka, topic, [(i % 2, f"v{i}") for i in range(4)], key="k")
    stream = KafkaDataSource({"bootstrap_servers": apache_kafka, "topic": topic,
                              "starting_offsets": "earliest"}).streamReader(None)  # type: ignore[arg-type]
    start = stream.initialOffset()
    end = stream.latestOffset(start, stream.getDefaultReadLimit())
    assert end == {topic: {"0": 2, "1": 2}}
    rows = []
    for part in stream.partitions(start, end):
        for batch in stream.read(pickle.loads(pickle.dumps(part))):
            rows.extend(batch.to_pylist())
    assert sorted((r["_partition"], r["_offset"], r["value"], r["_key"]) for r in rows) == \
        [(0, 0, "v0", "k"), (0, 1, "v2", "k"), (1, 0, "v1", "k"), (1, 1, "v3", "k")]


@pytest.mark.spark
@pytest.mark.parametrize("implementation", ["spark", "python"])
def test_both_readers_stream_the_same_records(spark: Any, apache_kafka: str, tmp_path: Path,
                                              implementation: str) -> None:
    if implementation == "spark" and not spark_kafka_available(spark):
        if os.environ.get("RUNNER_REQUIRE_JARS") == "1":
            pytest.fail("RUNNER_REQUIRE_JARS=1 but Spark's Kafka source did not load")
        pytest.skip("Spark's Kafka source (spark-sql-kafka jars) not on the classpath")
    topic = new_topic(apache_kafka, 2)
    produce(apache_kafka, topic, [(i % 2, f"v{i}") for i in range(6)])
    df = read_kafka_stream(spark, KafkaSource.model_validate({
        "type": "kafka", "bootstrap_servers": apache_kafka, "topic": topic,
        "reader": implementation}))
    rows: list[Any] = []
    query = (df.writeStream.foreachBatch(lambda b, _: rows.extend(b.collect()))
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120), "query did not finish"
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    assert sorted((r._partition, r._offset, r.value) for r in rows) == \
        [(i % 2, i // 2, f"v{i}") for i in sorted(range(6), key=lambda i: (i % 2, i))]
