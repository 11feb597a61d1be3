"""The metrics' arithmetic without a stream (tests/spark/test_metrics.py scrapes a real one):
replays count as skipped, not as rows; Kafka lag from Spark's offsets; idle triggers keep the
last batch's figures; a port in use is a configuration error."""

from __future__ import annotations

import socket

import pytest

from runner.errors import ConfigError
from runner.events import BatchDone, Event, FullRefreshDone, StopRequested
from runner.runtime.batches.batch import BatchResult
from runner.runtime.batches.parking import ParkedError
from runner.runtime.prometheus import StreamMetrics, serve
from runner.sinks.base import WriteResult


def _value(m: StreamMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, {"pipeline": "p", **labels})


def test_batches_replays_and_dead_letters() -> None:
    m = StreamMetrics(pipeline="p", source="kafka", tables=["a", "b"])
    assert _value(m, "runner_table_rows_written_total", table="b") == 0  # exists before batch 0
    m.on_batch(BatchResult(batch_id=0, input_rows=10, dead_letters=2, seconds=1.0, writes=(
        WriteResult("a", 8, False, 0, 0.3), WriteResult("b", 3, False, 0, 0.7))))
    m.on_batch(BatchResult(batch_id=1, input_rows=5, dead_letters=0, seconds=1.0, writes=(
        WriteResult("a", 5, True, None, 0.01), WriteResult("b", 1, False, 1, 0.2))))
    assert _value(m, "runner_table_rows_written_total", table="a") == 8
    assert _value(m, "runner_table_skipped_replays_total", table="a") == 1
    assert _value(m, "runner_table_batches_total", table="b") == 2
    assert _value(m, "runner_table_commit_seconds_count", table="b") == 2
    assert _value(m, "runner_table_commit_seconds_sum", table="b") == pytest.approx(0.9)
    assert _value(m, "runner_table_commit_seconds_bucket", table="b", le="0.25") == 1
    assert _value(m, "runner_source_records_total", source="kafka") == 15
    assert _value(m, "runner_source_dead_letters_total", source="kafka") == 2
    assert _value(m, "runner_source_last_batch_age_seconds", source="kafka") < 5
    assert _value(m, "runner_parked_models") == 0
    boom = ParkedError("a", 2, "DIVIDE_BY_ZERO", "Division by zero")
    m.on_batch(BatchResult(batch_id=2, input_rows=1, dead_letters=0, seconds=1.0, writes=(),
                           parked={"a": boom, "b": ParkedError("b", 2, None, "", ancestor="a")}))
    m.on_batch(BatchResult(batch_id=3, input_rows=1, dead_letters=0, seconds=1.0, writes=()))
    assert _value(m, "runner_parked_models") == 2  # parked for the rest of the run


def test_the_exporter_subscribes_to_the_batches_among_the_events() -> None:
    """``wrap``: the reporter ``runner stream`` passes down records each batch, then passes
    every event on (the console still prints them all)."""
    m = StreamMetrics(pipeline="p", source="files", tables=["a"])
    seen: list[Event] = []
    report = m.wrap(seen.append)
    batch = BatchDone(BatchResult(batch_id=0, input_rows=4, dead_letters=1, seconds=1.0,
                                  writes=(WriteResult("a", 3, False, 0, 0.1),)))
    for event in (FullRefreshDone(), batch, StopRequested("in_flight")):
        report(event)
    assert seen == [FullRefreshDone(), batch, StopRequested("in_flight")]
    assert _value(m, "runner_table_rows_written_total", table="a") == 3
    assert _value(m, "runner_source_records_total", source="files") == 4


def test_progress_lag_and_idle_triggers() -> None:
    m = StreamMetrics(pipeline="p", source="kafka", tables=[])
    m.on_progress({"batchId": 3, "numInputRows": 7, "processedRowsPerSecond": 14.0,
                   "durationMs": {"addBatch": 400, "triggerExecution": 500},
                   "sources": [{"endOffset": '{"t":{"0":5,"1":7}}',
                                "latestOffset": '{"t":{"0":9,"1":7}}'}]})
    m.on_progress({"batchId": 4, "numInputRows": 0, "durationMs": {"triggerExecution": 3},
                   "sources": [{"endOffset": '{"t":{"0":9,"1":7}}',
                                "latestOffset": '{"t":{"0":12,"1":8}}'}]})  # idle trigger
    assert _value(m, "runner_query_batch_id") == 3
    assert _value(m, "runner_query_input_rows") == 7
    assert _value(m, "runner_query_duration_seconds", phase="addBatch") == 0.4
    assert _value(m, "runner_source_lag_records", source="kafka") == 4  # follows every trigger
    files = StreamMetrics(pipeline="p", source="files", tables=[])
    files.on_progress({"batchId": 0, "durationMs": {"addBatch": 1},
                       "sources": [{"endOffset": '{"logOffset":0}', "latestOffset": None}]})
    assert _value(files, "runner_source_lag_records", source="files") is None


def test_a_port_in_use_is_a_configuration_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=f"metrics: cannot serve on 127.0.0.1:{port}"):
            serve(StreamMetrics(pipeline="p", source="files", tables=[]), port=port,
                  host="127.0.0.1")
