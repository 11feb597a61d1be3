"""``runner compile`` against Spark's own SQL tests: every model of the corpus built at set-up
from Spark's SQL test jar (:mod:`tests.support.spark_sql_corpus`) is linted, and compile's
verdict is compared with the verdict Spark's session recorded for it. No JVM.

The numbers go to ``tests/corpus/spark_sql/result.json`` (``python -m bench.corpus_report``
puts them in docs/COMMANDS.md). The test fails when agreement falls below the committed
baseline or compile refuses a model Spark accepts that the baseline does not list; raise the
baseline with ``python -m bench.corpus_report --raise-baseline``.
"""

from __future__ import annotations

import json

import pytest

from tests.support.spark_sql_corpus import (
    BASELINE,
    MODELS,
    RESULT,
    compile_verdicts,
    load_corpus,
    measure,
    regressions,
    write_json,
)


@pytest.fixture(scope="module")
def result() -> dict[str, object]:
    if not MODELS.is_file():
        pytest.skip("the corpus is built by scripts/setup.sh (.jars/spark-tests/models.jsonl)")
    models = load_corpus()
    measured = measure(models, compile_verdicts(models))
    write_json(RESULT, measured)
    return measured


def test_compile_agrees_with_spark_at_least_as_well_as_the_baseline(
        result: dict[str, object]) -> None:
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert regressions(result, baseline) == []


def test_the_corpus_is_large_and_refuses_a_quarter() -> None:
    if not MODELS.is_file():
        pytest.skip("the corpus is built by scripts/setup.sh (.jars/spark-tests/models.jsonl)")
    models = load_corpus()
    refused = [m for m in models if m.verdict != "accepted"]
    assert len(models) >= 1000
    assert len(refused) >= 0.25 * len(models)
