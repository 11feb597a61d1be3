"""Delta's Spark settings, the one place they are spelt (the session and the stream use them),
and the probe of a class in the session's JVM (delta-spark's, spark-hadoop-cloud's).

delta-spark plugs into Spark through an SQL extension and a catalog, set when the session
starts: its MERGE (``DeltaTable.merge``) needs both. On a local master, delta-spark's
``snapshotPartitions`` (50 by default) makes every commit end with a 50-task state job; two per
core do the same work in a fraction of the time on micro-batches.

``spark.databricks.delta.autoCompact.enabled=false``: a table whose property
``delta.autoOptimize.autoCompact`` is on (set by another writer, or a platform default) would
otherwise compact right after the runner's commit, synchronously, inside the batch: an OPTIMIZE
of seconds on the latency path, every few batches (delta-io/delta#2414). The runner compacts
in ``runner maintain``, off the stream. The session conf wins over the table property for this
session's writes only; other writers of the table keep theirs, and readers see the same rows
(compaction rewrites files, not data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DELTA_JAR_PREFIX", "DELTA_SESSION_CONF", "jvm_class_loads", "local_delta_conf"]

#: File name prefix of the delta-spark jar (``delta-spark_2.13-<version>.jar``).
DELTA_JAR_PREFIX = "delta-spark_"

DELTA_SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Compaction runs in `runner maintain`, never synchronously after a batch's commit.
    "spark.databricks.delta.autoCompact.enabled": "false",
}


def local_delta_conf(cores: int) -> dict[str, str]:
    """delta-spark settings for a local master with ``cores`` cores.

    >>> local_delta_conf(2)
    {'spark.databricks.delta.snapshotPartitions': '4'}
    """
    return {"spark.databricks.delta.snapshotPartitions": str(2 * max(cores, 1))}


def jvm_class_loads(spark: SparkSession | None, name: str) -> bool:
    """True when the class ``name`` (dotted) is loadable in the session's JVM.

    Never raises: no session, a Spark Connect session (no ``_jvm``) or a missing class all
    answer False.
    """
    if spark is None:
        return False
    try:
        from py4j.java_gateway import JavaClass
        from py4j.protocol import Py4JError

        try:
            found = spark._jvm  # noqa: SLF001 - the only way to probe the classpath
            for part in name.split("."):
                if found is None:
                    return False
                found = getattr(found, part)
            return isinstance(found, JavaClass)
        except (AttributeError, Py4JError):
            return False
    except ImportError:
        return False
