"""Run the data tests that are SQL (:mod:`.generic`) on Spark: each test's tables (its model's,
the models it refs, the seeds and sources it reads) are read with delta-rs and registered as
temporary views of a session of their own; the guarded query runs there and its rows are the
failing rows (dbt's semantics: the test passes when it returns none).

The session reads no file by path (``spark.sql.runSQLOnFiles=false``, set on every session the
runner builds), and the query text passed Spark's own parser check first
(:func:`runner.runtime.batches.sql_guard.checked_query`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from runner.errors import ConfigError, RunnerError
from runner.model_tests.compare import json_default
from runner.model_tests.generic import TestMacro, test_sql
from runner.model_tests.spec import DataTest
from runner.project.loader import Project
from runner.runtime.client.remote import new_session

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = ["SqlTestRunner"]

SAMPLE_ROWS = 5


class SqlTestRunner:
    """Runs SQL data tests with one Spark session (made on first use, unless given)."""

    def __init__(self, project: Project, macros: Mapping[str, TestMacro],
                 read_model: Callable[[str], pa.Table],
                 spark: Callable[[], SparkSession]) -> None:
        self.project = project
        self.macros = macros
        self.read_model = read_model
        self.spark = spark

    def _lookup(self, view: str) -> pa.Table:
        """A seed's table (``runner seed`` wrote it; else its CSV) or a source's, by view."""
        from runner.project.seed_arrow import seed_table
        from runner.sinks.tables import is_table, read_table

        seed = next((s for s in self.project.seeds if s.name.lower() == view.lower()), None)
        if seed is not None:
            path = self.project.table_path(seed.name)
            return read_table(str(path)) if is_table(path) else seed_table(seed)
        source = next((t for t in self.project.sources if t.view.lower() == view.lower()), None)
        if source is None or source.catalog:
            raise ConfigError(f"a data test reads '{view}', which is no seed or source table "
                              "readable by path")
        return read_table(source.location)

    def check(self, test: DataTest, model: str, key: Sequence[str]
              ) -> tuple[int, str, tuple[str, ...]]:
        """(failing rows, message, sample rows as JSON lines) of one SQL test.

        Raises:
            RunnerError: the test cannot run (it does not render, the guard refuses it, a
                table is missing, Spark refuses the query).
        """
        from runner.runtime.batches.sql_guard import checked_query
        from runner.spark_errors import first_line

        rendered = test_sql(self.project, test, model=model, key=key, macros=self.macros)
        session = new_session(self.spark())  # private temporary views
        for name in rendered.models:
            session.createDataFrame(self.read_model(name)).createOrReplaceTempView(name)
        for view in rendered.lookups:
            session.createDataFrame(self._lookup(view)).createOrReplaceTempView(view)
        query = checked_query(session, rendered.sql)
        try:
            frame = session.sql(query)
            failing = frame.count()
            sample = frame.limit(SAMPLE_ROWS).toArrow().to_pylist() if failing else []
        except Exception as e:
            raise RunnerError(f"the test's SQL failed in Spark: {first_line(e)}",
                              hint=f"its SQL: {' '.join(rendered.sql.split())[:300]}") from e
        lines = tuple(_short(json.dumps(r, default=json_default, ensure_ascii=False))
                      for r in sample)
        rows = "row" if failing == 1 else "rows"
        return failing, f"{failing:,} failing {rows} (the test's query returned them)", lines


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


