"""Defence in depth at run time: the runner's session reads no file by path in SQL,
and a model reaches ``spark.sql`` only as one query without script transformation, checked by
Spark's own parser, whatever compile let through.

One engine suffices: the refusals happen before any Delta writer is chosen or called (no table
is written here), and the session settings are the same for both engines.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runner.errors import ExecutionError
from runner.runtime.guard import checked_query

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_the_stream_runs_only_queries_and_reads_no_file_by_path(spark: SparkSession,
                                                                 tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    session = spark.newSession()
    session.createDataFrame([("a",)], "eventId STRING").createOrReplaceTempView("parsed_events")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read\n")
    out = tmp_path / "out"

    assert session.conf.get("spark.sql.runSQLOnFiles") == "false"
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        session.sql(f"SELECT * FROM text.`{secret}`").collect()

    ok = "SELECT eventId FROM parsed_events;\n-- the end\n"
    assert checked_query(session, ok) == "SELECT eventId FROM parsed_events"
    assert [r[0] for r in session.sql(checked_query(session, ok)).collect()] == ["a"]

    commands = [f"INSERT OVERWRITE DIRECTORY '{out}' SELECT eventId FROM parsed_events",
                "CREATE TEMPORARY VIEW leaked AS SELECT eventId FROM parsed_events",
                "SET spark.sql.runSQLOnFiles=true",
                "SELECT eventId FROM parsed_events; DROP VIEW parsed_events"]
    for sql in commands:
        with pytest.raises(ExecutionError, match="not one query to Spark's parser"):
            checked_query(session, sql)
    scripts = ["SELECT TRANSFORM(eventId) USING 'cat' AS (x) FROM parsed_events",
               "SELECT eventId FROM parsed_events WHERE eventId IN (\n"
               "  SELECT TRANSFORM(eventId) USING 'cat' AS (x) FROM parsed_events)"]
    for sql in scripts:
        with pytest.raises(ExecutionError, match="runs a script"):
            checked_query(session, sql)
    # nothing of the refused statements ran
    assert not out.exists()
    assert not session.catalog.tableExists("leaked")
    assert session.conf.get("spark.sql.runSQLOnFiles") == "false"
    assert session.catalog.tableExists("parsed_events")
