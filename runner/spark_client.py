"""Which kind of SparkSession the runner holds: a classic one (a JVM behind py4j) or a Spark
Connect client (no JVM in reach: docs/CONNECT.md). Every layer that talks to Spark asks here,
so sources, sinks and the runtime tell the two apart the same way."""

from __future__ import annotations

__all__ = ["is_remote"]


def is_remote(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no JVM behind it).

    >>> is_remote(object())
    False
    """
    return type(spark).__module__.startswith("pyspark.sql.connect")
