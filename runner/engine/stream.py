"""``runner stream``: one Structured Streaming query, one checkpoint, one ``foreachBatch``.

Start-up, in order: lock the checkpoint; check that the warehouse is a writable directory;
build the SparkSession and the Delta writer; on ``--full-refresh`` reset the checkpoint and drop
the tables; read (or mint) the checkpoint's query id, refusing a new checkpoint over tables that
another checkpoint wrote; compare each model's output columns with its existing table
(``on_schema_change``, :mod:`runner.engine.evolution`); start the query. SIGINT and SIGTERM
stop it after the batch in flight. Every refusal happens before the first batch, so nothing is
written then.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal

from ..errors import ConfigError, ExecutionError, RunnerError
from ..plan import Plan
from ..project import Project
from ..schema import source_metadata_columns
from ..sinks import SinkSpec, make_writer
from .batch import BatchPlan, BatchResult, prepare, run_batch
from .evolution import check_schema_changes, model_output_schemas
from .session import session_info
from .checkpoint import (CheckpointLock, app_id, new_query_id, read_query_id, reset_checkpoint,
                         write_query_id)

from pyspark.errors import StreamingQueryException

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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

    def add(self, result: BatchResult) -> None:
        self.batches += 1
        self.input_rows += result.input_rows
        self.dead_letters += result.dead_letters
        self.skipped_sinks += len(result.skipped)
        for model, rows in result.rows_by_model.items():
            self.rows_by_model[model] = self.rows_by_model.get(model, 0) + rows


def _sink_specs(project: Project, plan: Plan, query_id: str) -> tuple[dict[str, SinkSpec], SinkSpec]:
    sinks = {}
    for step in plan.steps:
        c = step.config
        sinks[step.name] = SinkSpec(
            model=step.name, path=str(project.table_path(step.name)),
            app_id=app_id(plan.project, step.name, query_id), materialized=c.materialized,
            unique_key=c.unique_key, merge_update=c.merge_update,
            merge_condition=c.merge_condition, partition_by=c.partition_by)
    dead = SinkSpec(model=plan.dead_letter, path=str(project.table_path(plan.dead_letter)),
                    app_id=app_id(plan.project, plan.dead_letter, query_id))
    return sinks, dead


def _source_stream(spark: "SparkSession", project: Project) -> "DataFrame":
    source = project.config.source
    if source.type == "files":
        from .source import read_files_stream

        return read_files_stream(spark, path=str(project.resolve(source.path)),
                                 max_files_per_trigger=source.max_files_per_trigger,
                                 create_missing=True)
    from .kafka_reader import read_kafka_stream

    return read_kafka_stream(
        spark, bootstrap_servers=source.bootstrap_servers, topics=list(source.topics),
        starting_offsets=source.starting_offsets,
        max_offsets_per_trigger=source.max_offsets_per_trigger,
        fail_on_data_loss=source.fail_on_data_loss,
        options={k: v.get_secret_value() for k, v in source.options.items()})


_DELTA_SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


class _Stopper:
    """SIGINT/SIGTERM set a flag; the main loop stops the query between batches."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "_Stopper":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, lambda *_: self.requested.set())
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def run_stream(project: Project, plan: Plan, *, mode: Literal["available_now", "processing_time"],
               trigger: str, full_refresh: bool = False,
               on_batch: Callable[[BatchResult], None] = lambda r: None,
               on_event: Callable[[str], None] = lambda m: None) -> StreamSummary:
    """Run the pipeline until ``available_now`` input is done, a signal, or a failure.

    Raises:
        ConfigError: a fresh checkpoint over tables written by another one (no --full-refresh).
        ExecutionError: a batch failed (names the model), or the source/sinks are unusable.
    """
    if not plan.steps:
        raise ConfigError("no models to run (all disabled or none selected)")
    checkpoint = project.checkpoint
    summary = StreamSummary()
    with CheckpointLock(checkpoint), _Stopper() as stopper:
        _check_warehouse(project.warehouse)
        from .session import build_session  # noqa: PLC0415 - pyspark loads only here

        conf = project.config.spark
        spark_conf = dict(conf.conf)
        if project.config.delta.engine == "spark":  # delta-spark's MERGE needs these at start
            spark_conf = {**_DELTA_SPARK_CONF, **spark_conf}
        spark = build_session(master=conf.master, conf=spark_conf,
                              app_name=f"runner:{project.config.name}",
                              log_dir=str(project.root / "logs"))
        writer = make_writer(project.config.delta.engine, spark,
                             arrow_max_rows=project.config.delta.arrow_max_rows)
        if full_refresh:
            reset_checkpoint(checkpoint)
        query_id = read_query_id(checkpoint)
        fresh = query_id is None
        query_id = query_id or new_query_id()
        sinks, dead = _sink_specs(project, plan, query_id)
        if full_refresh:
            for spec in [*sinks.values(), dead]:
                writer.drop(spec)
            on_event("full refresh: checkpoint reset, tables dropped")
        elif fresh:
            _refuse_foreign_tables(writer, [*sinks.values(), dead])
        tables_exist = any((project.table_path(s.name) / "_delta_log").is_dir()
                           for s in plan.steps)
        if not full_refresh and tables_exist:  # nothing to compare on a first run
            outputs = model_output_schemas(spark, plan.steps,
                                           parsed_events_ddl=_parsed_events_ddl(project, plan))
            check_schema_changes(plan.steps, lambda name: str(project.table_path(name)),
                                 output_schemas=outputs, on_event=on_event)
        if fresh:
            write_query_id(checkpoint, query_id)

        bp = BatchPlan(plan=plan, sinks=sinks, dead_letter=dead,
                       metadata_columns=tuple(source_metadata_columns(project.config.source.type)),
                       writer=writer, parallelism=project.config.parallelism,
                       parse_only_used_fields=project.config.parse_only_used_fields)
        on_event(f"pipeline {plan.project}: {len(plan.steps)} models "
                 f"({', '.join(s.name for s in plan.steps)}), engine {writer.engine}, "
                 f"source {project.config.source.type}, checkpoint {checkpoint}")
        summary = _run_query(spark, project, bp, mode=mode, trigger=trigger, stopper=stopper,
                             on_batch=on_batch, on_event=on_event)
    return summary


def _refuse_foreign_tables(writer, specs: list[SinkSpec]) -> None:  # type: ignore[no-untyped-def]
    for spec in specs:
        foreign = writer.foreign_app_ids(spec)
        if foreign:
            raise ConfigError(
                f"table {spec.path} already holds batches of another checkpoint "
                f"(app id {sorted(foreign)[0]}); a new checkpoint restarts at batch 0 and "
                "would write that data again",
                hint="restore the original checkpoint directory, or pass --full-refresh to "
                     "drop and recreate every table from the source")


def _parsed_events_ddl(project: Project, plan: Plan) -> str:
    """``parsed_events``' columns as DDL: the event schema, ``_batch_id``, source metadata."""
    return plan.schema_ddl + "".join(f", `{name}` {dtype}"
                                     for name, dtype in project.parsed_events_columns.items())


def _check_warehouse(warehouse) -> None:  # type: ignore[no-untyped-def]
    """Refuse up front (nothing written yet) when the warehouse is not a writable directory."""
    probe = warehouse / f".runner-write-probe-{os.getpid()}"
    try:
        warehouse.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        if isinstance(e, (FileExistsError, NotADirectoryError)) or (
                warehouse.exists() and not warehouse.is_dir()):
            reason = "it is not a directory"
        raise ExecutionError(f"warehouse {warehouse} is not a writable directory: {reason}",
                             hint="point `warehouse:` in project.yml at a directory this user "
                                  "can write (a read-only mount, a full disk or a file in the "
                                  "way all stop it); nothing was written") from e


def session_log(spark: "SparkSession") -> str:
    return session_info(spark).log_file or "(not recorded)"


def _run_query(spark: "SparkSession", project: Project, bp: BatchPlan, *,
               mode: Literal["available_now", "processing_time"], trigger: str,
               stopper: _Stopper, on_batch: Callable[[BatchResult], None],
               on_event: Callable[[str], None]) -> StreamSummary:
    summary = StreamSummary()
    batch_lock = threading.Lock()
    failure: list[BaseException] = []

    def process(df: "DataFrame", batch_id: int) -> None:
        with batch_lock:
            try:
                result = run_batch(bp, df, batch_id)
            except BaseException as e:
                failure.append(e)
                raise
        summary.add(result)
        on_batch(result)

    started = time.perf_counter()
    prepare(bp)  # the per-run parse expressions, once, before batch 0
    writer = (_source_stream(spark, project).writeStream
              .queryName(f"runner_{project.config.name}")
              .option("checkpointLocation", str(project.checkpoint))
              .foreachBatch(process))
    writer = (writer.trigger(availableNow=True) if mode == "available_now"
              else writer.trigger(processingTime=trigger))
    try:
        query = writer.start()
    except Exception as e:  # noqa: BLE001 - Spark reports bad triggers/sources here
        raise ExecutionError(f"could not start the streaming query: {str(e).splitlines()[0]}") from e
    try:
        while query.isActive:
            try:
                query.awaitTermination(0.5)
            except StreamingQueryException:
                break  # reported below, from the batch's own error when there is one
            if stopper.requested.is_set():
                on_event("stop requested: finishing the batch in flight")
                with batch_lock:
                    query.stop()
                summary.stopped_by_signal = True
                break
        error = query.exception() if not summary.stopped_by_signal else None
    finally:
        summary.seconds = time.perf_counter() - started
    if failure:
        cause = failure[0]
        if isinstance(cause, RunnerError):
            raise cause
        raise ExecutionError(f"batch failed: {type(cause).__name__}: {cause}") from cause
    if error is not None and not summary.stopped_by_signal:
        from .kafka_reader import extract_source_error

        message = extract_source_error(error) or str(error).strip().splitlines()[0]
        raise ExecutionError(f"the streaming query failed: {message}",
                             hint=f"Spark's log: {session_log(spark)}")
    return summary
