"""Everything that knows Delta: the writers (``spark`` | ``rs``), idempotent on (app id,
batch id) (:mod:`.base`), staged appends (:mod:`.staged`), table schemas and schema changes
(:mod:`.schema`), reading tables back (:mod:`.tables`).

>>> from runner.sinks import make_writer
>>> make_writer("rs", None).engine
'rs'
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from runner.errors import ConfigError
from runner.spark_client import is_remote

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.sinks.base import DeltaWriter, SinkSpec, WriteResult, app_id, sink_specs
    from runner.sinks.rs import RsWriter
    from runner.sinks.spark import SparkWriter, delta_spark_available

__all__ = [
    "DeltaWriter",
    "EngineChoice",
    "RsWriter",
    "SinkSpec",
    "SparkWriter",
    "WriteResult",
    "app_id",
    "choose_engine",
    "delta_spark_available",
    "engine_choice",
    "is_local_master",
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


@dataclass(frozen=True)
class EngineChoice:
    """The engine a run writes with, and why (``runner stream`` prints both at start).

    Attributes:
        engine: ``spark`` (delta-spark) or ``rs`` (delta-rs).
        reason: one clause saying why, for the start-up line.
        classes_missing: ``auto`` fell back to ``rs`` because the io.delta classes did not
            load (the caller may add why: :func:`runner.runtime.client.session.missing_jars_note`).
    """

    engine: Literal["spark", "rs"]
    reason: str
    classes_missing: bool = False


def is_local_master(master: str | None) -> bool:
    """``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: one JVM on one machine.

    ``local-cluster[...]`` is not: it starts executor JVMs as a cluster does, and exists to
    behave like one.

    >>> [is_local_master(m) for m in ("local", "local[2]", "local-cluster[2,1,1024]", "yarn")]
    [True, True, False, False]
    """
    return re.fullmatch(r"local(\[[^\]]*\])?", (master or "").strip()) is not None


def choose_engine(engine: Engine, *, master: str | None, delta_classes: bool) -> EngineChoice:
    """docs/ENGINES.md: ``auto`` on a local master picks ``rs`` (the faster exact engine on
    one machine: delta-spark's per-commit Spark jobs cost more there, ``bench.stream_bench
    --set engines``); on any other master
    ``spark`` when the io.delta classes are on the JVM classpath, else ``rs``.

    Args:
        engine: project.yml's ``delta.engine``.
        master: the session's master URL (None: no session).
        delta_classes: whether ``io.delta.tables.DeltaTable`` loads in the session's JVM.

    Raises:
        ConfigError: unknown engine, or ``spark`` asked for without the delta-spark classes.

    >>> choose_engine("auto", master="local[2]", delta_classes=True).engine
    'rs'
    >>> choose_engine("auto", master="spark://h:7077", delta_classes=True).engine
    'spark'
    """
    if engine == "rs":
        return EngineChoice("rs", "delta.engine: rs in project.yml")
    if engine == "spark":
        if not delta_classes:
            raise ConfigError(
                "delta.engine is 'spark' but the delta-spark classes (io.delta.tables.DeltaTable)"
                " are not on the Spark classpath",
                hint="use delta.engine: auto or rs, or start Spark with the delta-spark jars")
        return EngineChoice("spark", "delta.engine: spark in project.yml")
    if engine != "auto":
        raise ConfigError(f"unknown delta.engine {engine!r}", hint="use one of: auto, spark, rs")
    if master is None:
        return EngineChoice("rs", "delta.engine auto without a Spark session")
    if is_local_master(master):
        return EngineChoice("rs", f"delta.engine auto on the local master {master}: delta-rs "
                                  "is the faster exact engine on one machine (set delta.engine:"
                                  " spark to write with delta-spark)")
    if delta_classes:
        return EngineChoice("spark", f"delta.engine auto on the cluster master {master}: the "
                                     "delta-spark classes are on Spark's classpath")
    return EngineChoice("rs", f"delta.engine auto on the cluster master {master}: the "
                              "delta-spark classes are not on Spark's classpath",
                        classes_missing=True)


def engine_choice(engine: Engine, spark: SparkSession | None) -> EngineChoice:
    """:func:`choose_engine` for a live session (its master, its JVM's classpath)."""
    from runner.sinks.spark import delta_spark_available

    needs_probe = engine == "spark" or (engine == "auto" and spark is not None
                                        and not is_local_master(_master(spark)))
    return choose_engine(engine, master=_master(spark),
                         delta_classes=needs_probe and delta_spark_available(spark))


def make_writer(engine: Engine, spark: SparkSession | None, *,
                arrow_max_rows: int | None = None) -> DeltaWriter:
    """The Delta writer for ``delta.engine``, chosen by :func:`engine_choice`.

    Args:
        arrow_max_rows: ``delta.arrow_max_rows`` for the ``rs`` engine (appends of batches up
            to that many rows go through Arrow); None: by the session's master
            (:func:`runner.sinks.rs.default_arrow_max_rows`).

    Raises:
        ConfigError: unknown engine, or ``spark`` asked for without the delta-spark jars.
    """
    from runner.sinks.rs import RsWriter, default_arrow_max_rows
    from runner.sinks.spark import SparkWriter

    if engine_choice(engine, spark).engine == "spark" and spark is not None:
        if is_remote(spark):  # no JVM in reach
            from runner.sinks.spark_connect import SparkConnectWriter

            return SparkConnectWriter(spark)
        return SparkWriter(spark)
    limit = arrow_max_rows if arrow_max_rows is not None else \
        default_arrow_max_rows(_master(spark))
    return RsWriter(arrow_max_rows=limit)


def _master(spark: SparkSession | None) -> str | None:
    if spark is None:
        return None
    try:
        return spark.sparkContext.master
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: ask the conf
        return spark.conf.get("spark.master", None)
