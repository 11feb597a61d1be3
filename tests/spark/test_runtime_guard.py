"""Defence in depth at run time: the runner's session reads no file by path in SQL,
and a model reaches ``spark.sql`` only as one query without script transformation, checked by
Spark's own parser, whatever compile let through.

One engine suffices: the refusals happen before any Delta writer is chosen or called (no table
is written here), and the session settings are the same for both engines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runner.errors import ExecutionError
from runner.runtime.batches.sql_guard import checked_query

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


def test_the_stream_calls_only_allowlisted_functions(spark: SparkSession, tmp_path: Path) -> None:
    """A model that reached the stream without compile (a hand-edited target/ or manifest)
    still cannot call reflect: the functions of Spark's parsed plan are checked against
    compile's allowlist, wherever they are (subquery, CTE, named window, generator, FROM)."""
    session = spark.newSession()
    session.createDataFrame([("a",)], "eventId STRING").createOrReplaceTempView("parsed_events")
    ok = ("WITH c AS (SELECT upper(eventId) AS u, eventId FROM parsed_events) "
          "SELECT u, count(*) OVER w AS n, COUNT(u) OVER (PARTITION BY u) AS d, "
          "transform(array(1, 2), x -> x + 1) AS t, r.id, e.v FROM c, range(0, 3) r "
          "LATERAL VIEW explode(array(1)) e AS v WINDOW w AS (PARTITION BY lower(u))")
    assert checked_query(session, ok) == ok
    assert len(session.sql(ok).collect()) == 3
    from runner.build import compile_project
    from runner.project.loader import load_project

    example = compile_project(load_project(str(Path(__file__).parents[2]))).plan.steps
    assert example and all(checked_query(session, s.sql) for s in example)  # none refused

    secret = "java.lang.System', 'getenv', 'HOME'"
    refused = {
        f"SELECT reflect('{secret}) AS r FROM parsed_events": "reflect calls Java methods",
        f"SELECT eventId FROM parsed_events WHERE eventId IN (SELECT JAVA_METHOD('{secret}) "
        "FROM parsed_events)": "java_method calls Java methods",
        f"WITH c AS (SELECT try_reflect('{secret}) AS r FROM parsed_events) SELECT r FROM c":
            "try_reflect calls Java methods",
        f"SELECT count(*) OVER w AS n FROM parsed_events WINDOW w AS "
        f"(PARTITION BY reflect('{secret}))": "reflect calls Java methods",
        f"SELECT * FROM read_files('{tmp_path}')": "read_files reads files by path",
        "SELECT id FROM range(1000000000000)": "range() needs literal integer bounds",
        "SELECT x FROM parsed_events LATERAL VIEW explode(sequence(1, 2)) t AS x "
        "WHERE eventId = some_udf(eventId)": "'some_udf' is not a Spark SQL built-in",
        "SELECT spark_catalog.default.f(eventId) FROM parsed_events":
            "names a function in a catalog",
    }
    for sql, message in refused.items():
        with pytest.raises(ExecutionError, match=re.escape(message)):
            checked_query(session, sql)
    with pytest.raises(ExecutionError, match="WINDOW clause inside a subquery"):
        checked_query(session, "SELECT eventId FROM parsed_events WHERE eventId IN (SELECT "
                               "max(eventId) OVER w FROM parsed_events WINDOW w AS ())")
