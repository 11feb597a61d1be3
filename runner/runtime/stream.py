"""``runner stream``: one Structured Streaming query, one checkpoint, one ``foreachBatch``.

Start-up, in order: lock the checkpoint; check that the warehouse is a writable directory;
build the SparkSession and the Delta writer; check the catalog names (the metastore answers,
no name is taken: :mod:`runner.runtime.catalog`); on ``--full-refresh`` reset the checkpoint
and drop the tables; read (or mint) the checkpoint's query id, refusing a new checkpoint over
tables that another checkpoint wrote; note new, returning, rebuilt and retired models (dropping
the tables to rebuild, :mod:`runner.runtime.backfill`); compare each model's output columns
with its existing table (``on_schema_change``, :mod:`runner.runtime.evolution`); backfill the
models new to the checkpoint from its history; register the tables' names; start the query.
SIGINT and SIGTERM stop it after the batch in flight (or the backfill after its batch in
flight). Every refusal happens before the first batch, so nothing is written then.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from pyspark.errors import StreamingQueryException

from runner.checkpoint.identity import PipelineIdentity, check_identity
from runner.checkpoint.kafka_offsets import chunk_size, keep_offsets
from runner.checkpoint.lock import checkpoint_lock
from runner.checkpoint.query import new_query_id, read_query_id, reset_checkpoint, write_query_id
from runner.checkpoint.runs import RunRecord
from runner.checkpoint.spark_logs import is_committed
from runner.compile.plan import Plan
from runner.errors import ConfigError, ExecutionError, RunnerError, SourceError
from runner.events import (
    BatchDone,
    EngineChosen,
    FullRefreshDone,
    PipelineStarted,
    Reporter,
    StopRequested,
    ignore,
)
from runner.project.loader import Project
from runner.project.schema import source_metadata_columns
from runner.runtime.backfill import finish_handover, prepare_handover
from runner.runtime.batch import BatchPlan, BatchResult, prepare, run_batch
from runner.runtime.bookkeeping import Bookkeeper
from runner.runtime.catalog import Names, catalog_session_conf
from runner.runtime.evolution import check_schema_changes, model_output_schemas
from runner.runtime.lookups import start_lookups
from runner.runtime.parking import ParkedError, park_policy, parked_event, record_parked
from runner.runtime.session import session_info
from runner.sinks import engine_choice, make_writer, sink_specs
from runner.sinks.conf import DELTA_SESSION_CONF
from runner.sinks.tables import check_droppable, is_table, recent_app_ids
from runner.sources.same_input import ReplayGuard
from runner.spark_errors import first_line, is_kafka_timeout, root_cause, runner_error_in
from runner.storage.ops import Location, write_atomic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["StreamSummary", "run_stream"]


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



class _Stopper:
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

    def __enter__(self) -> _Stopper:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def run_stream(project: Project, plan: Plan, *, mode: Literal["available_now", "processing_time"],
               trigger: str, full_refresh: bool = False, rebuild: Collection[str] = (),
               report: Reporter = ignore,
               on_progress: Callable[[dict[str, Any] | None], None] = lambda p: None,
               ) -> StreamSummary:
    """Run the pipeline until ``available_now`` input is done, a signal, or a failure.

    ``report`` gets every event (:mod:`runner.events`: batches, backfill batches, start-up
    notes); ``on_progress`` gets Spark's ``StreamingQuery.lastProgress`` about twice a second while
    the query runs, and once at its end (repeats included: :mod:`runner.runtime.prometheus`).

    Before the query starts, models new to the checkpoint (and those in ``rebuild``, whose
    tables are dropped first) are backfilled from the checkpoint's history
    (:mod:`runner.runtime.backfill`), each batch reported as a ``BackfillProgress``.

    Raises:
        ConfigError: a fresh checkpoint over tables written by another one (no --full-refresh).
        ExecutionError: a batch failed (names the model), or the source/sinks are unusable.
    """
    if not plan.steps:
        raise ConfigError("no models to run (all disabled or none selected)")
    checkpoint = project.checkpoint
    with checkpoint_lock(checkpoint) as lock, _Stopper() as stopper, RunRecord(checkpoint), \
            ExitStack() as cleanup:
        _check_warehouse(project.warehouse)
        if not full_refresh:  # before the session: a refusal costs no JVM start
            check_identity(checkpoint, pipeline_identity(project),
                           names_in_tables=lambda: _names_in_tables(project, plan))
        else:  # check, then act: every folder the refresh deletes must be a table's
            check_droppable({name: project.table_path(name) for name in
                             [*(s.name for s in plan.steps), project.config.dead_letter]})
        from runner.runtime.session import (
            build_session,
            missing_jars_note,
        )

        conf = project.config.spark
        spark_conf = {**project.spark_storage_conf(), **conf.conf}
        if project.config.delta.engine == "spark":  # delta-spark's MERGE needs these at start
            spark_conf = {**DELTA_SESSION_CONF, **spark_conf}
        spark_conf = {**catalog_session_conf(project), **spark_conf}
        spark = build_session(master=conf.master, conf=spark_conf,
                              app_name=f"runner:{project.config.name}",
                              log_dir=str(project.root / "logs"))
        stopper.install()  # over the SIGINT handler SparkContext has just installed
        choice = engine_choice(project.config.delta.engine, spark)
        writer = make_writer(choice.engine, spark,
                             arrow_max_rows=project.config.delta.arrow_max_rows)
        writer.permit = lock.check
        report(EngineChosen(choice.engine, choice.reason,
                            missing_jars_note() if choice.classes_missing else None))
        if project.config.source.type == "kafka":  # unreachable, misconfigured: exit 2 now
            from runner.sources.kafka.preflight import check_brokers

            check_brokers(spark, project.config.source)
        names = Names(spark, project, plan, report=report)
        names.check()  # the metastore answers, no name is taken: before anything is written
        # A pending replay must read what its first attempt read (runner.sources.same_input).
        guard = ReplayGuard(checkpoint, project.config.source)
        if not full_refresh:
            guard.check_pending(report=report)
        lookups = start_lookups(spark, checkpoint, plan, engine=choice.engine,
                                broadcast_max_rows=project.config.lookups.broadcast_max_rows)
        if lookups is not None:
            cleanup.callback(lookups.close, spark)
        if full_refresh:
            reset_checkpoint(checkpoint)
            check_identity(checkpoint, pipeline_identity(project))  # the new checkpoint's
        query_id = read_query_id(checkpoint)
        fresh = query_id is None
        query_id = query_id or new_query_id()
        sinks, dead = sink_specs(plan, table_path=lambda name: str(project.table_path(name)),
                                 run_id=query_id)
        if full_refresh:
            for spec in [*sinks.values(), dead]:
                writer.drop(spec)
            report(FullRefreshDone())
        elif fresh:
            writer.refuse_foreign_tables(
                [*sinks.values(), dead],
                hint="restore the original checkpoint directory, or pass --full-refresh to "
                     "drop and recreate every table from the source")
        bp = BatchPlan(plan=plan, sinks=sinks, dead_letter=dead,
                       metadata_columns=source_metadata_columns(project.config.source.type),
                       writer=writer, parallelism=project.config.parallelism,
                       parse_only_used_fields=project.config.parse_only_used_fields,
                       park=park_policy(plan, project.config.on_model_error), lookups=lookups,
                       unreadable=guard.unreadable if guard.files_source else None)
        parked: dict[str, ParkedError] = {}

        def park(p: ParkedError) -> None:
            parked[p.model] = p
            report(parked_event(p))

        handover = prepare_handover(project, bp, query_id=query_id, rebuild=rebuild,
                                    report=report)
        tables_exist = any(is_table(project.table_path(s.name)) for s in plan.steps)
        if not full_refresh and tables_exist:  # nothing to compare on a first run
            outputs = model_output_schemas(spark, plan, project.parsed_events_columns)
            check_schema_changes([s for s in plan.steps if s.name not in handover.to_drop],
                                 lambda name: str(project.table_path(name)),
                                 output_schemas=outputs, report=report)
        if fresh:
            write_query_id(checkpoint, query_id)
        if finish_handover(spark, project, bp, handover, stop=stopper.requested,
                           report=report, on_parked=park):
            return StreamSummary(stopped_by_signal=True, parked=parked)
        names.register()  # the tables that exist now (rebuilt, backfilled, from earlier runs)
        report(PipelineStarted(plan.project, tuple(s.name for s in plan.steps), writer.engine,
                               project.config.source.type, str(checkpoint)))
        # After each batch's sinks: its ledger entry (snapshots), then maintenance when due.
        on_batch = Bookkeeper(project, bp, query_id=query_id, report=report).wrap(report)
        on_batch = names.wrap(on_batch)  # names of the tables a batch creates
        return _run_query(spark, project, bp, mode=mode, trigger=trigger, stopper=stopper,
                          on_batch=on_batch, report=report, on_progress=on_progress,
                          parked=parked, on_parked=park, guard=guard,
                          still_parked={m for m, e in handover.entries.items()
                                        if e.state == "parked"})


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


def _offset_keeper(spark: SparkSession, project: Project) -> Callable[[int], object]:
    """Kafka: at a batch's start, keep the committed batches' offsets past Spark's retention
    (runner.checkpoint.kafka_offsets), so a rebuild or backfill replays each under its own id.
    A no-op for the files source, whose own log keeps every batch's files."""
    if project.config.source.type != "kafka":
        return lambda batch_id: 0
    retain = int(spark.conf.get("spark.sql.streaming.minBatchesToRetain", "100") or 100)
    every, checkpoint = chunk_size(retain), project.checkpoint
    return lambda batch_id: keep_offsets(checkpoint, before=batch_id, every=every)


def _names_in_tables(project: Project, plan: Plan) -> set[str]:
    """The pipeline names the tables' newest commits carry in their app ids
    (``<name>.<model>.<query id>``) for this checkpoint's query id: how a checkpoint made
    before runner.pipeline.json tells a rename (runner.checkpoint.identity)."""
    query_id = read_query_id(project.checkpoint)
    if query_id is None:
        return set()
    names = set()
    for model in [*(s.name for s in plan.steps), project.config.dead_letter]:
        suffix = f".{model}.{query_id}"
        names |= {app[: -len(suffix)] for app in recent_app_ids(project.table_path(model))
                  if app.endswith(suffix)}
    return names


def pipeline_identity(project: Project) -> PipelineIdentity:
    """The name and source identity a checkpoint of this project is valid for."""
    source = project.config.source
    where = ",".join(source.topics) if source.type == "kafka" else source.path
    return PipelineIdentity(name=project.config.name, source=f"{source.type}:{where}")


def _check_warehouse(warehouse: Location) -> None:
    """Refuse up front (nothing written yet) when the warehouse is not a writable directory
    (a bucket prefix: not writable with these credentials)."""
    probe = warehouse / f".runner-write-probe-{os.getpid()}"
    try:
        warehouse.mkdir(parents=True, exist_ok=True)
        write_atomic(probe, b"")
        probe.unlink()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        if isinstance(e, (FileExistsError, NotADirectoryError)) or (
                warehouse.exists() and not warehouse.is_dir()):
            reason = "it is not a directory"
        raise ExecutionError(f"warehouse {warehouse} is not a writable directory: {reason}",
                             hint="point `warehouse:` in project.yml at a directory this user "
                                  "can write (a read-only mount, a full disk or a file in the "
                                  "way all stop it); nothing was written") from e


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


def _run_query(spark: SparkSession, project: Project, bp: BatchPlan, *,
               mode: Literal["available_now", "processing_time"], trigger: str,
               stopper: _Stopper, on_batch: Reporter, report: Reporter,
               on_progress: Callable[[dict[str, Any] | None], None],
               parked: dict[str, ParkedError], on_parked: Callable[[ParkedError], None],
               still_parked: set[str], guard: ReplayGuard) -> StreamSummary:
    summary = StreamSummary(parked=parked)
    failure: list[BaseException] = []
    batches = _Batches()
    keep = _offset_keeper(spark, project)

    def process(df: DataFrame, batch_id: int) -> None:
        batches.running = batch_id
        try:
            keep(batch_id)
            guard(batch_id)  # before any table commits it: record (or, replayed, compare) input
            result = run_batch(bp, df, batch_id, frozenset(still_parked))
            # Parked before Spark's commit-log entry: a replay of this batch parks it again.
            record_parked(project.checkpoint, result.parked)
        except BaseException as e:
            failure.append(e)
            raise
        finally:
            batches.running = None
        still_parked.update(result.parked)
        for p in result.parked.values():
            on_parked(p)
        batches.finished = batch_id
        summary.add(result)
        on_batch(BatchDone(result))

    started = time.perf_counter()
    if stopper.requested.is_set():  # a signal during start-up: stop before the first batch
        report(StopRequested("before"))
        summary.stopped_by_signal = True
        return summary
    prepare(bp)  # the per-run parse expressions, once, before batch 0
    writer = (_source_stream(spark, project).writeStream
              .queryName(f"runner_{project.config.name}")
              .option("checkpointLocation", str(project.checkpoint))
              .foreachBatch(process))
    writer = (writer.trigger(availableNow=True) if mode == "available_now"
              else writer.trigger(processingTime=trigger))
    try:
        query = writer.start()
    except Exception as e:
        raise ExecutionError(f"could not start the streaming query: {first_line(e)}") from e
    try:
        while query.isActive:
            try:
                # pyspark takes float seconds (its annotation says int)
                query.awaitTermination(0.5)  # type: ignore[arg-type]
            except StreamingQueryException:
                break  # reported below, from the batch's own error when there is one
            on_progress(query.lastProgress)
            if stopper.requested.is_set():
                report(StopRequested("in_flight"))
                batches.drain(query, project.checkpoint)
                query.stop()
                summary.stopped_by_signal = True
                break
        error = query.exception() if not summary.stopped_by_signal else None
        on_progress(query.lastProgress)
    finally:
        summary.seconds = time.perf_counter() - started
    if failure:
        cause = failure[0]
        if isinstance(cause, RunnerError):
            raise cause
        raise ExecutionError(f"batch failed: {type(cause).__name__}: {first_line(cause)}"
                             ) from cause
    if error is not None and not summary.stopped_by_signal:
        message = runner_error_in(error) or _kafka_unreachable(project, error) \
            or first_line(error)
        log = session_info(spark).log_file or "(not recorded)"
        raise ExecutionError(f"the streaming query failed: {message}", hint=f"Spark's log: {log}")
    return summary
