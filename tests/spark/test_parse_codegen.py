"""A batch after the first compiles no new code: the batch id is not spelled in generated Java.

Spark writes a plain ``F.lit(batch_id)`` into the Java it generates, so each batch's plans would
be new code compiled again (the dead-letter reason alone is over 100 KB of Java);
:func:`runner.runtime.batches.parse.batch_id_column` keeps the id out of it. Spark's own counter of
compilations (``CodegenMetrics``) is the measure: deterministic, unlike a timing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from runner.runtime.batches.parse import parse_batch, prepare_parse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SCHEMA = "eventId STRING NOT NULL, ts TIMESTAMP, user STRUCT<id: STRING, age: INT>, amount DOUBLE"
LINES = [*(f'{{"eventId":"e{i}","ts":"2024-01-01T00:00:00Z","amount":{i}}}' for i in range(50)),
         "not json", '{"ts":"2024-01-01T00:00:00Z"}', '{"eventId":"x","amount":"many"}']


def _compilations(spark: SparkSession) -> int:
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    return int(jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
               .getCount())


def test_batches_after_the_first_reuse_the_generated_code(spark: SparkSession) -> None:
    raw = spark.createDataFrame([(line, "f.json") for line in LINES],
                                "value STRING, _source_file STRING")
    prepare_parse(SCHEMA, metadata_columns=("_source_file",))
    new_code = []
    for batch_id in (11, 12, 13):
        before = _compilations(spark)
        parsed = parse_batch(raw, schema_ddl=SCHEMA, batch_id=batch_id,
                             metadata_columns=("_source_file",))
        valid = parsed.valid.collect()
        dead = parsed.dead.collect()
        new_code.append(_compilations(spark) - before)
        assert len(valid) == 50 and len(dead) == 3
        assert {r["_batch_id"] for r in valid} == {batch_id}
        assert {r["_batch_id"] for r in dead} == {batch_id}
        assert dict(parsed.valid.dtypes)["_batch_id"] == "bigint"
        assert dict(parsed.dead.dtypes)["_batch_id"] == "bigint"
    assert new_code[0] > 0, "the first batch compiles its plans (or the counter is not read)"
    assert new_code[1:] == [0, 0], f"compilations per batch: {new_code}"
