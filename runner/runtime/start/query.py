"""The streaming query of ``runner stream``: one query, one checkpoint, one ``foreachBatch``.

:class:`Query` starts it once the start-up (:mod:`runner.runtime.start.startup`) is done, runs each
micro-batch through :func:`runner.runtime.batches.batch.run_batch` (after keeping the Kafka offsets
and recording, or on a replay comparing, the batch's input), and watches it: SIGINT and SIGTERM
(:class:`Stopper`) stop it after the batch in flight, once Spark has logged that batch as committed.
A failure is raised as the batch's own error when there is one.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from pyspark.errors import StreamingQueryException

from runner.checkpoint.kafka_offsets import chunk_size, keep_offsets
from runner.checkpoint.spark_logs import is_committed
from runner.errors import ExecutionError, RunnerError, SourceError
from runner.events import BatchDone, Reporter, StopRequested
from runner.project.loader import Project
from runner.runtime.batches.batch import BatchPlan, BatchResult, prepare, run_batch
from runner.runtime.batches.parking import ParkedError, Parking
from runner.runtime.batches.remote_batch import RESULTS_FOLDER, RemoteBatch, ResultFiles
from runner.runtime.client.remote import server_lost_as_error
from runner.runtime.client.session import session_info
from runner.sources.same_input import ReplayGuard
from runner.spark_errors import first_line, is_kafka_timeout, root_cause, runner_error_in
from runner.storage.ops import Location, rmtree

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["Query", "Stopper", "StreamSummary", "offset_keeper"]

Progress = Callable[[dict[str, Any] | None], None]

#: Over Spark Connect the server starts the batch function's Python worker when the query
#: starts and gives it 10 s (fixed in Spark) to connect back; on a loaded server the worker's
#: imports take longer, and Spark says so in these words. Nothing ran: start again.
_WORKER_LATE = "Python worker failed to connect back"
_START_ATTEMPTS = 5


@dataclass
class StreamSummary:
    """Totals over the batches this process ran."""

    batches: int = 0
    input_rows: int = 0
    dead_letters: int = 0
    rows_by_model: dict[str, int] = field(default_factory=dict)
    skipped_sinks: int = 0
    seconds: float = 0.0
    stopped_by_signal: bool = False
    # models parked during this run (their SQL failed; on_model_error: park), by name
    parked: dict[str, ParkedError] = field(default_factory=dict)

    def add(self, result: BatchResult) -> None:
        self.batches += 1
        self.input_rows += result.input_rows
        self.dead_letters += result.dead_letters
        self.skipped_sinks += len(result.skipped)
        for model, rows in result.rows_by_model.items():
            self.rows_by_model[model] = self.rows_by_model.get(model, 0) + rows


class Stopper:
    """SIGINT/SIGTERM set a flag; the main loop stops the query between batches.

    A second signal stops at once (exit 128 + the signal's number, 130 for Ctrl-C): the batch
    in flight is cut short before Spark's commit-log entry, so it replays on the next start
    and the tables' application transactions skip what it had already written.

    PySpark's SparkContext installs its own SIGINT handler when it starts (cancel every job,
    raise KeyboardInterrupt in whatever the main thread is doing: py4j tracebacks, and a
    fatal error in the interpreter when a batch is in flight), so :meth:`install` runs again
    once the session is up.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous = signal.signal(sig, self._on_signal)
                self._previous.setdefault(sig, previous)

    def _on_signal(self, signum: int, frame: object) -> None:  # noqa: ARG002 - signal handler signature
        if not self.requested.is_set():
            self.requested.set()
            return
        try:  # progress lines already printed must not be lost with the buffers
            sys.stdout.flush()
        except (OSError, ValueError, RuntimeError):  # closed, or interrupted mid-write
            pass
        name = signal.Signals(signum).name
        os.write(2, f"\nsecond {name}: stopping now; the batch in flight was not committed "
                    "and replays on the next start\n".encode())
        os._exit(128 + signum)

    def __enter__(self) -> Stopper:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


@dataclass
class _Batches:
    """Which batch ``foreachBatch`` is running and which it finished last (None: none)."""

    running: int | None = None
    finished: int | None = None

    def drain(self, query: StreamingQuery, checkpoint: Location) -> None:
        """Wait until no batch is running and Spark has logged the last one as committed
        (``<checkpoint>/commits/<id>``): stopping earlier interrupts Spark between the sinks
        and that entry, and the finished batch would replay on the next start."""
        while query.isActive and (self.running is not None or (
                self.finished is not None
                and not is_committed(checkpoint, self.finished))):
            time.sleep(0.1)


class Query:
    """The streaming query over ``bp``, its batches and its end.

    Args:
        parking: the run's parked models; a batch skips them and parks its own failures.
        guard: records each batch's input before any table commits it (compares it on a
            replay).
        report: events of the query itself (a stop requested); ``on_batch`` gets each
            :class:`~runner.events.BatchDone` (the reporter wrapped by the bookkeeping);
            ``on_progress`` gets Spark's ``lastProgress`` about twice a second and at the end.
    """

    def __init__(self, spark: SparkSession, project: Project, bp: BatchPlan, *,
                 parking: Parking, guard: ReplayGuard, stopper: Stopper, report: Reporter,
                 on_batch: Reporter, on_progress: Progress,
                 remote: RemoteBatch | None = None) -> None:
        self.spark, self.project, self.bp = spark, project, bp
        # Over Spark Connect the batch runs on the server (runner.runtime.batches.remote_batch);
        # its results come back through files under the checkpoint.
        self.remote = remote
        self.results: ResultFiles | None = None
        self.parking, self.guard, self.stopper = parking, guard, stopper
        self.report, self.on_batch, self.on_progress = report, on_batch, on_progress
        self.summary = StreamSummary(parked=parking.this_run)
        self.failure: list[BaseException] = []
        self.batches = _Batches()
        self.keep = offset_keeper(spark, project)

    def process(self, df: DataFrame, batch_id: int) -> None:
        """``foreachBatch``'s function: one micro-batch, idempotent on its id."""
        self.batches.running = batch_id
        try:
            self.keep(batch_id)
            self.guard(batch_id)  # before any table commits it: record (replayed: compare)
            result = run_batch(self.bp, df, batch_id, self.parking.before_batch())
            # Parked before Spark's commit-log entry: a replay of this batch parks it again.
            self.parking.record(result.parked)
        except BaseException as e:
            self.failure.append(e)
            raise
        finally:
            self.batches.running = None
        for p in result.parked.values():
            self.parking.add(p)
        self.batches.finished = batch_id
        self._done(result)

    def _done(self, result: BatchResult) -> None:
        self.summary.add(result)
        self.on_batch(BatchDone(result))

    def _collect(self) -> None:
        """Over Spark Connect: take in the batches the server finished since the last call."""
        if self.results is None:
            return
        results, failure = self.results.new()
        for result in results:
            for p in result.parked.values():
                self.parking.add(p)
            self.batches.finished = result.batch_id
            self._done(result)
        if failure is not None and not self.failure:
            self.failure.append(failure)

    def run(self, *, mode: Literal["available_now", "processing_time"],
            trigger: str) -> StreamSummary:
        """Start the query and wait for its end (the input done, a signal or a failure)."""
        started = time.perf_counter()
        if self.stopper.requested.is_set():  # a signal during start-up: stop before batch 0
            self.report(StopRequested("before"))
            self.summary.stopped_by_signal = True
            return self.summary
        prepare(self.bp)  # the per-run parse expressions, once, before batch 0
        query = self._start(mode, trigger)
        try:
            error = self._watch(query)
        finally:
            self.summary.seconds = time.perf_counter() - started
        self._raise_failure(error)
        return self.summary

    def _start(self, mode: Literal["available_now", "processing_time"],
               trigger: str) -> StreamingQuery:
        project = self.project
        function: Callable[[DataFrame, int], None] = self.process
        if self.remote is not None:
            rmtree(project.checkpoint / RESULTS_FOLDER)  # earlier runs', read then
            self.results = ResultFiles(project.checkpoint, self.remote.run)
            function = self.remote
        writer = (_source_stream(self.spark, project).writeStream
                  .queryName(f"runner_{project.config.name}")
                  .option("checkpointLocation", str(project.checkpoint))
                  .foreachBatch(function))
        writer = (writer.trigger(availableNow=True) if mode == "available_now"
                  else writer.trigger(processingTime=trigger))
        for attempt in range(_START_ATTEMPTS):
            try:
                return writer.start()
            except Exception as e:
                if self.remote is not None and _WORKER_LATE in str(e) and (
                        attempt + 1 < _START_ATTEMPTS):
                    time.sleep(2.0 * (attempt + 1))  # the server's worker was slow: a loaded
                    continue                         # server; let it settle, start again
                raise ExecutionError(f"could not start the streaming query: {first_line(e)}"
                                     ) from e
        raise AssertionError("unreachable")

    def _watch(self, query: StreamingQuery) -> BaseException | None:
        """Wait for the query's end; a signal stops it after the batch in flight. Returns
        the query's error (None: it ended well, or was stopped)."""
        with server_lost_as_error(self.spark):
            return self._watch_loop(query)

    def _watch_loop(self, query: StreamingQuery) -> BaseException | None:
        while query.isActive:
            try:
                # pyspark takes float seconds (its annotation says int)
                query.awaitTermination(0.5)  # type: ignore[arg-type]
            except StreamingQueryException:
                break  # reported by _raise_failure, from the batch's own error if any
            self._collect()
            self.on_progress(query.lastProgress)
            if self.stopper.requested.is_set():
                self.report(StopRequested("in_flight"))
                self.batches.drain(query, self.project.checkpoint)
                query.stop()
                self.summary.stopped_by_signal = True
                break
        self._collect()
        self.on_progress(query.lastProgress)
        return query.exception() if not self.summary.stopped_by_signal else None

    def _raise_failure(self, error: BaseException | None) -> None:
        if self.failure:
            cause = self.failure[0]
            if isinstance(cause, RunnerError):
                raise cause
            raise ExecutionError(f"batch failed: {type(cause).__name__}: {first_line(cause)}"
                                 ) from cause
        if error is not None and not self.summary.stopped_by_signal:
            message = (runner_error_in(error) or _kafka_unreachable(self.project, error)
                       or first_line(error))
            log = session_info(self.spark).log_file or "(not recorded)"
            raise ExecutionError(f"the streaming query failed: {message}",
                                 hint=f"Spark's log: {log}")


def _source_stream(spark: SparkSession, project: Project) -> DataFrame:
    """The raw records as a streaming DataFrame.

    Raises:
        SourceError: the source cannot be opened (also when Spark or Hadoop says so).
    """
    source = project.config.source
    if source.type == "files":
        from runner.sources.files import read_files_stream

        path = str(project.resolve(source.path))
        try:
            return read_files_stream(spark, path=path,
                                     max_files_per_trigger=source.max_files_per_trigger,
                                     create_missing=True)
        except RunnerError:
            raise
        except Exception as e:  # Hadoop's file system via py4j: a bad scheme, no access
            raise SourceError(f"source.path {path!r} cannot be read: {root_cause(e)}") from e
    from runner.sources.kafka.reader import read_kafka_stream

    return read_kafka_stream(spark, source, start_record=str(project.checkpoint))


def _kafka_unreachable(project: Project, error: BaseException) -> str | None:
    """Spark's Kafka source gave up on the brokers: the same message as the Python reader's."""
    source = project.config.source
    if source.type != "kafka" or not is_kafka_timeout(error):
        return None
    timeout = source.options.get("timeout_ms")
    within = (f" within {int(timeout.get_secret_value()) / 1000:g} s" if timeout
              else f" within {source.connect_timeout_seconds:g} s (source.connect_timeout)")
    return (f"cannot reach the Kafka brokers at {source.bootstrap_servers}{within} "
            "(Spark's Kafka source)\nhint: check bootstrap_servers, the network and the "
            "client's security options")


def offset_keeper(spark: SparkSession, project: Project) -> Callable[[int], object]:
    """Kafka: at a batch's start, keep the committed batches' offsets past Spark's retention
    (runner.checkpoint.kafka_offsets), so a rebuild or backfill replays each under its own id.
    A no-op for the files source, whose own log keeps every batch's files."""
    if project.config.source.type != "kafka":
        return lambda batch_id: 0
    retain = int(spark.conf.get("spark.sql.streaming.minBatchesToRetain", "100") or 100)
    every, checkpoint = chunk_size(retain), project.checkpoint
    return lambda batch_id: keep_offsets(checkpoint, before=batch_id, every=every)
