"""Prometheus metrics of ``runner stream`` (``--metrics-port N`` or the target's ``metrics.port``).

Fed from the two places progress already comes from, so the figures match the progress lines:
each batch's :class:`~runner.runtime.batches.batch.BatchResult` (what ``runner stream`` prints per
batch: rows per table, skipped replays, dead letters, write seconds) and Spark's own query
progress (``StreamingQuery.lastProgress``: input rows, rates, trigger durations, source
offsets). Names, labels and meanings: docs/METRICS.md.

>>> m = StreamMetrics(pipeline="p", source="kafka", tables=["a"])
>>> m.on_progress({"batchId": 0, "numInputRows": 5, "inputRowsPerSecond": 2.5,
...                "processedRowsPerSecond": 10.0, "durationMs": {"addBatch": 400},
...                "sources": [{"endOffset": '{"t":{"0":5}}', "latestOffset": '{"t":{"0":9}}'}]})
>>> m.registry.get_sample_value("runner_source_lag_records", {"pipeline": "p", "source": "kafka"})
4.0
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from runner.errors import ConfigError
from runner.events import BatchDone, Event, Reporter

if TYPE_CHECKING:
    from runner.compile.plan import Plan
    from runner.project.loader import Project
    from runner.runtime.batches.batch import BatchResult

__all__ = ["COMMIT_BUCKETS", "StreamMetrics", "serve", "start_metrics"]

#: Seconds, from a small batch's commit on delta-rs to a large one's on delta-spark (both engines'
#: commit times: ``bench.kafka_bench --only rate``).
COMMIT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, math.inf)


class StreamMetrics:
    """The metrics of one pipeline's stream, in their own registry.

    Args:
        pipeline: project.yml ``name`` (label ``pipeline`` on every metric).
        source: the source's label value (``files`` or ``kafka``).
        tables: the model tables, whose series exist (at 0) before the first batch.
    """

    def __init__(self, *, pipeline: str, source: str, tables: Iterable[str]) -> None:
        self.registry = CollectorRegistry()
        self._labels = {"pipeline": pipeline}
        self._source = {"pipeline": pipeline, "source": source}
        self._last_batch: float | None = None
        self._last_progress: Any = None
        r = self.registry
        table = ["pipeline", "table"]
        src = ["pipeline", "source"]
        self.rows = Counter("runner_table_rows_written", "Rows committed to the table.",
                            table, registry=r)
        self.batches = Counter("runner_table_batches", "Batches written to the table (a "
                               "batch where the model had no rows included).",
                               table, registry=r)
        self.skipped = Counter("runner_table_skipped_replays", "Batch writes skipped because "
                               "the table already held the batch (a replay).", table, registry=r)
        self.commit = Histogram("runner_table_commit_seconds", "Seconds one batch's write to "
                                "the table took (compute the model, write, commit).", table,
                                buckets=COMMIT_BUCKETS, registry=r)
        self.records = Counter("runner_source_records", "Records read from the source.",
                               src, registry=r)
        self.dead = Counter("runner_source_dead_letters", "Records written to the dead-letter "
                            "table.", src, registry=r)
        self.source_batches = Counter("runner_source_batches", "Micro-batches completed.",
                                      src, registry=r)
        self.lag = Gauge("runner_source_lag_records", "Records in the source after the last "
                         "batch's end (Kafka: latest offsets - end offsets, all partitions); "
                         "absent where the source does not report it.", src, registry=r)
        self.last_batch = Gauge("runner_source_last_batch_timestamp_seconds", "Unix time the "
                                "last micro-batch completed.", src, registry=r)
        age = Gauge("runner_source_last_batch_age_seconds", "Seconds since the last micro-batch "
                    "completed (since the stream started, before the first).", src, registry=r)
        started = time.time()
        age.labels(**self._source).set_function(
            lambda: time.time() - (self._last_batch or started))
        self.parked = Gauge("runner_parked_models", "Models parked by a failure of their own "
                            "SQL during this run (they and their descendants wait at their last "
                            "good batch until a restart catches them up).", ["pipeline"],
                            registry=r)
        self._parked: set[str] = set()
        self.parked.labels(**self._labels).set(0)
        self.query_rows = Gauge("runner_query_input_rows", "Spark's last batch: numInputRows.",
                                ["pipeline"], registry=r)
        self.input_rate = Gauge("runner_query_input_rows_per_second", "Spark's last batch: "
                                "inputRowsPerSecond.", ["pipeline"], registry=r)
        self.processed_rate = Gauge("runner_query_processed_rows_per_second", "Spark's last "
                                    "batch: processedRowsPerSecond.", ["pipeline"], registry=r)
        self.duration = Gauge("runner_query_duration_seconds", "Spark's last batch: durationMs "
                              "per phase (triggerExecution: the whole trigger; addBatch: the "
                              "runner's foreachBatch).", ["pipeline", "phase"], registry=r)
        self.query_batch = Gauge("runner_query_batch_id", "Spark's last batch: batchId.",
                                 ["pipeline"], registry=r)
        for name in tables:
            for metric in (self.rows, self.batches, self.skipped, self.commit):
                metric.labels(pipeline=pipeline, table=name)
        for metric in (self.records, self.dead, self.source_batches):
            metric.labels(**self._source)

    def on_batch(self, result: BatchResult) -> None:
        """One finished batch (the same result the progress line prints)."""
        for w in result.writes:
            labels = {**self._labels, "table": w.model}
            if w.skipped:
                self.skipped.labels(**labels).inc()
                continue
            self.rows.labels(**labels).inc(w.rows)
            self.batches.labels(**labels).inc()
            self.commit.labels(**labels).observe(w.seconds)
        self.records.labels(**self._source).inc(result.input_rows)
        self.dead.labels(**self._source).inc(result.dead_letters)
        self.source_batches.labels(**self._source).inc()
        self._parked.update(result.parked)
        self.parked.labels(**self._labels).set(len(self._parked))
        self._last_batch = time.time()
        self.last_batch.labels(**self._source).set(self._last_batch)

    def wrap(self, report: Reporter) -> Reporter:
        """``report``, recording each :class:`~runner.events.BatchDone` here first."""
        from runner.runtime.batches.batch import BatchResult

        def both(event: Event) -> None:
            if isinstance(event, BatchDone) and isinstance(event.result, BatchResult):
                self.on_batch(event.result)
            report(event)
        return both

    def on_progress(self, progress: Mapping[str, Any] | None) -> None:
        """Spark's ``StreamingQuery.lastProgress`` (a dict); a repeat of the last is ignored.

        The query gauges describe the last trigger that ran a batch (an ``addBatch`` phase):
        Spark's idle triggers (no new input) leave them as they are; the source lag follows
        every progress."""
        if not progress or progress == self._last_progress:
            return
        self._last_progress = progress
        lag = _kafka_lag(progress.get("sources") or [])
        if lag is not None:
            self.lag.labels(**self._source).set(lag)
        if "addBatch" not in (progress.get("durationMs") or {}):
            return
        self.query_rows.labels(**self._labels).set(progress.get("numInputRows") or 0)
        self.input_rate.labels(**self._labels).set(_number(progress.get("inputRowsPerSecond")))
        self.processed_rate.labels(**self._labels).set(
            _number(progress.get("processedRowsPerSecond")))
        if progress.get("batchId") is not None:
            self.query_batch.labels(**self._labels).set(progress["batchId"])
        for phase, ms in (progress.get("durationMs") or {}).items():
            self.duration.labels(**self._labels, phase=phase).set(_number(ms) / 1000)


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(number) else number


def _offsets(text: Any) -> dict[tuple[str, str], int] | None:
    """Kafka offset JSON (``{"topic": {"0": 5}}``, both readers) as (topic, partition) ->
    offset; None for anything else (a files source's offsets, a missing one)."""
    try:
        doc = json.loads(text) if isinstance(text, str) else text
        return {(t, p): int(o) for t, parts in doc.items() for p, o in parts.items()}
    except (TypeError, ValueError, AttributeError):
        return None


def _kafka_lag(sources: list[Mapping[str, Any]]) -> int | None:
    total, known = 0, False
    for source in sources:
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        if end is None or latest is None:
            continue
        known = True
        total += sum(max(0, o - end.get(tp, 0)) for tp, o in latest.items())
    return total if known else None


def serve(metrics: StreamMetrics, *, port: int, host: str) -> None:
    """Serve ``metrics`` over HTTP (``/metrics``) on a daemon thread for the process's life.

    Raises:
        ConfigError: the port cannot be bound (in use, not allowed).
    """
    from prometheus_client import start_http_server

    try:
        start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as e:
        raise ConfigError(f"metrics: cannot serve on {host}:{port}: {e.strerror or e}",
                          hint="pick a free port with --metrics-port or metrics.port in "
                               "the profile's target") from e


def start_metrics(project: Project, plan: Plan, *, port: int) -> StreamMetrics:
    """The stream's metrics for ``plan``'s tables, served on ``port`` (the target's
    ``metrics.host``) before the session starts, so a scraper sees the pipeline at once.

    Raises:
        ConfigError: the port cannot be bound.
    """
    metrics = StreamMetrics(pipeline=project.config.name, source=project.config.source.type,
                            tables=[s.name for s in plan.steps])
    serve(metrics, port=port, host=project.config.metrics.host)
    return metrics
