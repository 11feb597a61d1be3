"""Delta's Spark settings, the one place they are spelt (the session and the stream use them).

delta-spark plugs into Spark through an SQL extension and a catalog, set when the session
starts: its MERGE (``DeltaTable.merge``) needs both. On a local master, delta-spark's
``snapshotPartitions`` (50 by default) makes every commit end with a 50-task state job; two per
core do the same work in a fraction of the time on micro-batches.
"""

from __future__ import annotations

__all__ = ["DELTA_JAR_PREFIX", "DELTA_SESSION_CONF", "local_delta_conf"]

#: File name prefix of the delta-spark jar (``delta-spark_2.13-<version>.jar``).
DELTA_JAR_PREFIX = "delta-spark_"

DELTA_SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def local_delta_conf(cores: int) -> dict[str, str]:
    """delta-spark settings for a local master with ``cores`` cores.

    >>> local_delta_conf(2)
    {'spark.databricks.delta.snapshotPartitions': '4'}
    """
    return {"spark.databricks.delta.snapshotPartitions": str(2 * max(cores, 1))}
