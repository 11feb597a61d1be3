"""The analysis lint rules agree with Spark's own analyzer: SQL the rules flag is SQL that
``spark.sql`` refuses, and the valid SQL they leave alone is SQL Spark accepts (analysis only,
over empty views shaped like ``parsed_events`` and the ref'd model)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runner.compile.render import render_models
from runner.project.loader import load_project
from runner.runtime.start.analysis import analysis_session
from tests.unit.test_lint import _BASE, BROKEN, PROJECT_YML
from tests.unit.test_lint_analysis import INVALID, RULES, VALID

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _rendered(root: Path, files: dict[str, str]) -> dict[str, str]:
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text(PROJECT_YML)
    for name, text in files.items():
        (root / "models" / f"{name}.sql").write_text(text)
    rendered, errors = render_models(load_project(root))
    assert not errors
    return {m.name: m.sql for m in rendered}


@pytest.fixture(scope="module")
def analyse(spark: SparkSession):  # type: ignore[no-untyped-def]
    """``analyse(sql)``: None when Spark accepts the query, else its error's first line."""
    from pyspark.errors import PySparkException

    session = analysis_session(spark, schema_ddl=load_project(BROKEN / "missing-aggregation").schema.ddl,
                               metadata_columns={"_batch_id": "BIGINT",
                                                 "_source_file": "STRING"})
    session.sql(_BASE["base"]).createOrReplaceTempView("base")

    def run(sql: str) -> str | None:
        try:
            session.sql(sql)
        except PySparkException as e:
            return str(e).splitlines()[0]
        return None

    return run


def test_valid_sql_is_accepted_by_spark(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **VALID})
    refused = {name: analyse(sql) for name, sql in rendered.items()}
    assert {n: e for n, e in refused.items() if e} == {}


#: The error classes Spark refuses each rule's findings with.
SPARK_ERRORS = {
    "missing-aggregation": ("MISSING_AGGREGATION", "MISSING_GROUP_BY", "UNRESOLVED_COLUMN"),
    "misplaced-aggregate": ("GROUP_BY_AGGREGATE", "INVALID_WHERE_CONDITION",
                            "NESTED_AGGREGATE_FUNCTION", "UNSUPPORTED_EXPR_FOR_OPERATOR",
                            "WINDOW_FUNCTION_NOT_ALLOWED_IN_CLAUSE"),
    "window-order": ("WINDOW_FUNCTION_FRAME_NOT_ORDERED",),
    "ambiguous-column": ("AMBIGUOUS_REFERENCE",),
    "type-mismatch": ("DATATYPE_MISMATCH",),
}


def test_flagged_sql_is_refused_by_spark(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cases = {name: (rule, sql) for name, (rule, sql, _, _) in INVALID.items()}
    for rule in RULES:
        for path in (BROKEN / rule / "models").glob("*.sql"):
            if path.stem != "base":
                cases[f"{rule.replace('-', '_')}_{path.stem}"] = (rule, path.read_text())
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **{n: c[1] for n, c in cases.items()}})
    errors = {name: analyse(rendered[name]) for name in cases}
    wrong = {name: error for name, error in errors.items()
             if not error or not any(f"[{c}" in error for c in SPARK_ERRORS[cases[name][0]])}
    assert wrong == {}
