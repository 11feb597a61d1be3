"""The files the Connect server's batch function leaves for the client (docs/CONNECT.md).

They are JSON, read back field by field: whoever can write under the checkpoint must not be
able to run code in the client (a pickle would let them), and a batch's error must reach the
client with its class, message, hint and exit code.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from runner import errors
from runner.runtime.batches.batch import BatchResult
from runner.runtime.batches.parking import ParkedError
from runner.runtime.batches.remote_batch import (
    RESULTS_FOLDER,
    ResultFiles,
    dump_error,
    dump_result,
    load_error,
    load_result,
)
from runner.sinks.base import WriteResult
from runner.storage.ops import write_atomic


def _result(batch_id: int) -> BatchResult:
    return BatchResult(
        batch_id=batch_id, input_rows=120, dead_letters=3, seconds=1.25,
        writes=(WriteResult("orders", 100, False, 7, 0.5),
                WriteResult("users", 0, True, None, 0.0)),
        expectations={"orders": {"positive_amount": 2}},
        parked={"users": ParkedError("users", batch_id, "DIVIDE_BY_ZERO", "Division by zero",
                                     path="models/users.sql", at="models/users.sql:3:8")})


def test_a_result_comes_back_equal() -> None:
    result = _result(4)
    assert load_result(dump_result(result)) == result


@pytest.mark.parametrize("error", [
    errors.SparkServerLostError("the Spark Connect server went away", hint="start it again"),
    errors.StorageError("s3://b/cp/ledger: denied", location="s3://b/cp/ledger"),
    errors.KafkaRecordError("topic orders is missing", error_class="UNKNOWN_TOPIC_OR_PART"),
    errors.ConfigError("bad key", path="project.yml", line=3, column=5, hint="see docs"),
    errors.LeaseLostError("lease taken"),
])
def test_an_error_keeps_class_message_hint_place_and_exit_code(
        error: errors.RunnerError) -> None:
    back = load_error(dump_error(error))
    assert type(back) is type(error)
    assert (back.message, back.hint, back.path, back.line, back.column, back.exit_code) == (
        error.message, error.hint, error.path, error.line, error.column, error.exit_code)
    assert str(back) == str(error)
    if isinstance(error, errors.KafkaRecordError):
        assert back.error_class == error.error_class  # type: ignore[attr-defined]


def test_an_error_of_another_class_is_a_runner_error_with_its_exit_code() -> None:
    class Elsewhere(errors.RunnerError):
        exit_code = 75

    back = load_error(dump_error(Elsewhere("busy")))
    assert type(back) is errors.RunnerError and back.exit_code == 75


def test_a_named_class_outside_runner_errors_is_not_built() -> None:
    data = b'{"class": "Popen", "message": "x", "exit_code": 1}'
    assert type(load_error(data)) is errors.RunnerError


class _Plant:
    """What an attacker would write as a pickle: loading it creates a file."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (self.target, "ran"))  # type: ignore[return-value]


def test_the_client_reads_results_in_order_once_and_runs_nothing_planted(
        tmp_path: Path) -> None:
    checkpoint = tmp_path / "cp"
    folder = checkpoint / RESULTS_FOLDER / "run2"
    write_atomic(checkpoint / RESULTS_FOLDER / "run1" / "3.failed",
                 dump_error(errors.LeaseLostError("stopped writing")))  # another run's
    write_atomic(folder / "0.result", dump_result(_result(0)))
    files = ResultFiles(checkpoint, "run2")  # files there before it are not read
    for batch_id in (10, 2):
        write_atomic(folder / f"{batch_id}.result", dump_result(_result(batch_id)))
    results, failure = files.new()
    assert [r.batch_id for r in results] == [2, 10] and failure is None
    assert files.new() == ([], None)

    write_atomic(folder / "11.failed", dump_error(errors.SinkError("orders: write failed")))
    results, failure = files.new()
    assert results == [] and isinstance(failure, errors.SinkError)

    ran = tmp_path / "ran"
    write_atomic(folder / "12.result", pickle.dumps(_Plant(ran)))
    with pytest.raises(errors.ExecutionError, match="12.result: not a result"):
        files.new()
    assert not ran.exists()
