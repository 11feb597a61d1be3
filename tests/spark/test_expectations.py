"""Expectations in the stream: apply_expectations over a Spark DataFrame (shared session)."""

from __future__ import annotations

import json

import pytest

from runner.compile.plan import Step
from runner.errors import ExecutionError
from runner.project.config import ModelConfig
from runner.runtime.batches.expectations import apply_expectations, expectation_failure

pytestmark = pytest.mark.spark

META = {"_source_file": "STRING"}


def _step(*expectations: dict[str, str], name: str = "orders") -> Step:
    config = ModelConfig(expectations=expectations)  # type: ignore[arg-type]
    return Step(name, f"models/{name}.sql", "SELECT 1", config, (), ())


@pytest.fixture(scope="module")
def orders(spark):
    rows = [("o1", 10, "ok", "file:///in/a.json"), ("o2", -1, "ok", "file:///in/a.json"),
            ("o3", 5, "weird", "file:///in/b.json"), ("o4", None, "ok", "file:///in/b.json"),
            ("o5", 0, "weird", "file:///in/b.json")]
    return spark.createDataFrame(rows, "id STRING, amount INT, status STRING, "
                                       "_source_file STRING")


def test_drop_and_quarantine_with_counts_observed_on_the_write(orders) -> None:
    step = _step({"name": "positive", "expr": "amount > 0", "on_violation": "drop"},
                 {"name": "known_status", "expr": "status IN ('ok', 'err')",
                  "on_violation": "quarantine"})
    out = apply_expectations(orders, step, batch_id=7, metadata_columns=META)
    assert out.counts() is None  # nothing ran yet: never blocks
    kept = sorted(r["id"] for r in out.kept.collect())
    # o2 (-1), o4 (null amount: NULL is a violation) dropped; o3, o5 quarantined
    assert kept == ["o1"]
    assert out.kept.columns == orders.columns
    assert out.counts() == {"positive": 3, "known_status": 2}

    dead = sorted(out.quarantined.collect(), key=lambda r: r["raw"])
    assert out.quarantined.columns == ["raw", "reason", "_batch_id", "_source_file"]
    assert [json.loads(r["raw"])["id"] for r in dead] == ["o3", "o5"]
    assert json.loads(dead[0]["raw"]) == {"id": "o3", "amount": 5, "status": "weird",
                                          "_source_file": "file:///in/b.json"}
    assert {r["reason"] for r in dead} == {
        "expectation orders.known_status failed: status IN ('ok', 'err')"}
    assert {r["_batch_id"] for r in dead} == {7}
    assert {r["_source_file"] for r in dead} == {"file:///in/b.json"}


def test_fail_raises_in_the_job_with_model_expectation_and_row(orders) -> None:
    step = _step({"name": "positive", "expr": "amount > -5", "on_violation": "drop"},
                 {"name": "not_weird", "expr": "status <> 'weird'"})  # fail is the default
    out = apply_expectations(orders.where("id IN ('o1', 'o3')"), step, batch_id=3,
                             metadata_columns=META)
    assert out.quarantined is None
    with pytest.raises(Exception) as info:
        out.kept.collect()
    error = expectation_failure(info.value)
    assert isinstance(error, ExecutionError)
    assert ("model orders: expectation 'not_weird' (status <> 'weird') failed in batch 3"
            in str(error))
    assert '"id":"o3"' in error.hint
    assert expectation_failure(RuntimeError("unrelated")) is None


def test_without_expectations_and_bad_expressions(orders) -> None:
    assert apply_expectations(orders, _step(), batch_id=0, metadata_columns=META).kept is orders
    bad = _step({"name": "typo", "expr": "amout > 0"})
    with pytest.raises(ExecutionError, match="expectation 'typo' \\(amout > 0\\) is not a valid"):
        apply_expectations(orders, bad, batch_id=0, metadata_columns=META)
    # quarantined rows of a model without the metadata columns get nulls there
    slim = orders.select("id", "status")
    step = _step({"name": "ok", "expr": "status = 'ok'", "on_violation": "quarantine"})
    out = apply_expectations(slim, step, batch_id=1, metadata_columns=META)
    assert {r["_source_file"] for r in out.quarantined.collect()} == {None}
    assert out.counts(wait=True) == {"ok": 2}
