"""compile's duplicate-output-column refusals of the corpus's models Spark accepts are all true
duplicates: Spark's own analysed schema of each such model names one column twice
(case-insensitive, as Delta compares names), so a Delta table cannot hold its rows. A refusal
whose model Spark names without a duplicate is a false refusal (lint gave a column a name
Spark does not: :func:`runner.lint.resolution.spark_names.pretty_name`).

Slow: it lints every model of the corpus Spark accepts (about 6,500, 1 to 2 min on two cores)
and analyses the refused ones in a session; the default suite's corpus test
(tests/unit/test_spark_corpus.py) already fails on a new refusal of an accepted model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from runner.project.loader import load_project
from runner.runtime.start.analysis import Refusal, analyse_sql, analysis_session
from tests.support.spark_sql_corpus import ACCEPTED, MODELS, REPO, compile_verdicts, load_corpus

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_every_duplicate_name_refusal_is_a_duplicate_in_sparks_schema(
        spark: SparkSession) -> None:
    if not MODELS.is_file():
        pytest.skip("the corpus is built by scripts/setup.sh (.jars/spark-tests/models.jsonl)")
    accepted = [m for m in load_corpus() if m.verdict == ACCEPTED]
    verdicts = compile_verdicts(accepted)
    refused = [m for m in accepted if "duplicate-output-column" in verdicts[m.name]]
    project = load_project(REPO)
    session = analysis_session(spark, schema_ddl=project.schema.ddl,
                               metadata_columns=project.parsed_events_columns)
    not_twice = {}
    for m in refused:
        schema = analyse_sql(session, m.sql)
        assert not isinstance(schema, Refusal), (m.name, schema)
        names = [f.name.lower() for f in schema.fields]
        if len(names) == len(set(names)):
            not_twice[m.name] = [f.name for f in schema.fields]
    assert refused
    assert not_twice == {}
