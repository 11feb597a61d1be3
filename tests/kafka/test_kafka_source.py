"""Kafka source: pure planning (``kafka_plan``: no Kafka, no Spark), the reader against a real
broker (Tansu), and streaming queries through Spark (availableNow, restart, rate limits,
failures). The whole pipeline on Kafka: ``test_stream_kafka.py``."""

from __future__ import annotations

import logging
import os
import pickle
import random
import socket
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError, SourceError
from runner.project.config import KafkaSource
from runner.sources.kafka.datasource import KafkaDataSource, KafkaRange, KafkaStreamReader
from runner.sources.kafka.offset_plan import (
    DataLoss,
    KafkaDataLossError,
    OffsetRange,
    Watermarks,
    apportion,
    offsets_from_json,
    offsets_to_json,
    parse_starting_offsets,
    plan_next_offsets,
    plan_ranges,
    raise_or_warn,
    resolve_starting_offsets,
)
from runner.sources.kafka.options import KafkaSourceOptions, mask_client_config
from runner.sources.kafka.reader import read_kafka_stream, spark_kafka_available
from runner.spark_errors import runner_error_in
from tests.support.brokers import create_topic, delete_topic, produce

# Spark's Python workers run PYSPARK_PYTHON (default: `python3` on PATH, which may lack pyarrow
# or this package); make them run this interpreter unless the environment says otherwise.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

SECRET = "hunter2-do-not-log"


def kafka_source(**settings: Any) -> KafkaSource:
    """project.yml's Kafka source with ``settings`` (validated as project.yml is)."""
    return KafkaSource.model_validate({"type": "kafka", **settings})


def tp(p: int, topic: str = "t") -> tuple[str, int]:
    return (topic, p)


# ---------------------------------------------------------------------------------------------
# Pure planning


class TestOffsetsJson:
    def test_canonical_order_and_round_trip(self) -> None:
        offsets = {("b", 10): 7, ("a", 1): 3, ("b", 2): 0}
        as_json = offsets_to_json(offsets)
        assert list(as_json) == ["a", "b"] and list(as_json["b"]) == ["2", "10"]
        assert offsets_from_json(as_json) == offsets

    def test_unreadable_checkpoint_offsets(self) -> None:
        with pytest.raises(SourceError, match="unreadable Kafka offsets"):
            offsets_from_json({"t": {"0": "x"}})


class TestStartingOffsets:
    def test_keywords(self) -> None:
        assert parse_starting_offsets("earliest", ["t"]) == "earliest"
        assert parse_starting_offsets(" LATEST ", ["t"]) == "latest"

    def test_json_and_mapping(self) -> None:
        assert parse_starting_offsets('{"t": {"0": 5, "1": -2}}', ["t"]) == {tp(0): 5, tp(1): -2}
        assert parse_starting_offsets({"t": {"0": -1}}, ["t"]) == {tp(0): -1}

    @pytest.mark.parametrize("spec, message", [
        ("oldest", "must be 'earliest', 'latest' or JSON"),
        ('{"u": {"0": 1}}', "not subscribed: u; missing: t"),
        ('{"t": {"0": -3}}', "offset must be >= 0"),
        ('{"t": {"x": 1}}', "must be integers"),
        ('{"t": 5}', "must map topic"),
    ])
    def test_errors(self, spec: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            parse_starting_offsets(spec, ["t"])

    def test_resolve(self) -> None:
        available = {tp(0): Watermarks(0, 10), tp(1): Watermarks(5, 8)}
        assert resolve_starting_offsets("earliest", available) == ({tp(0): 0, tp(1): 5}, [])
        assert resolve_starting_offsets("latest", available) == ({tp(0): 10, tp(1): 8}, [])
        offsets, losses = resolve_starting_offsets({tp(0): 4, tp(1): -1}, available)
        assert offsets == {tp(0): 4, tp(1): 8} and losses == []

    def test_resolve_out_of_range_is_data_loss(self) -> None:
        available = {tp(0): Watermarks(3, 10), tp(1): Watermarks(0, 8)}
        offsets, losses = resolve_starting_offsets({tp(0): 1, tp(1): 20}, available)
        assert offsets == {tp(0): 3, tp(1): 8}
        assert [(x.partition, x.kind) for x in losses] == [(0, "expired"), (1, "beyond_latest")]

    def test_resolve_must_name_every_partition(self) -> None:
        with pytest.raises(ConfigError, match=r"every partition: topic has \[0, 1\]"):
            resolve_starting_offsets({tp(0): 1}, {tp(0): Watermarks(0, 1), tp(1): Watermarks(0, 1)})


class TestApportion:
    def test_proportional_to_backlog(self) -> None:
        assert apportion(50, {tp(0): 60, tp(1): 30, tp(2): 10}) == {tp(0): 30, tp(1): 15, tp(2): 5}

    def test_everything_when_under_the_limit(self) -> None:
        assert apportion(100, {tp(0): 7, tp(1): 0, tp(2): -3}) == {tp(0): 7, tp(1): 0, tp(2): 0}

    def test_small_partitions_not_starved(self) -> None:
        shares = apportion(10, {tp(0): 1000, tp(1): 1, tp(2): 1})
        assert shares[tp(1)] == shares[tp(2)] == 1 and sum(shares.values()) == 10

    def test_invariants_random(self) -> None:
        rng = random.Random(7)
        for _ in range(500):
            backlog = {tp(p): rng.choice([0, rng.randint(1, 5), rng.randint(1, 10_000)])
                       for p in range(rng.randint(1, 8))}
            limit = rng.randint(1, 20_000)
            shares = apportion(limit, backlog)
            assert sum(shares.values()) == min(limit, sum(backlog.values()))
            assert all(0 <= shares[k] <= backlog[k] for k in backlog)
            total = sum(backlog.values())
            if total > limit:  # within one record of the exact share, except starvation guard
                for k, n in backlog.items():
                    assert shares[k] <= limit * n / total + 1 or shares[k] == 1 or n == 0

    def test_rejects_zero(self) -> None:
        with pytest.raises(ValueError):
            apportion(0, {tp(0): 1})


class TestPlanNextOffsets:
    available = {tp(0): Watermarks(0, 30), tp(1): Watermarks(0, 20), tp(2): Watermarks(0, 10)}

    def test_no_new_data_returns_start(self) -> None:
        start = {k: w.high for k, w in self.available.items()}
        assert plan_next_offsets(start, self.available) == (start, [])

    def test_all_available(self) -> None:
        end, losses = plan_next_offsets({k: 0 for k in self.available}, self.available)
        assert end == {tp(0): 30, tp(1): 20, tp(2): 10} and losses == []

    def test_max_offsets_split_in_proportion(self) -> None:
        end, _ = plan_next_offsets({k: 0 for k in self.available}, self.available, max_offsets=12)
        assert end == {tp(0): 6, tp(1): 4, tp(2): 2}

    def test_available_now_target_caps(self) -> None:
        target = {tp(0): 5, tp(1): 20}  # tp 2 appeared after the target was taken
        start = {tp(0): 0, tp(1): 0}
        end, _ = plan_next_offsets(start, self.available, target=target)
        assert end == {tp(0): 5, tp(1): 20}
        end2, _ = plan_next_offsets(end, self.available, target=target)
        assert end2 == end  # reached the target: nothing more

    def test_new_partition_enters_at_earliest_then_is_read(self) -> None:
        available = {tp(0): Watermarks(0, 3), tp(1): Watermarks(2, 9)}
        end, losses = plan_next_offsets({tp(0): 3}, available)
        assert end == {tp(0): 3, tp(1): 2} and losses == []
        assert plan_ranges({tp(0): 3}, end) == []
        end2, _ = plan_next_offsets(end, available)
        assert plan_ranges(end, end2) == [OffsetRange("t", 1, 2, 9)]

    def test_losses(self) -> None:
        available = {tp(0): Watermarks(10, 30), tp(1): Watermarks(0, 4)}
        start = {tp(0): 5, tp(1): 12, tp(2): 7}
        end, losses = plan_next_offsets(start, available)
        assert {(x.partition, x.kind) for x in losses} == {(0, "expired"), (1, "reset"),
                                                           (2, "deleted")}
        # skipping: past the lost offsets, back to the partition's new end, without the gone one
        assert end == {tp(0): 30, tp(1): 4}

    def test_unsubscribed_topics_are_dropped_not_lost(self) -> None:
        available = {("a", 0): Watermarks(0, 5), ("c", 0): Watermarks(0, 2)}
        end, losses = plan_next_offsets({("a", 0): 1, ("b", 0): 9}, available, topics=("a", "c"))
        assert end == {("a", 0): 5, ("c", 0): 0} and losses == []

    def test_data_loss_message_names_topic_partition_offsets(self) -> None:
        losses = [DataLoss("orders", 2, "expired", 5, Watermarks(42, 50)),
                  DataLoss("orders", 0, "reset", 12, Watermarks(0, 4))]
        with pytest.raises(KafkaDataLossError) as info:
            raise_or_warn(losses, fail_on_data_loss=True)
        text = str(info.value)
        assert "topic 'orders' partition 2: offsets 5..41 are no longer available" in text
        assert "topic 'orders' partition 0: expected to continue at offset 12" in text
        assert "fail_on_data_loss: false" in text
        assert str(pickle.loads(pickle.dumps(info.value))) == text

    def test_data_loss_warns_when_not_failing(self, caplog: pytest.LogCaptureFixture) -> None:
        with caplog.at_level(logging.WARNING, logger="runner.kafka"):
            raise_or_warn([DataLoss("t", 1, "deleted", 3)], fail_on_data_loss=False)
        assert "topic 't' partition 1 no longer exists" in caplog.text


class TestPlanRanges:
    def test_one_range_per_partition_with_work(self) -> None:
        start = {tp(0): 0, tp(1): 5, tp(2): 9}
        end = {tp(0): 4, tp(1): 5, tp(2): 12, tp(3): 0}
        assert plan_ranges(start, end) == [OffsetRange("t", 0, 0, 4), OffsetRange("t", 2, 9, 12)]

    def test_max_records_per_partition(self) -> None:
        ranges = plan_ranges({tp(0): 0}, {tp(0): 10}, max_records_per_partition=4)
        assert [(r.start, r.end) for r in ranges] == [(0, 3), (3, 6), (6, 10)]

    def test_min_partitions_splits_large_ranges_most(self) -> None:
        ranges = plan_ranges({tp(0): 0, tp(1): 0}, {tp(0): 90, tp(1): 10}, min_partitions=10)
        per = Counter(r.partition for r in ranges)
        assert per == {0: 9, 1: 1}
        covered = sorted((r.partition, r.start, r.end) for r in ranges)
        assert covered[0][:2] == (0, 0) and sum(r.size for r in ranges) == 100


class TestOptions:
    def test_parse(self) -> None:
        opts = KafkaSourceOptions.parse({
            "bootstrap_servers": "b:9092", "topic": "a, b", "max_offsets_per_trigger": "100",
            "fail_on_data_loss": "False", "kafka.sasl.password": SECRET,
            "kafka.security.protocol": "SASL_SSL"})
        assert opts.topics == ("a", "b") and opts.max_offsets_per_trigger == 100
        assert opts.fail_on_data_loss is False and opts.starting_offsets == "earliest"
        assert opts.client()["sasl.password"] == SECRET
        assert SECRET not in repr(opts) and SECRET not in repr(KafkaStreamReader(opts))
        assert "'sasl.password': '***'" in repr(opts)

    @pytest.mark.parametrize("options, message", [
        ({"topic": "t"}, "bootstrap_servers is required"),
        ({"bootstrap_servers": "b"}, "topic is required"),
        ({"bootstrap_servers": "b", "topic": "t", "max_offset_per_trigger": "5"},
         "did you mean 'max_offsets_per_trigger'"),
        ({"bootstrap_servers": "b", "topic": "t", "kafka.group.id": "g"}, "kafka.group.id is not"),
        ({"bootstrap_servers": "b", "topic": "t", "max_offsets_per_trigger": "0"},
         "positive integer"),
        ({"bootstrap_servers": "b", "topic": "t", "fail_on_data_loss": "maybe"}, "true or false"),
    ])
    def test_errors(self, options: dict[str, str], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            KafkaSourceOptions.parse(options)

    def test_mask(self) -> None:
        masked = mask_client_config({"sasl.password": "x", "sasl.oauthbearer.client.secret": "y",
                                     "sasl.jaas.config": "z", "client.id": "me"})
        assert masked == {"sasl.password": "***", "sasl.oauthbearer.client.secret": "***",
                          "sasl.jaas.config": "***", "client.id": "me"}

    def test_read_kafka_stream_validates_before_spark(self) -> None:
        with pytest.raises(ConfigError, match="not subscribed"):
            read_kafka_stream(None, kafka_source(bootstrap_servers="b:1", topic=["t"],  # type: ignore[arg-type]
                                                 starting_offsets={"u": {"0": 1}}))
        with pytest.raises(ConfigError, match="kafka.group.id is not allowed"):
            read_kafka_stream(None, kafka_source(bootstrap_servers="b:1", topic="t",  # type: ignore[arg-type]
                                                 options={"group.id": SECRET}))
        assert spark_kafka_available(None) is False  # type: ignore[arg-type]

    def test_entry_points_importable_from_the_kafka_package(self) -> None:
        from runner.sources.kafka import read_kafka_stream as from_package

        assert from_package is read_kafka_stream


def test_invalid_utf8_becomes_replacement_character() -> None:
    import pyarrow as pa

    from runner.sources.kafka.datasource import _text

    assert _text(pa, [b"ok", None]).to_pylist() == ["ok", None]
    assert _text(pa, [b"bad\xff", None]).to_pylist() == ["bad\ufffd", None]


# ---------------------------------------------------------------------------------------------
# The reader against a real broker, without Spark (driver and executor sides called directly)


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"t{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, name, partitions)
    return name


def reader_for(bootstrap: str, topic: str, **options: str) -> KafkaStreamReader:
    return KafkaDataSource({"bootstrap_servers": bootstrap, "topic": topic, **options}
                           ).streamReader(None)


def read_all(reader: KafkaStreamReader, start: dict, end: dict) -> list[dict[str, Any]]:
    rows = []
    for part in reader.partitions(start, end):
        part = pickle.loads(pickle.dumps(part))  # what Spark does with it
        for batch in reader.read(part):
            rows.extend(batch.to_pylist())
    return rows


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.kafka
class TestReaderOnBroker:
    def test_offsets_and_records(self, kafka_broker: str) -> None:
        topic = new_topic(kafka_broker, 3)
        produce(kafka_broker, topic, [(i % 3, f'{{"i": {i}}}') for i in range(9)], key="k")
        reader = reader_for(kafka_broker, topic)
        start = reader.initialOffset()
        assert start == {topic: {"0": 0, "1": 0, "2": 0}}
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        assert end == {topic: {"0": 3, "1": 3, "2": 3}}
        rows = read_all(reader, start, end)
        assert sorted((r["_partition"], r["_offset"]) for r in rows) == \
            [(p, o) for p in range(3) for o in range(3)]
        first = next(r for r in rows if r["_partition"] == 1 and r["_offset"] == 0)
        assert first["value"] == '{"i": 1}' and first["_key"] == "k" and first["_topic"] == topic
        assert first["_kafka_timestamp"].tzinfo is not None
        assert reader.latestOffset(end, reader.getDefaultReadLimit()) == end
        latest = reader_for(kafka_broker, topic, starting_offsets="latest").initialOffset()
        assert latest == end

    def test_specific_starting_offsets_beyond_latest(self, kafka_broker: str) -> None:
        topic = new_topic(kafka_broker, 2)
        produce(kafka_broker, topic, [(0, "a"), (0, "b"), (1, "c")])
        spec = f'{{"{topic}": {{"0": 1, "1": 50}}}}'
        with pytest.raises(KafkaDataLossError, match="starting offset 50 is beyond the latest "
                                                     "offset 1"):
            reader_for(kafka_broker, topic, starting_offsets=spec).initialOffset()
        lenient = reader_for(kafka_broker, topic, starting_offsets=spec,
                             fail_on_data_loss="false")
        assert lenient.initialOffset() == {topic: {"0": 1, "1": 1}}

    def test_missing_topic_is_named(self, kafka_broker: str) -> None:
        topic = new_topic(kafka_broker, 1)
        with pytest.raises(SourceError, match=rf"'{topic}x'.* do not exist") as info:
            reader_for(kafka_broker, f"{topic}x").initialOffset()
        assert f"did you mean '{topic}'" in str(info.value)

    def test_range_past_the_end_is_data_loss_in_read(self, kafka_broker: str) -> None:
        topic = new_topic(kafka_broker, 1)
        produce(kafka_broker, topic, [(0, "a"), (0, "b")])
        with pytest.raises(KafkaDataLossError, match="now ends at offset 2"):
            list(reader_for(kafka_broker, topic).read(KafkaRange(topic, 0, 0, 5)))
        lenient = reader_for(kafka_broker, topic, fail_on_data_loss="false")
        rows = [r for b in lenient.read(KafkaRange(topic, 0, 0, 5)) for r in b.to_pylist()]
        assert [r["value"] for r in rows] == ["a", "b"]

    def test_recreated_topic_is_data_loss(self, kafka_broker: str) -> None:
        topic = new_topic(kafka_broker, 1)
        produce(kafka_broker, topic, [(0, str(i)) for i in range(5)])
        checkpoint = {topic: {"0": 5}}
        delete_topic(kafka_broker, topic)
        create_topic(kafka_broker, topic, 1)
        produce(kafka_broker, topic, [(0, "new")])
        reader = reader_for(kafka_broker, topic)
        with pytest.raises(KafkaDataLossError, match=rf"topic '{topic}' partition 0: expected to "
                                                     r"continue at offset 5 .* ends at offset 1"):
            reader.latestOffset(checkpoint, reader.getDefaultReadLimit())
        lenient = reader_for(kafka_broker, topic, fail_on_data_loss="false")
        assert lenient.latestOffset(checkpoint, lenient.getDefaultReadLimit()) == {topic: {"0": 1}}

    def test_bad_bootstrap_fails_fast_without_leaking_secrets(self) -> None:
        address = f"127.0.0.1:{unused_port()}"
        reader = reader_for(address, "t", **{"kafka.sasl.password": SECRET})
        started = time.monotonic()
        with pytest.raises(SourceError, match=f"cannot reach the Kafka brokers at {address}") as e:
            reader.initialOffset()
        assert time.monotonic() - started < 20
        assert SECRET not in str(e.value) and SECRET not in repr(e.value)

    def test_new_partitions(self, kafka_broker: str) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewPartitions

        topic = new_topic(kafka_broker, 1)
        produce(kafka_broker, topic, [(0, "a")])
        reader = reader_for(kafka_broker, topic)
        start = reader.initialOffset()
        admin = AdminClient({"bootstrap.servers": kafka_broker})
        try:
            admin.create_partitions([NewPartitions(topic, 2)])[topic].result(timeout=10)
        except KafkaException as e:
            pytest.skip(f"the broker cannot add partitions ({e.args[0].str()}); new-partition "
                        "pick-up is covered by TestPlanNextOffsets")
        produce(kafka_broker, topic, [(1, "b")])
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        end2 = reader.latestOffset(end, reader.getDefaultReadLimit())
        values = [r["value"] for r in read_all(reader, start, end) + read_all(reader, end, end2)]
        assert sorted(values) == ["a", "b"]


# ---------------------------------------------------------------------------------------------
# Streaming queries through Spark


def run_available_now(df: Any, checkpoint: Path, timeout: float = 60) -> list[list[Any]]:
    """Run ``df`` with an availableNow trigger; return the rows of each batch."""
    batches: list[list[Any]] = []

    def collect(batch_df: Any, batch_id: int) -> None:
        batches.append(batch_df.collect())

    query = (df.writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(timeout), "query did not finish"
        if query.exception() is not None:
            raise query.exception()  # type: ignore[misc]
    finally:
        query.stop()
    return batches


def keys(batches: list[list[Any]]) -> list[tuple[int, int]]:
    return sorted((r._partition, r._offset) for b in batches for r in b)


@pytest.mark.kafka
@pytest.mark.spark
class TestStreaming:
    """The runner's Python reader through Spark (Spark's own source, chosen by ``auto`` when its
    jars load, is tested in test_stream_kafka.py and test_apache_kafka.py)."""

    def test_reads_everything_and_resumes_after_restart(self, spark: Any, kafka_broker: str,
                                                        tmp_path: Path) -> None:
        topic = new_topic(kafka_broker, 3)
        produce(kafka_broker, topic, [(i % 3, f'{{"n": {i}}}') for i in range(9)])

        def stream() -> Any:
            return read_kafka_stream(spark, kafka_source(
                reader="python", bootstrap_servers=kafka_broker, topic=topic,
                starting_offsets="earliest", options={"client.id": "t"}))

        df = stream()
        assert df.isStreaming and df.columns == ["value", "_key", "_topic", "_partition",
                                                 "_offset", "_kafka_timestamp"]
        assert [f.dataType.simpleString() for f in df.schema.fields] == \
            ["string", "string", "string", "int", "bigint", "timestamp"]
        first = run_available_now(df, tmp_path / "ck")
        assert keys(first) == [(p, o) for p in range(3) for o in range(3)]
        rows = [r for b in first for r in b]
        assert {r._topic for r in rows} == {topic}
        assert all(r.value == f'{{"n": {r._offset * 3 + r._partition}}}' for r in rows)
        assert all(r._kafka_timestamp is not None and r._key is None for r in rows)

        produce(kafka_broker, topic, [(i % 3, f'{{"n": {i}}}') for i in range(9, 15)])
        second = run_available_now(stream(), tmp_path / "ck")
        assert keys(second) == [(p, o) for p in range(3) for o in (3, 4)]  # no re-read, no gap
        assert run_available_now(stream(), tmp_path / "ck") == []

    def test_max_offsets_per_trigger_splits_in_proportion(self, spark: Any, kafka_broker: str,
                                                          tmp_path: Path) -> None:
        topic = new_topic(kafka_broker, 3)
        produce(kafka_broker, topic, [(0, "a")] * 18 + [(1, "b")] * 12 + [(2, "c")] * 6)
        df = read_kafka_stream(spark, kafka_source(
            reader="python", bootstrap_servers=kafka_broker, topic=[topic],
            starting_offsets="earliest", max_offsets_per_trigger=12))
        batches = [b for b in run_available_now(df, tmp_path / "ck") if b]
        per_batch = [Counter(r._partition for r in b) for b in batches]
        assert per_batch == [Counter({0: 6, 1: 4, 2: 2})] * 3
        assert keys(batches) == sorted([(0, o) for o in range(18)] + [(1, o) for o in range(12)]
                                       + [(2, o) for o in range(6)])

    def test_failures_fail_the_query_with_a_clear_message(self, spark: Any, kafka_broker: str,
                                                          tmp_path: Path) -> None:
        address = f"127.0.0.1:{unused_port()}"
        df = read_kafka_stream(spark, kafka_source(reader="python", bootstrap_servers=address,
                                                   topic="t", options={"sasl.password": SECRET}))
        started = time.monotonic()
        with pytest.raises(Exception, match=f"cannot reach the Kafka brokers at {address}") as e:
            run_available_now(df, tmp_path / "bad")
        assert time.monotonic() - started < 20
        assert SECRET not in str(e.value)
        message = runner_error_in(e.value)
        assert message is not None and message.startswith(
            f"cannot reach the Kafka brokers at {address} within 5 s")
        assert "hint: check bootstrap_servers" in message

        topic = new_topic(kafka_broker, 1)
        produce(kafka_broker, topic, [(0, "a"), (0, "b"), (0, "c")])

        def stream(fail: bool) -> Any:
            return read_kafka_stream(spark, kafka_source(
                reader="python", bootstrap_servers=kafka_broker, topic=topic,
                fail_on_data_loss=fail))

        assert len(keys(run_available_now(stream(True), tmp_path / "ck"))) == 3
        delete_topic(kafka_broker, topic)
        create_topic(kafka_broker, topic, 1)
        produce(kafka_broker, topic, [(0, "x")])
        with pytest.raises(Exception, match=rf"topic '{topic}' partition 0: expected to continue "
                                            r"at offset 3") as e:
            run_available_now(stream(True), tmp_path / "ck")
        assert (runner_error_in(e.value) or "").startswith(
            "Kafka data loss (fail_on_data_loss is true):")
        assert run_available_now(stream(False), tmp_path / "ck") in ([], [[]])
        produce(kafka_broker, topic, [(0, "y")])
        assert [r.value for b in run_available_now(stream(False), tmp_path / "ck") for r in b] \
            == ["y"]


@pytest.mark.spark
def test_spark_kafka_probe_does_not_crash(spark: Any) -> None:
    assert spark_kafka_available(spark) in (True, False)



@pytest.mark.spark
def test_topic_lists_and_source_tuning_in_options(spark: Any) -> None:
    """Topics may be comma-separated inside a list; ``options`` keys without a dot that name a
    source setting (``min_partitions``, ``timeout_ms``...) tune the source, not the client."""
    df = read_kafka_stream(spark, kafka_source(
        bootstrap_servers="127.0.0.1:1", topic=["a,b", " c", "a"],
        starting_offsets={"a": {"0": 1}, "b": {"0": -2}, "c": {"0": -1}},
        options={"min_partitions": "4", "timeout_ms": "1000", "client.id": "x"}))
    assert df.isStreaming
    with pytest.raises(ConfigError, match="Kafka option min_partitions must be a positive "
                                          "integer, got 'zero'"):
        read_kafka_stream(spark, kafka_source(bootstrap_servers="127.0.0.1:1", topic="a",
                                              options={"min_partitions": "zero"}))
