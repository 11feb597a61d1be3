"""The pure half of parking failing models (no Spark): the policy, what is parked with a
failing model, the registry state and what the next start-up decides about it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.checkpoint.registry import REGISTRY_FILE, Entry, load_registry, save_registry
from runner.compile.plan import Plan, Step
from runner.errors import ConfigError
from runner.events import ModelJoining, ModelParked
from runner.project.config import ModelConfig, parse_project_config
from runner.runtime.batches.parking import ParkedError, park_policy, parked_event, parked_with
from runner.runtime.start.backfill import decide

SCHEMA = "eventId STRING"


def _plan(**configs: ModelConfig) -> Plan:
    """a -> b -> c, and d alone."""
    deps = {"a": (), "b": ("a",), "c": ("b",), "d": ()}
    steps = tuple(Step(name=n, path=f"models/{n}.sql", sql="SELECT 1 AS x",
                       config=configs.get(n, ModelConfig()), depends_on=deps[n], columns=())
                  for n in deps)
    return Plan("p", "files", SCHEMA, "_dead", steps, ())


def test_the_policy_is_the_models_else_the_projects() -> None:
    plan = _plan(b=ModelConfig(on_model_error="halt"), d=ModelConfig(on_model_error="park"))
    assert park_policy(plan, "park") == {"a", "c", "d"}
    assert park_policy(plan, "halt") == {"d"}


def test_on_model_error_is_checked_in_project_yml() -> None:
    base = "name: p\nsource: {type: files}\nschema: 'eventId STRING'\n"
    assert parse_project_config(base, path="project.yml").on_model_error == "park"
    with pytest.raises(ConfigError, match="on_model_error: Input should be 'park' or 'halt'"):
        parse_project_config(base + "on_model_error: skip\n", path="project.yml")


def test_descendants_are_parked_with_the_failing_model() -> None:
    plan = _plan()
    own = ParkedError("a", 3, "DIVIDE_BY_ZERO", "Division by zero.", "models/a.sql")
    parked = parked_with(plan, {"a": own})
    assert list(parked) == ["a", "b", "c"]
    assert parked["c"].ancestor == "a" and parked["c"].text == "its ancestor a failed"
    assert parked["a"].text == "[DIVIDE_BY_ZERO] Division by zero."
    # b failed too (it reads a): its failure is a's
    both = parked_with(plan, {"a": own, "b": ParkedError("b", 3, "X", "x", "models/b.sql")})
    assert both["b"].ancestor == "a"
    assert parked_event(own) == ModelParked("a", 3, "DIVIDE_BY_ZERO",
                                            "[DIVIDE_BY_ZERO] Division by zero.", "models/a.sql")
    # already parked models are not named again
    assert list(parked_with(plan, {"b": ParkedError("b", 3, None, "x")}, skip={"c"})) == ["b"]


def test_the_registry_keeps_the_error_and_reads_older_files(tmp_path: Path) -> None:
    (tmp_path / REGISTRY_FILE).write_text(json.dumps(
        {"version": 1, "models": {"a": {"state": "live", "since": 0, "start": 0,
                                        "drop": False, "left_at": 0}}}))
    entries = load_registry(tmp_path)
    assert entries == {"a": Entry("live")}
    entries["b"] = Entry("parked", left_at=4, error="[DIVIDE_BY_ZERO] Division by zero.")
    save_registry(tmp_path, entries)
    doc = json.loads((tmp_path / REGISTRY_FILE).read_text())
    assert "error" not in doc["models"]["a"]  # an older runner still reads the live ones
    assert load_registry(tmp_path) == entries


def test_a_parked_model_catches_up_from_the_batch_it_failed_in() -> None:
    parked = Entry("parked", left_at=4, error="[DIVIDE_BY_ZERO] x")
    h = decide(entries={"a": Entry("live"), "b": parked}, run=["a", "b"], files={"a", "b"},
               committed=9)
    assert h.entries["b"] == Entry("backfilling", start=4)
    assert ModelJoining("b", "parked", "backfill", start=4, committed=9, next_batch=10,
                        error="[DIVIDE_BY_ZERO] x") in h.events
    # parked in the batch that was not committed (a crash before its commit-log entry):
    # nothing to catch up, it runs again from that batch
    h = decide(entries={"b": parked}, run=["b"], files={"b"}, committed=3)
    assert h.entries["b"] == Entry("live", since=4)
    # not in this run (disabled): it stays parked, and catches up when it is back
    h = decide(entries={"a": Entry("live"), "b": parked}, run=["a"], files={"a", "b"},
               committed=9)
    assert h.entries["b"] == parked
    # its SQL file is gone: retired, its table holds batches before 4
    h = decide(entries={"a": Entry("live"), "b": parked}, run=["a"], files={"a"},
               committed=9)
    assert h.entries["b"] == Entry("retired", left_at=4)


def test_over_connect_the_innermost_server_cause_names_the_failure() -> None:
    """A Connect client holds no Java exception: a write task's ``TASK_WRITE_FAILED`` carries
    the model's own error only as a ``Caused by:`` line of the server's stack trace (as
    delta-spark's writer raised it over Connect in tests/connect), and that is the one named."""
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    from runner.runtime.batches.parking import error_class
    from runner.spark_errors import root_cause

    trace = ("org.apache.spark.SparkException\n\tat org.apache.spark.sql.X.write(X.scala:1)\n"
             "Caused by: org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] Division "
             "by zero. Use `try_divide` to tolerate divisor being 0.\n\tat Y.div(Y.scala:2)")
    error = SparkConnectGrpcException(
        "[TASK_WRITE_FAILED] Task failed while writing rows to file:/wh/fragile.",
        errorClass="TASK_WRITE_FAILED", messageParameters={"path": "file:/wh/fragile"},
        server_stacktrace=trace)
    try:
        raise RuntimeError("the sink failed") from error
    except RuntimeError as wrapped:
        assert error_class(wrapped) == "DIVIDE_BY_ZERO"
        assert root_cause(wrapped).startswith("[DIVIDE_BY_ZERO] Division by zero.")
    plain = SparkConnectGrpcException("[TASK_WRITE_FAILED] no cause sent",
                                      errorClass="TASK_WRITE_FAILED", messageParameters={})
    assert error_class(plain) == "TASK_WRITE_FAILED"
    assert root_cause(plain) == "[TASK_WRITE_FAILED] no cause sent"
