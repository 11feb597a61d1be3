"""Everything that knows Delta: the writers (``spark`` | ``rs``), idempotent on (app id,
batch id) (:mod:`.base`), staged appends (:mod:`.staged`), table schemas and schema changes
(:mod:`.schema`), reading tables back (:mod:`.tables`).

>>> from runner.sinks import make_writer
>>> make_writer("rs", None).engine
'rs'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal

from runner.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.sinks.base import DeltaWriter, SinkSpec, WriteResult, app_id, sink_specs
    from runner.sinks.rs import RsWriter
    from runner.sinks.spark import SparkWriter, delta_spark_available

__all__ = [
    "DeltaWriter",
    "RsWriter",
    "SinkSpec",
    "SparkWriter",
    "WriteResult",
    "app_id",
    "delta_spark_available",
    "make_writer",
    "sink_specs",
]

Engine = Literal["auto", "spark", "rs"]

# Imported on first use: the version probes (runner.sinks.tables) and `runner snapshot` need neither
# deltalake nor pyarrow, whose import is most of a short command's start-up.
_HOME = {"DeltaWriter": "runner.sinks.base", "SinkSpec": "runner.sinks.base",
         "WriteResult": "runner.sinks.base", "app_id": "runner.sinks.base",
         "sink_specs": "runner.sinks.base", "RsWriter": "runner.sinks.rs",
         "SparkWriter": "runner.sinks.spark", "delta_spark_available": "runner.sinks.spark"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'runner.sinks' has no attribute '{name}'")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def make_writer(engine: Engine, spark: SparkSession | None, *,
                arrow_max_rows: int | None = None) -> DeltaWriter:
    """The Delta writer for ``delta.engine``: ``auto`` picks ``spark`` when the io.delta
    classes are on the session's JVM classpath, else ``rs``.

    Args:
        arrow_max_rows: ``delta.arrow_max_rows`` for the ``rs`` engine (appends of batches up
            to that many rows go through Arrow); None: by the session's master
            (:func:`runner.sinks.rs.default_arrow_max_rows`).

    Raises:
        ConfigError: unknown engine, or ``spark`` asked for without the delta-spark jars.
    """
    from runner.sinks.rs import RsWriter, default_arrow_max_rows
    from runner.sinks.spark import SparkWriter, delta_spark_available

    def rs() -> RsWriter:
        limit = arrow_max_rows if arrow_max_rows is not None else \
            default_arrow_max_rows(_master(spark))
        return RsWriter(arrow_max_rows=limit)

    if engine == "rs":
        return rs()
    if engine == "auto":
        return SparkWriter(spark) if spark is not None and delta_spark_available(spark) else rs()
    if engine == "spark":
        if spark is None or not delta_spark_available(spark):
            raise ConfigError(
                "delta.engine is 'spark' but the delta-spark classes (io.delta.tables.DeltaTable)"
                " are not on the Spark classpath",
                hint="use delta.engine: auto or rs, or start Spark with the delta-spark jars")
        return SparkWriter(spark)
    raise ConfigError(f"unknown delta.engine {engine!r}", hint="use one of: auto, spark, rs")


def _master(spark: SparkSession | None) -> str | None:
    if spark is None:
        return None
    try:
        return spark.sparkContext.master
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: ask the conf
        return spark.conf.get("spark.master", None)
