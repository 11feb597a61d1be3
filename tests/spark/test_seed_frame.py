"""A seed's rows become a DataFrame without Python workers.

``spark.createDataFrame(list)`` is an RDD of pickled rows: its first read forks PySpark's Python
workers, which stay up for the whole run beside the driver (about 150 MB resident for a few
kilobytes of CSV, found by ``bench.sdp_bench``). The seed's rows go to the JVM as an Arrow
table instead: the plan is a local relation, read by the JVM alone. Engine-independent (no
Delta table is involved), so it runs once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from runner.checkpoint.pins import SeedContent
from runner.errors import ConfigError
from runner.runtime.batches.pinned_lookups import seed_frame

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

OWNERS = SeedContent("owners", (("endpoint", "STRING"), ("team", "STRING"), ("n", "INT")),
                     "endpoint,team,n\n/a,x,1\n/b,,2\n")


def _plan(frame) -> str:  # type: ignore[no-untyped-def]
    return str(frame._jdf.queryExecution().optimizedPlan().toString())


def test_a_seed_is_a_local_relation_of_its_declared_types(spark: SparkSession) -> None:
    frame = seed_frame(spark, OWNERS)
    assert [tuple(r) for r in frame.collect()] == [("/a", "x", 1), ("/b", None, 2)]
    assert frame.dtypes == [("endpoint", "string"), ("team", "string"), ("n", "int")]
    assert _plan(frame).startswith("LocalRelation"), _plan(frame)
    assert "LogicalRDD" not in _plan(frame)  # no pickled rows, so no Python worker reads them
    given = seed_frame(spark, OWNERS, rows=[{"endpoint": "/c", "team": "y", "n": 3}])
    assert [tuple(r) for r in given.collect()] == [("/c", "y", 3)]
    assert _plan(given).startswith("LocalRelation")


def test_a_damaged_kept_copy_is_refused_not_misaligned(spark: SparkSession) -> None:
    ragged = SeedContent("owners", OWNERS.columns, "endpoint,team,n\n/a,x\n")
    with pytest.raises(ConfigError, match="seed owners: a row has 2 fields, the header 3"):
        seed_frame(spark, ragged)
    assert seed_frame(spark, SeedContent("empty", (), "")).columns == []
