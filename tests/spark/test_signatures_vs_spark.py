"""The signature, literal and query-shape rules agree with Spark: every SQL they flag
(tests/unit/test_lint_signatures.py) Spark refuses with the error class the message names, and
every valid neighbour Spark accepts; and runner/lint/spark_types/functions.json says what a live session
says, for a sample of its records (scripts/spark_functions.py regenerates all of them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runner.lint.spark_types.builtins import signature
from runner.project.loader import load_project
from runner.runtime.start.analysis import analysis_session
from scripts.spark_functions import VALUES as probe_values
from tests.spark.test_lint_vs_spark import _rendered
from tests.unit.test_lint import _BASE, BROKEN
from tests.unit.test_lint_signatures import INVALID, RULES, VALID

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark



@pytest.fixture(scope="module")
def analyse(spark: SparkSession):  # type: ignore[no-untyped-def]
    """``analyse(sql)``: None when Spark accepts the query, else its error class and message
    (a parser's error too, whose text starts on its second line)."""
    from pyspark.errors import PySparkException

    session = analysis_session(spark, schema_ddl=load_project(BROKEN / "function-arguments").schema.ddl,
                               metadata_columns={"_batch_id": "BIGINT",
                                                 "_source_file": "STRING"})
    session.sql(_BASE["base"]).createOrReplaceTempView("base")

    def run(sql: str) -> str | None:
        try:
            session.sql(sql)
        except PySparkException as e:
            return f"{e.getCondition()}: {' '.join(str(e).split())[:300]}"
        return None

    return run


# Slow: ~80 s on the 2-core CI machine (every flagged example through Spark's analyser, each
# refusal logged in full by Spark); the rules' own unit tests run in the default suite.
@pytest.mark.slow
def test_flagged_sql_is_refused_with_the_class_named(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    expected = {name: case[2] for name, case in INVALID.items()}
    files = {name: case[1] for name, case in INVALID.items()}
    for rule in RULES:  # the broken catalogue's examples: refused, whatever the class
        for path in (BROKEN / rule / "models").glob("*.sql"):
            files[f"{rule.replace('-', '_')}_{path.stem}"] = path.read_text()
            expected[f"{rule.replace('-', '_')}_{path.stem}"] = ""
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **files})
    errors = {name: analyse(rendered[name]) for name in expected}
    wrong = {name: error for name, error in errors.items()
             if error is None or expected[name] not in error}
    assert wrong == {}


def test_valid_neighbours_are_accepted(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **VALID})
    refused = {name: analyse(sql) for name, sql in rendered.items()}
    assert {n: e for n, e in refused.items() if e} == {}


_TYPES: dict[str, str] = json.loads((Path(__file__).parents[2] / "runner" / "lint" / "spark_types" / "functions.json")
                    .read_text(encoding="utf-8"))["types"]
#: The functions the rules' examples call (every recorded one in the slow test).
_NAMES = ["if", "json_array_length", "mask", "percentile_approx", "every", "make_timestamp",
          "explode"]


def _recorded() -> list[str]:
    document = json.loads((Path(__file__).parents[2] / "runner" / "lint" / "spark_types" / "functions.json")
                          .read_text(encoding="utf-8"))["functions"]
    return sorted(n for n, f in document.items() if "kind" in f)


def _disagreements(spark: SparkSession, names: list[str]) -> list[str]:
    """Where functions.json's records of ``names`` and a live session disagree."""
    from pyspark.errors import PySparkException

    def condition(sql: str) -> str | None:
        try:
            spark.sql(sql)
        except PySparkException as e:
            return e.getCondition()
        return None

    wrong: list[str] = []
    for name in names:
        sig = signature(name)
        assert sig is not None, name
        for n in sorted(sig.wrong_nargs)[:2]:
            got = condition(f"SELECT `{name}`({', '.join(['NULL'] * n)})")
            if not (got or "").startswith("WRONG_NUM_ARGS"):
                wrong.append(f"{name} with {n} arguments: {got}")
        for i, (_, refused, error) in sorted(sig.types.items()):
            t = sorted(refused)[0]
            args = ["NULL"] * sig.probed_nargs
            args[i] = "'1'" if t == "string_literal" else f"CAST(NULL AS {_TYPES[t]})"
            got = condition(f"SELECT `{name}`({', '.join(args)})")
            if got == "DATATYPE_MISMATCH.UNEXPECTED_NULL":  # refused as a NULL: a constant of t
                args[i] = probe_values[t]
                got = condition(f"SELECT `{name}`({', '.join(args)})")
            if got != error:
                wrong.append(f"{name} with {t} at {i + 1}: {got}")
        if 0 in sig.nulls:  # a NULL literal first (the others NULL: Spark checks it first)
            got = condition(f"SELECT `{name}`({', '.join(['NULL'] * sig.probed_nargs)})")
            if got != sig.nulls[0]:
                wrong.append(f"{name} with NULL at 1: {got}")
        call = f"SELECT `{name}`({', '.join(['NULL'] * sig.nargs[0])})" if sig.nargs else ""
        if sig.kind == "aggregate" and call and condition(call) is None:
            plan = spark.sql(call)._jdf.queryExecution().analyzed()
            if plan.nodeName() != "Aggregate":
                wrong.append(f"{name} is no aggregate")
    return wrong


# Slow: ~67 s on the 2-core CI machine for six functions' probes; the whole file is checked by
# the slow test below it too.
@pytest.mark.slow
def test_functions_json_agrees_with_a_live_session(spark: SparkSession) -> None:
    assert _disagreements(spark, _NAMES) == []


@pytest.mark.slow  # every recorded function (about 570, a dozen calls each): minutes
def test_every_record_of_functions_json_agrees_with_a_live_session(spark: SparkSession) -> None:
    assert _disagreements(spark, _recorded()) == []
