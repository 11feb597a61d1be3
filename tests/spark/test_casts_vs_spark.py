"""runner/lint/spark_types/casts.py agrees with Spark: for every pair of basic types, the verdict and the
error class of ``CAST(<a value of type A> AS B)`` under ANSI mode (the session's default) are
what a live session's analyser says (each cast analysed, never run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from runner.lint.spark_types.casts import cast_refusal
from runner.lint.spark_types.infer import parse_type

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

#: Every kind casts.py places, nested ones with an element type of each interesting kind.
TYPES = ("BOOLEAN", "TINYINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10,2)", "STRING",
         "BINARY", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "INTERVAL DAY", "INTERVAL DAY TO SECOND",
         "INTERVAL YEAR TO MONTH", "ARRAY<INT>", "ARRAY<DATE>", "MAP<STRING,INT>",
         "MAP<STRING,DATE>", "STRUCT<a: INT>", "STRUCT<a: BINARY, b: INT>", "STRUCT<a: DATE>")


def _spark_verdicts(spark: SparkSession) -> dict[tuple[str, str], str | None]:
    from pyspark.errors import PySparkException

    out: dict[tuple[str, str], str | None] = {}
    for src in TYPES:
        for dst in TYPES:
            try:
                spark.sql(f"SELECT CAST(CAST(NULL AS {src}) AS {dst})")
                out[(src, dst)] = None
            except PySparkException as e:
                out[(src, dst)] = e.getCondition()
    return out


# Slow: 484 casts through the analyser, 72 s measured on the loaded 2-core machine; the matrix's
# rules have unit tests (tests/unit/test_lint_casts.py) and the rule's examples run through
# Spark in tests/spark/test_signatures_vs_spark.py.
@pytest.mark.slow
def test_every_basic_cast_is_judged_as_spark_judges_it(spark: SparkSession) -> None:
    spark_says = _spark_verdicts(spark)
    lint_says = {(s, d): cast_refusal(parse_type(s), parse_type(d)) for s, d in spark_says}
    assert {k: (lint_says[k], v) for k, v in spark_says.items() if lint_says[k] != v} == {}
