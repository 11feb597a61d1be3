"""What tests/unit/test_lint_spark_resolution.py says Spark does, Spark does: it accepts the SQL
listed as accepted, refuses the neighbours listed as refused, and names columns without an
alias as listed. Over the repository's project (``parsed_events``), through the analysis
``runner compile --analyze`` makes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from runner.project.loader import load_project
from runner.runtime.start.analysis import Refusal, analyse_sql, analysis_session
from tests.support.spark_sql_corpus import REPO
from tests.unit.test_lint_spark_resolution import ACCEPTED, NAMED, REFUSED, SPARK_NAMES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(spark: SparkSession) -> SparkSession:
    project = load_project(REPO)
    return analysis_session(spark, schema_ddl=project.schema.ddl,
                            metadata_columns=project.parsed_events_columns)


def test_spark_accepts_what_the_unit_tests_say_it_accepts(session: SparkSession) -> None:
    refused = {name: analyse_sql(session, sql) for name, sql in ACCEPTED.items()}
    assert {n: r.error_class for n, r in refused.items() if isinstance(r, Refusal)} == {}


# Slow (46 s on the 2-core machine: each refusal is logged in full by Spark); the default suite
# keeps the accepted and the naming checks, and the rules' own unit tests.
@pytest.mark.slow
def test_spark_refuses_what_the_unit_tests_say_it_refuses(session: SparkSession) -> None:
    accepted = [name for name, (sql, _) in REFUSED.items()
                if not isinstance(analyse_sql(session, sql), Refusal)]
    assert accepted == []


def test_spark_names_columns_as_the_unit_tests_say(session: SparkSession) -> None:
    schema = analyse_sql(session, NAMED)
    assert not isinstance(schema, Refusal), schema
    assert [f.name for f in schema.fields] == SPARK_NAMES
