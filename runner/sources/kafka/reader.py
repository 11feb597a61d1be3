"""Open a Kafka topic as a streaming DataFrame with the runner's raw-record columns.

Spark's own Kafka source is used when its classes (the spark-sql-kafka jars) are on the JVM
classpath; otherwise the Python Data Source in :mod:`runner.sources.kafka.datasource`. Both give
the same columns (:func:`~runner.sources.kafka.datasource.spark_schema`) and the same offset
JSON in the checkpoint.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from runner.errors import ConfigError
from runner.sources.kafka.datasource import SOURCE_NAME, KafkaDataSource
from runner.sources.kafka.options import KafkaSourceOptions, mask_client_config
from runner.sources.kafka.plan import offsets_to_json, parse_starting_offsets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SPARK_KAFKA_PROVIDER", "SOURCE_TUNING_OPTIONS", "spark_kafka_available",
           "read_kafka_stream"]

log = logging.getLogger("runner.kafka")

SPARK_KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"

Implementation = Literal["auto", "spark", "python"]

SOURCE_TUNING_OPTIONS = ("min_partitions", "max_records_per_partition", "timeout_ms",
                         "read_timeout_ms")
"""Keys of ``options`` that tune the source rather than the Kafka client (client properties
always contain a dot, these never do)."""

# The same tuning for Spark's own source; ``timeout_ms`` becomes the Java client's request and
# API timeouts (see _read_with_spark).
_SPARK_TUNING = {"min_partitions": "minPartitions",
                   "max_records_per_partition": "maxRecordsPerPartition",
                   "read_timeout_ms": "kafkaConsumer.pollTimeoutMs"}


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


def _secret_value(value: Any) -> str:
    # pydantic's SecretStr (project.yml options) or a plain string
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value)


def read_kafka_stream(
    spark: SparkSession,
    *,
    bootstrap_servers: str,
    topics: str | Sequence[str],
    starting_offsets: str | Mapping[str, Mapping[str, int]] = "earliest",
    max_offsets_per_trigger: int | None = None,
    fail_on_data_loss: bool = True,
    options: Mapping[str, Any] | None = None,
    implementation: Implementation = "auto",
    connect_timeout: float | None = None,
    start_record: str | None = None,
) -> DataFrame:
    """A streaming DataFrame of Kafka records.

    Columns: ``value STRING, _key STRING, _topic STRING, _partition INT, _offset BIGINT,
    _kafka_timestamp TIMESTAMP``.

    Args:
        spark: the session.
        bootstrap_servers: ``host:port[,host:port...]``.
        topics: one topic, a comma-separated list or a sequence of names (each may be a
            comma-separated list too; duplicates are dropped).
        starting_offsets: ``earliest``, ``latest``, or per-partition offsets
            ``{"topic": {"0": 5}}`` (JSON text or mapping; ``-2`` earliest, ``-1`` latest)
            naming every partition; used only when the checkpoint has no offsets yet.
        max_offsets_per_trigger: records per micro-batch, total across partitions, split in
            proportion to each partition's backlog.
        fail_on_data_loss: fail (true) or warn and skip (false) when offsets to read are gone.
        options: Kafka client properties, passed as they are to the client in use: the Java
            client's names with Spark's source (``sasl.jaas.config``...), librdkafka's with the
            Python one (``sasl.username``, ``sasl.password``...); ``security.protocol`` and
            ``sasl.mechanism`` are common to both. Values may be pydantic ``SecretStr``.
            Secret-looking values never appear in logs or messages. The keys in
            :data:`SOURCE_TUNING_OPTIONS` tune the source instead (see
            :mod:`runner.sources.kafka.datasource`): ``min_partitions``,
            ``max_records_per_partition``, ``timeout_ms`` and ``read_timeout_ms``.
        implementation: ``auto`` (Spark's source when present), ``spark`` or ``python``.
        connect_timeout: seconds Spark's source may wait for the brokers in one offset
            look-up, over its three attempts (``fetchOffset.numRetries``): each attempt's
            Java client request and API timeouts are a third of it, and an executor's poll
            waits at most all of it (``kafkaConsumer.pollTimeoutMs``), unless ``timeout_ms``,
            ``read_timeout_ms`` or the client properties say otherwise. None: Spark's
            defaults (60 s per attempt, polls of ``spark.network.timeout``).

        start_record: the checkpoint folder, where the Python reader records batch 0's
            start when it first resolves ``starting_offsets`` (Spark's own source keeps it in
            the checkpoint's ``sources/0/0``).

    Raises:
        ConfigError: malformed options, or ``spark`` asked for but not available.
    """
    names = [topics] if isinstance(topics, str) else [str(t) for t in topics]
    topic_list = list(dict.fromkeys(t.strip() for n in names for t in n.split(",") if t.strip()))
    if not topic_list:
        raise ConfigError("Kafka source: at least one topic is required")
    start = parse_starting_offsets(starting_offsets, topic_list)
    start_text = start if isinstance(start, str) else json.dumps(offsets_to_json(start))
    client = {str(k): _secret_value(v) for k, v in (options or {}).items()}
    tuning = {k: client.pop(k) for k in SOURCE_TUNING_OPTIONS if k in client}

    use_spark = implementation == "spark" or (
        implementation == "auto" and spark_kafka_available(spark))
    if implementation == "spark" and not spark_kafka_available(spark):
        raise ConfigError(f"Spark's Kafka source ({SPARK_KAFKA_PROVIDER}) is not on the classpath")
    log.info("Kafka source (%s): %s topics=%s options=%s",
             "spark" if use_spark else "python", bootstrap_servers, topic_list,
             mask_client_config(client))
    if use_spark:
        return _read_with_spark(spark, bootstrap_servers, topic_list, start_text,
                             max_offsets_per_trigger, fail_on_data_loss, client, tuning,
                             connect_timeout)

    source_options = {
        "bootstrap_servers": bootstrap_servers,
        "topic": ",".join(topic_list),
        "starting_offsets": start_text,
        "fail_on_data_loss": str(bool(fail_on_data_loss)).lower(),
        **tuning,
        **{f"kafka.{k}": v for k, v in client.items()},
    }
    if start_record is not None:
        source_options["start_record"] = start_record
    if max_offsets_per_trigger is not None:
        source_options["max_offsets_per_trigger"] = str(max_offsets_per_trigger)
    KafkaSourceOptions.parse(source_options)  # fail here, not in a Spark worker
    spark.dataSource.register(KafkaDataSource)
    return spark.readStream.format(SOURCE_NAME).options(**source_options).load()


def _read_with_spark(spark: SparkSession, bootstrap_servers: str, topics: list[str],
                  starting_offsets: str, max_offsets_per_trigger: int | None,
                  fail_on_data_loss: bool, client: Mapping[str, str],
                  tuning: Mapping[str, str], connect_timeout: float | None) -> DataFrame:
    from pyspark.sql import functions as F

    KafkaSourceOptions.parse({**tuning, "bootstrap_servers": bootstrap_servers,
                              "topic": ",".join(topics)})  # validates the numbers
    tuning = dict(tuning)
    if connect_timeout is not None:  # bounded waits (see read_kafka_stream)
        per_attempt = str(max(1000, int(connect_timeout * 1000 / _OFFSET_ATTEMPTS)))
        tuning.setdefault("timeout_ms", per_attempt)
        tuning.setdefault("read_timeout_ms", str(max(1000, int(connect_timeout * 1000))))
    if "timeout_ms" in tuning:  # the driver's metadata and offset look-ups give up after it
        client = {"request.timeout.ms": tuning["timeout_ms"],
                  "default.api.timeout.ms": tuning["timeout_ms"], **client}

    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap_servers)
              .option("subscribe", ",".join(topics))
              .option("startingOffsets", starting_offsets)
              .option("failOnDataLoss", str(bool(fail_on_data_loss)).lower())
              .options(**{f"kafka.{k}": v for k, v in client.items()})
              .options(**{_SPARK_TUNING[k]: v for k, v in tuning.items()
                          if k in _SPARK_TUNING}))
    if connect_timeout is not None:
        reader = reader.option("fetchOffset.numRetries", str(_OFFSET_ATTEMPTS))
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load().select(
        F.col("value").cast("string").alias("value"),
        F.col("key").cast("string").alias("_key"),
        F.col("topic").alias("_topic"),
        F.col("partition").alias("_partition"),
        F.col("offset").alias("_offset"),
        F.col("timestamp").alias("_kafka_timestamp"),
    )

