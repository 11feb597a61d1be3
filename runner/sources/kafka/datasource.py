"""Kafka as a Spark streaming source through the Python Data Source API (confluent-kafka).

Used when Spark's own Kafka source (the spark-sql-kafka jars) is not on the classpath; see
:func:`runner.sources.kafka.reader.read_kafka_stream`, which picks one of the two. Registered
under the name :data:`SOURCE_NAME`::

    spark.dataSource.register(KafkaDataSource)
    df = (spark.readStream.format("runner_kafka")
          .option("bootstrap_servers", "broker:9092").option("topic", "events")
          .option("starting_offsets", "earliest").load())

Options (all strings, names case-insensitive):

- ``bootstrap_servers`` (required), ``topic`` (one name or a comma-separated list).
- ``starting_offsets``: ``earliest`` (default) | ``latest`` | JSON ``{"t": {"0": 5, "1": -2}}``
  naming every partition of every topic (``-2`` earliest, ``-1`` latest), Spark's format.
  Used only when the checkpoint has no offsets yet.
- ``start_record``: the checkpoint folder. Batch 0's start, resolved from ``starting_offsets``
  the first time Spark asks for it, is recorded there
  (:func:`runner.checkpoint.identity.record_kafka_start`) and read back whenever Spark asks
  again (a replay of batch 0 after a crash, a restart before batch 0 ran): ``latest`` means the
  end of the topic when the pipeline first started, not at each start.
- ``max_offsets_per_trigger``: records per micro-batch, a total across partitions, split in
  proportion to each partition's backlog (also honoured by ``availableNow``).
- ``fail_on_data_loss`` (default ``true``): offsets that are gone (retention), a partition that
  went backwards (topic recreated) or vanished fail the query with a message naming topic,
  partition and offsets; ``false`` skips them with a warning, like Spark's source.
- ``min_partitions`` / ``max_records_per_partition``: split offset ranges into more Spark
  tasks (default: one task per topic-partition with new records).
- ``timeout_ms`` (default 5000): metadata and offset look-ups; an unreachable broker fails the
  query after this long instead of hanging. ``read_timeout_ms`` (default 30000): a task that
  gets no record for this long fails.
- ``kafka.<property>``: any librdkafka client property, passed on without the prefix
  (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.username``,
  ``kafka.sasl.password``...). Values whose names look secret are masked in every repr and
  message (:func:`mask_client_config`).

Offsets live in Spark's checkpoint as Spark's Kafka source writes them
(``{"topic": {"partition": offset}}``, next offset to read); nothing is committed to a
consumer group. ``commit()`` is not relied on: Spark calls it late and never after an
``availableNow`` run. Partitions that appear while the query runs start at their earliest
offset (in the batch after they are seen), and so do topics added to ``topic`` on a restart;
topics removed from it are dropped. Rows: :func:`spark_schema`. Keys and values are
decoded as UTF-8; invalid bytes become U+FFFD.

The planning (offset resolution, admission control, data-loss checks, range splitting) lives
in :mod:`runner.sources.kafka.offset_plan` and the options in :mod:`runner.sources.kafka.options`:
pure functions over plain values, unit-tested without Kafka or Spark. The classes below are
importable in Spark's Python workers; confluent-kafka and pyarrow are imported where used.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from runner.checkpoint.identity import read_kafka_start, record_kafka_start
from runner.errors import SourceError
from runner.failpoints import failpoint
from runner.sources.kafka.admin import list_watermarks, read_committed
from runner.sources.kafka.offset_plan import (
    TP,
    DataLoss,
    Watermarks,
    offsets_from_json,
    offsets_to_json,
    plan_next_offsets,
    plan_ranges,
    raise_or_warn,
    resolve_starting_offsets,
)
from runner.sources.kafka.options import KafkaSourceOptions, mask_client_config

__all__ = [
    "SOURCE_NAME",
    "KafkaDataSource",
    "KafkaStreamReader",
    "KafkaRange",
    "spark_schema",
]

log = logging.getLogger("runner.kafka")

SOURCE_NAME = "runner_kafka"


def spark_schema() -> StructType:
    """The rows' schema: ``value STRING, _key STRING, _topic STRING, _partition INT, _offset
    BIGINT, _kafka_timestamp TIMESTAMP`` (built, not parsed from DDL: parsing needs a session,
    and Spark's Python workers have none)."""
    return StructType([
        StructField("value", StringType()),
        StructField("_key", StringType()),
        StructField("_topic", StringType()),
        StructField("_partition", IntegerType()),
        StructField("_offset", LongType()),
        StructField("_kafka_timestamp", TimestampType()),
    ])


# ---------------------------------------------------------------------------------------------
# The data source


class KafkaRange(InputPartition):
    """One Spark task's work: offsets ``[start, end)`` of one topic-partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"KafkaRange({self.topic}-{self.partition} [{self.start}, {self.end}))"


class KafkaDataSource(DataSource):
    """``spark.readStream.format("runner_kafka")``: see the module docstring for options."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return spark_schema()

    def streamReader(self, schema: Any) -> KafkaStreamReader:  # noqa: ARG002 - the DataSource API's signature
        return KafkaStreamReader(KafkaSourceOptions.parse(self.options))

    def __repr__(self) -> str:
        return f"KafkaDataSource({mask_client_config(dict(self.options))!r})"


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches on the driver (metadata only) and reads ranges on executors."""

    def __init__(self, options: KafkaSourceOptions) -> None:
        self.options = options
        self._admin: Any = None
        self._target: dict[TP, int] | None = None
        self._latest: dict[TP, int] | None = None
        self._existing_topics: list[str] = []

    def __repr__(self) -> str:
        return f"KafkaStreamReader({self.options!r})"

    # -- driver side -------------------------------------------------------------------------

    def fetch_available(self) -> dict[TP, Watermarks]:
        """Watermarks of every partition of the subscribed topics that exist now
        (:func:`runner.sources.kafka.admin.list_watermarks`).

        Raises:
            SourceError: the brokers did not answer within ``timeout_ms``, or refuse a topic.
        """
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        opts = self.options
        timeout = opts.timeout_s
        if self._admin is None:
            self._admin = AdminClient(opts.client())
        try:
            listing = list_watermarks(self._admin, opts.topics, timeout=timeout,
                                      committed=read_committed(opts.client_config))
        except KafkaException as e:
            raise SourceError(
                f"cannot reach the Kafka brokers at {opts.bootstrap_servers} within "
                f"{timeout:g} s: {_kafka_error_text(e)}",
                hint="check bootstrap_servers, the network and the security options "
                     "(or raise timeout_ms)") from e
        for topic, error in listing.refused.items():
            raise SourceError(f"Kafka topic '{topic}' at {opts.bootstrap_servers}: {error}")
        self._existing_topics = listing.existing
        return listing.marks

    def initialOffset(self) -> dict[str, Any]:
        available = self.fetch_available()
        missing = [t for t in self.options.topics if not any(tp[0] == t for tp in available)]
        if missing:
            existing = self._existing_topics
            hints = [f"did you mean {close[0]!r}?" for t in missing
                     if (close := difflib.get_close_matches(t, existing, n=1))]
            raise SourceError(
                f"Kafka topic(s) {', '.join(map(repr, missing))} do not exist at "
                f"{self.options.bootstrap_servers}"
                + (f"; existing topics: {', '.join(existing)}" if existing else ""),
                hint=" ".join(hints) or None)
        record = Path(self.options.start_record) if self.options.start_record else None
        if record is not None and (recorded := read_kafka_start(record)) is not None:
            return recorded  # where batch 0 started: resolving `latest` again would move it
        offsets, losses = resolve_starting_offsets(self.options.starting_offsets, available)
        raise_or_warn(losses, fail_on_data_loss=self.options.fail_on_data_loss)
        if record is None:
            return offsets_to_json(offsets)
        recorded = record_kafka_start(record, offsets_to_json(offsets))
        failpoint("kafka.initial_offset")  # tests: records arrive after the start was resolved
        return recorded

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {tp: w.high for tp, w in self.fetch_available().items()}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        available = self.fetch_available()
        self._latest = {tp: w.high for tp, w in available.items()}
        max_offsets = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end, losses = plan_next_offsets(offsets_from_json(start), available,
                                        max_offsets=max_offsets, target=self._target,
                                        topics=self.options.topics)
        raise_or_warn(losses, fail_on_data_loss=self.options.fail_on_data_loss)
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = plan_ranges(offsets_from_json(start), offsets_from_json(end),
                             min_partitions=self.options.min_partitions,
                             max_records_per_partition=self.options.max_records_per_partition)
        return [KafkaRange(r.topic, r.partition, r.start, r.end) for r in ranges]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint only."""

    def stop(self) -> None:
        self._admin = None

    # -- executor side -----------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRange)
        failpoint("source.read")
        return _read_range(self.options, partition)


def _kafka_error_text(e: BaseException) -> str:
    """librdkafka's own words for ``e`` (a ``KafkaException`` carries a ``KafkaError``)."""
    from confluent_kafka import KafkaError

    err = e.args[0] if e.args else None
    return err.str() if isinstance(err, KafkaError) else str(e)


_BATCH_ROWS = 10_000


def _read_range(opts: KafkaSourceOptions, rng: KafkaRange) -> Iterator[Any]:
    """Yield Arrow record batches with the records of ``rng`` (runs on an executor)."""
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(spark_schema(), timezone="UTC")
    where = f"topic '{rng.topic}' partition {rng.partition} offsets [{rng.start}, {rng.end})"
    consumer = Consumer(opts.client(**{
        "group.id": "runner-kafka-source",  # required by librdkafka; never joined or committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
    }))
    timeout = opts.read_timeout_s
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        position = rng.start
        last_progress = time.monotonic()
        while position < rng.end:
            messages = consumer.consume(num_messages=min(_BATCH_ROWS, rng.end - position),
                                        timeout=1.0)
            rows: list[tuple[Any, ...]] = []
            done = False
            for msg in messages:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:  # noqa: SLF001 - librdkafka's own code, public in its API
                        eof = msg.offset()
                        if eof is not None and eof < rng.end:  # the partition ends too soon
                            loss = DataLoss(rng.topic, rng.partition, "reset", rng.end,
                                            _watermarks(consumer, opts, rng))
                            raise_or_warn([loss], fail_on_data_loss=opts.fail_on_data_loss)
                        done = True
                        break
                    if err.code() in (KafkaError.OFFSET_OUT_OF_RANGE,
                                      KafkaError._AUTO_OFFSET_RESET):  # noqa: SLF001 - librdkafka's own code, public in its API
                        position = _skip_lost(consumer, opts, rng, position)
                        done = position >= rng.end
                        break
                    raise SourceError(f"Kafka error reading {where}: {err.str()}")
                offset = msg.offset()
                if offset is None:  # only error events lack an offset
                    continue
                if offset >= rng.end:
                    done = True
                    break
                if offset < position:
                    continue
                ts_type, ts = msg.timestamp()
                rows.append((msg.value(), msg.key(), offset,
                             ts * 1000 if ts_type != 0 and ts is not None and ts >= 0 else None))
                position = offset + 1
            if rows:
                last_progress = time.monotonic()
                yield _to_batch(pa, schema, rng, rows)
            if done:
                break
            if not messages and time.monotonic() - last_progress > timeout:
                raise SourceError(
                    f"timed out after {timeout:g} s reading {where} from "
                    f"{opts.bootstrap_servers}: no record since offset {position}",
                    hint="check the brokers, or raise read_timeout_ms")
    finally:
        consumer.close()


def _skip_lost(consumer: Any, opts: KafkaSourceOptions, rng: KafkaRange, position: int) -> int:
    """Offset ``position`` is out of range: fail, or skip to what is left. Returns the new
    position (``rng.end`` or more when nothing in the range is left)."""
    from confluent_kafka import TopicPartition

    w = _watermarks(consumer, opts, rng)
    kind: Literal["expired", "reset"] = "expired" if position < w.low else "reset"
    raise_or_warn([DataLoss(rng.topic, rng.partition, kind, position, w)],
                  fail_on_data_loss=opts.fail_on_data_loss)
    if kind == "reset" or w.low >= rng.end:
        return rng.end
    consumer.assign([TopicPartition(rng.topic, rng.partition, w.low)])
    return w.low


def _watermarks(consumer: Any, opts: KafkaSourceOptions, rng: KafkaRange) -> Watermarks:
    from confluent_kafka import TopicPartition

    low, high = consumer.get_watermark_offsets(TopicPartition(rng.topic, rng.partition),
                                               timeout=opts.timeout_s)
    return Watermarks(low, high)


def _text(pa: Any, raw: Sequence[bytes | None]) -> Any:
    """Bytes as an Arrow string column; invalid UTF-8 becomes U+FFFD (row by row, rare)."""
    try:
        return pa.array(raw, type=pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([None if b is None else b.decode("utf-8", errors="replace")
                         for b in raw], type=pa.string())


def _to_batch(pa: Any, schema: Any, rng: KafkaRange, rows: list[tuple[Any, ...]]) -> Any:
    n = len(rows)
    values, keys, offsets, stamps = zip(*rows)
    return pa.RecordBatch.from_arrays([
        _text(pa, values),
        _text(pa, keys),
        pa.array([rng.topic] * n, type=pa.string()),
        pa.array([rng.partition] * n, type=pa.int32()),
        pa.array(offsets, type=pa.int64()),
        pa.array(stamps, type=pa.timestamp("us", tz="UTC")),
    ], schema=schema)
