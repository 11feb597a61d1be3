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
    CorpusModel,
    compile_verdicts,
    load_corpus,
    measure,
    regressions,
    write_json,
)


@pytest.fixture(scope="module")
def corpus() -> list[CorpusModel]:
    if not MODELS.is_file():
        pytest.skip("the corpus is built by scripts/setup.sh (.jars/spark-tests/models.jsonl)")
    return load_corpus()


@pytest.fixture(scope="module")
def result(corpus: list[CorpusModel]) -> dict[str, object]:
    measured = measure(corpus, compile_verdicts(corpus))
    write_json(RESULT, measured)
    return measured


def test_compile_agrees_with_spark_at_least_as_well_as_the_baseline(
        result: dict[str, object]) -> None:
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert regressions(result, baseline) == []


def test_the_corpus_is_large_and_refuses_a_quarter(corpus: list[CorpusModel]) -> None:
    refused = [m for m in corpus if m.verdict != "accepted"]
    assert len(corpus) >= 1000
    assert len(refused) >= 0.25 * len(corpus)
