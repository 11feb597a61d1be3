"""Open a Kafka topic as a streaming DataFrame with the runner's raw-record columns.

Spark's own Kafka source is used when its classes (the spark-sql-kafka jars) are on the JVM
classpath; otherwise the Python Data Source in :mod:`runner.sources.kafka.datasource`. Both give
the same columns (:func:`~runner.sources.kafka.datasource.spark_schema`) and the same offset
JSON in the checkpoint.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from runner.errors import ConfigError
from runner.sources.kafka.datasource import SOURCE_NAME, KafkaDataSource
from runner.sources.kafka.options import (
    SOURCE_TUNING_OPTIONS,
    KafkaSourceOptions,
    mask_client_config,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from runner.project.config import KafkaSource

__all__ = ["SPARK_KAFKA_PROVIDER", "SOURCE_TUNING_OPTIONS", "spark_kafka_available",
           "read_kafka_stream"]

log = logging.getLogger("runner.kafka")

SPARK_KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

#: Spark's Kafka source tries each driver-side offset look-up this many times (its default).
_OFFSET_ATTEMPTS = 3


def spark_kafka_available(spark: SparkSession) -> bool:
    """Whether Spark's own Kafka source can be loaded (never raises).

    False on Spark Connect (no JVM access) and whenever the provider class is missing.
    """
    try:
        jvm = spark._jvm  # noqa: SLF001 - the JVM through py4j
        if jvm is None:
            return False
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(SPARK_KAFKA_PROVIDER, False, loader)
        return True
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError/Py4JError, Connect others
        return False


def read_kafka_stream(spark: SparkSession, source: KafkaSource, *,
                      start_record: str | None = None) -> DataFrame:
    """A streaming DataFrame of the records of project.yml's Kafka ``source``.

    Columns: ``value STRING, _key STRING, _topic STRING, _partition INT, _offset BIGINT,
    _kafka_timestamp TIMESTAMP``.

    ``source.reader`` picks the reader: ``auto`` (Spark's source when its classes load),
    ``spark`` or ``python``. Its settings reach either reader as one
    :class:`~runner.sources.kafka.options.KafkaSourceOptions`
    (:meth:`~runner.sources.kafka.options.KafkaSourceOptions.from_source`): topics may be
    comma-separated lists; ``starting_offsets`` is used only when the checkpoint has no offsets
    yet; ``source.options`` are client properties, passed as they are to the client in use
    (the Java client's names with Spark's source, librdkafka's with the Python one;
    ``security.protocol`` and ``sasl.mechanism`` are common to both), except the keys in
    :data:`SOURCE_TUNING_OPTIONS`, which tune the source (see
    :mod:`runner.sources.kafka.datasource`). Secret-looking values never appear in logs or
    messages.

    With Spark's source, ``source.connect_timeout`` bounds each offset look-up over its three
    attempts (``fetchOffset.numRetries``): each attempt's Java client request and API timeouts
    are a third of it, and an executor's poll waits at most all of it
    (``kafkaConsumer.pollTimeoutMs``), unless ``timeout_ms``, ``read_timeout_ms`` or the client
    properties say otherwise.

    Args:
        spark: the session.
        source: the validated Kafka source.
        start_record: the checkpoint folder, where the Python reader records batch 0's start
            when it first resolves ``starting_offsets`` (Spark's own source keeps it in the
            checkpoint's ``sources/0/0``).

    Raises:
        ConfigError: malformed settings, or ``spark`` asked for but not available.
    """
    options = KafkaSourceOptions.from_source(source, start_record=start_record)
    available = source.reader != "python" and spark_kafka_available(spark)
    if source.reader == "spark" and not available:
        raise ConfigError(f"Spark's Kafka source ({SPARK_KAFKA_PROVIDER}) is not on the classpath")
    log.info("Kafka source (%s): %s topics=%s options=%s",
             "spark" if available else "python", options.bootstrap_servers,
             list(options.topics), mask_client_config(options.client_config))
    if available:
        return _read_with_spark(spark, options, source.connect_timeout_seconds)
    return _read_with_python(spark, options)


def _read_with_python(spark: SparkSession, options: KafkaSourceOptions) -> DataFrame:
    """The runner's Python data source, given ``options`` as its string options."""
    strings = options.to_options()
    KafkaSourceOptions.parse(strings)  # its own checks (reserved properties) here, not in a worker
    spark.dataSource.register(KafkaDataSource)
    return spark.readStream.format(SOURCE_NAME).options(**strings).load()


def spark_source_options(options: KafkaSourceOptions,
                         connect_timeout: float | None) -> dict[str, str]:
    """``options`` in the names of Spark's own Kafka source (``subscribe``,
    ``startingOffsets``, ``kafka.<property>``...); ``connect_timeout`` (seconds, None: Spark's
    defaults) bounds its waits as :func:`read_kafka_stream` says.

    >>> opts = KafkaSourceOptions.parse({"bootstrap_servers": "b:1", "topic": "t",
    ...                                  "max_offsets_per_trigger": "9"})
    >>> spark_source_options(opts, 3.0)["kafka.request.timeout.ms"]
    '1000'
    """
    timeout_ms, read_timeout_ms = options.timeout_ms, options.read_timeout_ms
    if connect_timeout is not None:  # bounded waits, unless the options say otherwise
        timeout_ms = timeout_ms or max(1000, int(connect_timeout * 1000 / _OFFSET_ATTEMPTS))
        read_timeout_ms = read_timeout_ms or max(1000, int(connect_timeout * 1000))
    client = dict(options.client_config)
    if timeout_ms is not None:  # the driver's metadata and offset look-ups give up after it
        client = {"request.timeout.ms": str(timeout_ms),
                  "default.api.timeout.ms": str(timeout_ms), **client}
    spark_options = {
        "kafka.bootstrap.servers": options.bootstrap_servers,
        "subscribe": ",".join(options.topics),
        "startingOffsets": options.starting_offsets_text,
        "failOnDataLoss": "true" if options.fail_on_data_loss else "false",
        **{f"kafka.{k}": v for k, v in client.items()},
    }
    for name, value in (("minPartitions", options.min_partitions),
                        ("maxRecordsPerPartition", options.max_records_per_partition),
                        ("kafkaConsumer.pollTimeoutMs", read_timeout_ms),
                        ("maxOffsetsPerTrigger", options.max_offsets_per_trigger)):
        if value is not None:
            spark_options[name] = str(value)
    if connect_timeout is not None:
        spark_options["fetchOffset.numRetries"] = str(_OFFSET_ATTEMPTS)
    return spark_options


def _read_with_spark(spark: SparkSession, options: KafkaSourceOptions,
                     connect_timeout: float | None) -> DataFrame:
    """Spark's own Kafka source, its columns renamed as the Python reader names them."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format("kafka").options(
        **spark_source_options(options, connect_timeout))
    return reader.load().select(
        F.col("value").cast("string").alias("value"),
        F.col("key").cast("string").alias("_key"),
        F.col("topic").alias("_topic"),
        F.col("partition").alias("_partition"),
        F.col("offset").alias("_offset"),
        F.col("timestamp").alias("_kafka_timestamp"),
    )
