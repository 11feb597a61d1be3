"""Read a committed batch's input again (:class:`~runner.sources.history.PastBatch`), with the
same columns the streaming source gave it: ``value`` plus the source's metadata columns.

- Files: Spark's text reader over exactly the files the batch read (the paths as the file
  source logged them; no globbing, as the file source itself reads them), blank lines
  removed, ``_source_file`` from ``_metadata.file_path``. A file that is gone is an error
  naming it: the history is incomplete.
- Kafka: each partition's ``[start, end)``, by the reader the stream uses: Spark's Kafka source
  as a batch read (``assign`` + ``startingOffsets``/``endingOffsets``) when its jars are
  there, else the runner's confluent-kafka reader on the executors (``mapInArrow`` over the
  offset ranges). Before reading, :func:`resolve_spans` checks the spans against what the
  broker still has: offsets gone by retention are ``fail_on_data_loss``'s business, with a
  message naming the partition and the missing offsets.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runner.errors import SourceError
from runner.events import OffsetsSkipped, Reporter, ignore
from runner.project.config import KafkaSource
from runner.sources.history import KafkaSpan, PastBatch, local_path
from runner.sources.kafka.offset_plan import (
    TP,
    DataLoss,
    OffsetRange,
    Watermarks,
    offsets_to_json,
    plan_ranges,
)
from runner.sources.kafka.options import KafkaSourceOptions
from runner.spark_client import is_remote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["KafkaHistory", "broker_watermarks", "read_files", "resolve_spans"]


def _existing(spark: SparkSession, uri: str, batch: PastBatch) -> str:
    """``uri`` as Spark's reader takes it, when the file is still there (through Hadoop's
    FileSystem as FileStreamSource does: new Path(new URI(logged path)); over Spark Connect
    through the storage layer, on locations the server shares)."""
    if is_remote(spark):
        from runner.storage.ops import as_location, exists

        found, path = exists(as_location(local_path(uri) or uri)), uri
    else:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - the JVM through py4j
        assert jvm is not None
        conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - see above
        hadoop = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(uri))
        found, path = hadoop.getFileSystem(conf).exists(hadoop), hadoop.toString()
    if not found:
        raise SourceError(
            f"the file {uri} that batch {batch.batch_id} read is gone: the history is "
            "incomplete",
            hint="put the file back, or give the model backfill=false to start it at the "
                 "next batch without the history")
    return str(path)


def read_files(spark: SparkSession, batch: PastBatch) -> DataFrame:
    """The lines of the files of ``batch``: ``value``, ``_source_file``; blank lines removed.

    Raises:
        SourceError: a file the batch read no longer exists (names it and the batch).
    """
    from pyspark.sql import functions as F

    from runner.sources.files import BLANK_CHARS, SKIP_UNREADABLE

    paths = [_existing(spark, uri, batch) for uri in batch.files]
    lines = (spark.read.format("text").option("__globPaths__", "false")
             .options(**SKIP_UNREADABLE).load(paths))  # the rows the live batch read
    return (lines.select(F.col("value"), F.col("_metadata.file_path").alias("_source_file"))
            .filter(F.btrim(F.col("value"), F.lit(BLANK_CHARS)) != ""))


def resolve_spans(spans: Sequence[KafkaSpan], available: Mapping[TP, Watermarks],
                  ) -> tuple[list[OffsetRange], list[DataLoss]]:
    """Concrete ranges for ``spans`` against the broker's watermarks, and what is missing.

    A span without a start begins at the earliest retained offset; one whose start is below it
    lost ``[start, low)`` (``expired``); one ending past the partition's end lost the rest
    (``reset``); a partition that is gone lost everything (``deleted``). The ranges keep what
    is still there.
    """
    ranges, losses = [], []
    for s in spans:
        w = available.get((s.topic, s.partition))
        if w is None:
            losses.append(DataLoss(s.topic, s.partition, "deleted", s.start or 0))
            continue
        start = w.low if s.start is None else s.start
        end = s.end
        if start < w.low and start < end:
            losses.append(DataLoss(s.topic, s.partition, "expired", start, w))
            start = w.low
        if end > w.high:
            losses.append(DataLoss(s.topic, s.partition, "reset", end, w))
            end = w.high
        if end > start:
            ranges.append(OffsetRange(s.topic, s.partition, start, end))
    return ranges, losses


def broker_watermarks(source: KafkaSource) -> dict[TP, Watermarks]:
    """The offsets the brokers hold now for each partition of the source's topics (one
    metadata and watermark round trip; no Spark): checked before a backfill or rebuild
    changes anything."""
    from runner.sources.kafka.datasource import KafkaStreamReader

    return KafkaStreamReader(KafkaSourceOptions.from_source(source)).fetch_available()


class KafkaHistory:
    """Reads past Kafka batches with the reader the stream uses (see the module docstring).

    Args:
        report: told about offsets that are gone when ``fail_on_data_loss`` is false (they
            are skipped); when it is true they raise instead.
    """

    def __init__(self, spark: SparkSession, source: KafkaSource, *,
                 report: Reporter = ignore) -> None:
        from runner.sources.kafka.reader import spark_kafka_available

        self.spark = spark
        self.source = source
        self.report = report
        self.spark_source = spark_kafka_available(spark)
        self.options = KafkaSourceOptions.from_source(source)

    def read(self, batch: PastBatch) -> DataFrame:
        """The records of ``batch`` with the stream's columns.

        Raises:
            SourceError: offsets of the batch are gone and ``fail_on_data_loss`` is true
                (names the partitions and offsets).
        """
        if self.spark_source:  # Spark's source applies failOnDataLoss itself
            return self._read_with_spark(batch.spans)
        from runner.sources.kafka.datasource import KafkaStreamReader, spark_schema

        available = KafkaStreamReader(self.options).fetch_available()
        ranges, losses = resolve_spans(batch.spans, available)
        if losses:
            if self.source.fail_on_data_loss:
                lines = "\n".join(f"  - {loss.describe()}" for loss in losses)
                raise SourceError(
                    f"the input of batch {batch.batch_id} is no longer complete in Kafka "
                    f"(fail_on_data_loss is true):\n{lines}",
                    hint="set fail_on_data_loss: false to backfill what is left (the missing "
                         "offsets stay missing), or give the model backfill=false to start it "
                         "at the next batch without the history")
            self.report(OffsetsSkipped(batch.batch_id,
                                       tuple(loss.describe() for loss in losses)))
        tasks = plan_ranges({(r.topic, r.partition): r.start for r in ranges},
                            {(r.topic, r.partition): r.end for r in ranges},
                            min_partitions=self.options.min_partitions,
                            max_records_per_partition=self.options.max_records_per_partition)
        rows = [(r.topic, r.partition, r.start, r.end) for r in tasks]
        frame = self.spark.createDataFrame(
            rows, "topic STRING, partition INT, start BIGINT, end BIGINT")
        frame = frame.repartition(max(1, len(rows)))
        return frame.mapInArrow(functools.partial(_read_ranges, self.options), spark_schema())

    def _read_with_spark(self, spans: Sequence[KafkaSpan]) -> DataFrame:
        from pyspark.sql import functions as F

        from runner.sources.kafka.datasource import spark_schema
        from runner.sources.kafka.offset_plan import EARLIEST

        spans = [s for s in spans if s.start is None or s.end > s.start]
        if not spans:
            return self.spark.createDataFrame([], spark_schema())
        assign: dict[str, list[int]] = {}
        for s in spans:
            assign.setdefault(s.topic, []).append(s.partition)
        start = {(s.topic, s.partition): EARLIEST if s.start is None else s.start for s in spans}
        frame = (self.spark.read.format("kafka")
                 .option("kafka.bootstrap.servers", self.options.bootstrap_servers)
                 .option("assign", json.dumps(assign))
                 .option("startingOffsets", json.dumps(offsets_to_json(start)))
                 .option("endingOffsets", json.dumps(offsets_to_json(
                     {(s.topic, s.partition): s.end for s in spans})))
                 .option("failOnDataLoss", str(self.options.fail_on_data_loss).lower())
                 .options(**{f"kafka.{k}": v for k, v in self.options.client_config.items()})
                 .load())
        return frame.select(
            F.col("value").cast("string").alias("value"),
            F.col("key").cast("string").alias("_key"),
            F.col("topic").alias("_topic"),
            F.col("partition").alias("_partition"),
            F.col("offset").alias("_offset"),
            F.col("timestamp").alias("_kafka_timestamp"))


def _read_ranges(options: KafkaSourceOptions, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body (on an executor): the records of each (topic, partition, start,
    end) row, as the streaming reader reads a range."""
    from runner.sources.kafka.datasource import KafkaRange, KafkaStreamReader

    reader = KafkaStreamReader(options)
    for batch in batches:
        for row in batch.to_pylist():
            yield from reader.read(KafkaRange(row["topic"], row["partition"], row["start"],
                                              row["end"]))
