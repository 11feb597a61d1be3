"""Delta writers (``spark`` | ``rs``), idempotent on (app id, batch id).

>>> from runner.sinks import make_writer
>>> make_writer("rs", None).engine
'rs'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from runner.errors import ConfigError
from runner.sinks.base import DeltaWriter, SinkSpec, WriteResult
from runner.sinks.rs import RsWriter
from runner.sinks.spark import SparkWriter, delta_spark_available

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DeltaWriter",
    "RsWriter",
    "SinkSpec",
    "SparkWriter",
    "WriteResult",
    "delta_spark_available",
    "make_writer",
]

Engine = Literal["auto", "spark", "rs"]


def make_writer(engine: Engine, spark: SparkSession | None) -> DeltaWriter:
    """The Delta writer for ``delta.engine``: ``auto`` picks ``spark`` when the io.delta
    classes are on the session's JVM classpath, else ``rs``.

    Raises:
        ConfigError: unknown engine, or ``spark`` asked for without the delta-spark jars.
    """
    if engine == "rs":
        return RsWriter()
    if engine == "auto":
        return SparkWriter(spark) if delta_spark_available(spark) else RsWriter()
    if engine == "spark":
        if spark is None or not delta_spark_available(spark):
            raise ConfigError(
                "delta.engine is 'spark' but the delta-spark classes (io.delta.tables.DeltaTable)"
                " are not on the Spark classpath",
                hint="use delta.engine: auto or rs, or start Spark with the delta-spark jars")
        return SparkWriter(spark)
    raise ConfigError(f"unknown delta.engine {engine!r}", hint="use one of: auto, spark, rs")
