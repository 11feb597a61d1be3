"""The compile corpus against a real Spark session (:mod:`tests.support.spark_sql_corpus`):
the recorded verdicts are still Spark's, and ``runner compile --analyze`` agrees with them on
every model (:func:`runner.runtime.start.analysis.analyse_plan` over a project holding every
corpus model; its numbers go to ``tests/corpus/spark_sql/analyze.json``).

Slow: Spark analyses each of the corpus's thousands of models (minutes); nightly only.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runner.build import compile_project
from runner.compile.render import RenderBudget
from runner.project.loader import load_project
from runner.runtime.client.session import session_info
from runner.runtime.start.analysis import Refusal, analyse_plan
from tests.support.spark_sql_corpus import (
    ACCEPTED,
    CORPUS,
    MODELS,
    REPO,
    load_corpus,
    load_models,
    write_json,
)
from tests.support.spark_verdicts import changed_verdicts, spark_verdicts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _built() -> None:
    if not MODELS.is_file():
        pytest.skip("the corpus is built by scripts/setup.sh (.jars/spark-tests/models.jsonl)")


def test_recorded_verdicts_are_still_sparks(spark: SparkSession) -> None:
    models = load_models()
    verdicts, _ = spark_verdicts(models, spark)
    assert changed_verdicts(models, verdicts) == []


def test_compile_analyze_agrees_with_spark_on_every_model(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    corpus = load_corpus()
    (tmp_path / "models").mkdir()
    (tmp_path / "project.yml").write_text((REPO / "project.yml").read_text(encoding="utf-8"))
    for m in corpus:
        (tmp_path / "models" / f"{m.name}.sql").write_text(m.sql, encoding="utf-8")
    project = load_project(tmp_path)
    plan = compile_project(project, budget=RenderBudget(total_seconds=3600)).plan

    started = time.perf_counter()
    analysed = analyse_plan(spark, plan, project.parsed_events_columns)
    seconds = time.perf_counter() - started

    said = {name: a.error_class if isinstance(a, Refusal) else ACCEPTED
            for name, a in analysed.items()}
    wrong = {m.name: (m.verdict, said.get(m.name)) for m in corpus if said.get(m.name) != m.verdict}
    kinds = Counter("false refusal" if v == ACCEPTED else "false pass" if s == ACCEPTED
                    else "other class" for v, s in wrong.values())
    write_json(CORPUS / "analyze.json", {
        "models": len(corpus), "agree": len(corpus) - len(wrong),
        "agreement_percent": round(100 * (len(corpus) - len(wrong)) / len(corpus), 2),
        "false_refusals": kinds["false refusal"], "false_passes": kinds["false pass"],
        "ms_per_model": round(1000 * seconds / len(corpus), 1),
        "session_seconds": round(session_info(spark).start_seconds, 1),
        "load_average": round(os.getloadavg()[0], 1), "cpus": os.cpu_count()})
    assert wrong == {}
