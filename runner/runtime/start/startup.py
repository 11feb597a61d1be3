"""``runner stream``'s start-up: every check and decision before the first batch, in order.

:class:`StartUp` runs the steps its docstring lists, each a method, with the checkpoint already
locked (:func:`runner.runtime.start.stream.run_stream`). Every refusal happens before the first
batch, so nothing is written then; the refusals that need no JVM come before the session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Collection
from contextlib import ExitStack
from typing import TYPE_CHECKING, Literal

from runner.checkpoint.identity import PipelineIdentity, check_identity
from runner.checkpoint.query_id import new_query_id, read_query_id, reset_checkpoint, write_query_id
from runner.compile.plan import Plan
from runner.errors import ConfigError, ExecutionError
from runner.events import EngineChosen, FullRefreshDone, PipelineStarted, Reporter
from runner.project.event_schema import source_metadata_columns
from runner.project.kafka_outputs import KafkaOutputs
from runner.project.loader import Project
from runner.runtime.after_batch import Bookkeeper
from runner.runtime.batches.batch import BatchPlan
from runner.runtime.batches.parking import Parking, park_policy
from runner.runtime.batches.pinned_lookups import Lookups, start_lookups
from runner.runtime.batches.remote_batch import RemoteBatch
from runner.runtime.catalog import Names, catalog_session_conf
from runner.runtime.start.backfill import Handover, finish_handover, prepare_handover
from runner.runtime.start.definitions import check_definitions, record_definitions
from runner.runtime.start.evolution import check_schema_changes, model_output_schemas
from runner.runtime.start.query import Progress, Query, Stopper, StreamSummary, offset_keeper
from runner.sinks import DeltaWriter, SinkSpec, engine_choice, make_writer, sink_specs
from runner.sinks.conf import DELTA_SESSION_CONF
from runner.sinks.kafka_out import KafkaWriter, refuse_kafka_refresh
from runner.sinks.outputs import Outputs, is_kafka
from runner.sinks.ownership import refuse_tables_not_ours
from runner.sinks.tables import check_droppable, is_table, recent_app_ids
from runner.sources.same_input import ReplayGuard
from runner.spark_client import is_remote
from runner.storage.objects import SCHEMES, ObjectPath
from runner.storage.ops import Location, write_atomic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.checkpoint.lease import ObjectLease
    from runner.checkpoint.lock import CheckpointLock

__all__ = ["StartUp", "pipeline_identity"]


class StartUp:
    """The start-up of one ``runner stream``; :meth:`run` calls the steps in this order:

    1. :meth:`locations`: the warehouse is a writable directory.
    2. :meth:`identity`: the checkpoint belongs to this pipeline (a refresh: every folder it
       deletes is a table's), and every table at a model's location is this pipeline's;
       each model's definition against the one that wrote its table (:mod:`.definitions`).
    3. :meth:`session`: the SparkSession (storage, catalog and Delta settings), the signal
       handlers over Spark's.
    4. :meth:`engine`: the Delta engine and its writer, whose commits check the lock.
    5. :meth:`source_preflight`: the Kafka brokers answer.
    6. :meth:`names`: the metastore answers and no name is taken.
    7. :meth:`replay_guard`: a pending replay reads what its first attempt read.
    8. :meth:`lookups`: the sources and seeds the models join, pinned per batch.
    9. :meth:`query_id`: reset on ``--full-refresh``; read or minted.
    10. :meth:`tables`: a refresh drops them; a new checkpoint refuses tables another wrote.
    11. :meth:`handover`: new, returning, rebuilt and retired models (:mod:`.backfill`); the
        definitions recorded with the batch each model writes next.
    12. :meth:`schema_check`: each model's output columns against its table.
    13. :meth:`backfill`: models new to the checkpoint from its history; names registered.
    14. :meth:`query`: the streaming query (:mod:`runner.runtime.start.query`).
    """

    spark: SparkSession
    writer: DeltaWriter
    names_check: Names
    guard: ReplayGuard
    pinned: Lookups | None
    sinks: dict[str, SinkSpec]
    dead: SinkSpec
    bp: BatchPlan
    decided: Handover

    def __init__(self, project: Project, plan: Plan, *, lock: CheckpointLock | ObjectLease,
                 stopper: Stopper, cleanup: ExitStack, full_refresh: bool, rebuild: Collection[str],
                 report: Reporter, on_progress: Progress) -> None:
        self.project, self.plan, self.lock, self.stopper = project, plan, lock, stopper
        self.cleanup, self.full_refresh, self.rebuild = cleanup, full_refresh, rebuild
        self.report, self.on_progress = report, on_progress
        self.checkpoint = project.checkpoint
        self.parking = Parking(self.checkpoint, report)

    def run(self, *, mode: Literal["available_now", "processing_time"],
            trigger: str) -> StreamSummary:
        self.locations()
        self.identity()
        self.definitions()
        self.session()
        self.engine()
        self.source_preflight()
        self.names()
        self.replay_guard()
        self.lookups()
        self.query_id()
        self.tables()
        self.handover()
        self.schema_check()
        if self.backfill():  # a signal stopped it
            return StreamSummary(stopped_by_signal=True, parked=self.parking.this_run)
        return self.query(mode=mode, trigger=trigger)

    def locations(self) -> None:
        _check_warehouse(self.project.warehouse)

    def identity(self) -> None:
        project, plan = self.project, self.plan
        refuse_kafka_refresh(plan, full_refresh=self.full_refresh, rebuild=self.rebuild)
        tables = {name: str(project.table_path(name)) for name in
                  [*(s.name for s in plan.steps), project.config.dead_letter]}
        if not self.full_refresh:  # before the session: a refusal costs no JVM start
            check_identity(self.checkpoint, pipeline_identity(project),
                           names_in_tables=lambda: _names_in_tables(project, plan))
        else:  # check, then act: every folder the refresh deletes must be a table's
            check_droppable(tables)
        # ... and every table written (or dropped by a refresh) this pipeline's: the query id
        # read before a refresh resets it (runner.sinks.ownership)
        refuse_tables_not_ours(tables, pipeline=project.config.name,
                               run_id=read_query_id(self.checkpoint),
                               dead_letter=project.config.dead_letter)

    def definitions(self) -> None:
        if self.full_refresh:
            return  # the checkpoint and every table start again
        by_policy = check_definitions(
            self.checkpoint, self.plan, default=self.project.config.on_definition_change,
            rebuild=self.rebuild, report=self.report)
        self.rebuild = (*self.rebuild, *sorted(by_policy - set(self.rebuild)))

    def session(self) -> None:
        from runner.runtime.client.session import build_session, choose_checkpoint_manager

        project, conf = self.project, self.project.config.spark
        spark_conf = {**project.spark_storage_conf(), **conf.conf}
        if project.config.delta.engine == "spark":  # delta-spark's MERGE needs these at start
            spark_conf = {**DELTA_SESSION_CONF, **spark_conf}
        spark_conf = {**catalog_session_conf(project), **spark_conf}
        self.spark = build_session(master=conf.master, remote=conf.remote, conf=spark_conf,
                                   app_name=f"runner:{project.config.name}",
                                   log_dir=str(project.root / "logs"))
        self.stopper.install()  # over the SIGINT handler SparkContext has just installed
        checkpoint = self.checkpoint
        choose_checkpoint_manager(self.spark, on_s3=isinstance(checkpoint, ObjectPath)
                                  and SCHEMES[checkpoint.scheme] == "s3")

    def engine(self) -> None:
        from runner.runtime.client.session import missing_jars_note

        if is_remote(self.spark):
            _refuse_kafka_models_over_connect(self.plan)
        choice = engine_choice(self.project.config.delta.engine, self.spark)
        self.writer = make_writer(choice.engine, self.spark,
                                  arrow_max_rows=self.project.config.delta.arrow_max_rows)
        self.writer.permit = self.lock.check
        self.report(EngineChosen(choice.engine, choice.reason,
                                 missing_jars_note() if choice.classes_missing else None))

    def source_preflight(self) -> None:
        if self.project.config.source.type == "kafka":  # unreachable, misconfigured: exit 2
            from runner.sources.kafka.broker_check import check_brokers

            check_brokers(self.spark, self.project.config.source)

    def names(self) -> None:
        self.names_check = Names(self.spark, self.project, self.plan, report=self.report)
        self.names_check.check()  # before anything is written

    def replay_guard(self) -> None:
        # A pending replay must read what its first attempt read (runner.sources.same_input).
        self.guard = ReplayGuard(self.checkpoint, self.project.config.source)
        if not self.full_refresh:
            self.guard.check_pending(report=self.report)

    def lookups(self) -> None:
        self.pinned = start_lookups(
            self.spark, self.checkpoint, self.plan, engine=self.writer.engine,
            broadcast_max_rows=self.project.config.lookups.broadcast_max_rows)
        if self.pinned is not None:
            self.cleanup.callback(self.pinned.close, self.spark)

    def query_id(self) -> None:
        if self.full_refresh:
            reset_checkpoint(self.checkpoint)
            check_identity(self.checkpoint, pipeline_identity(self.project))  # the new one's
        query_id = read_query_id(self.checkpoint)
        self.fresh = query_id is None
        self.run_id = query_id or new_query_id()

    def tables(self) -> None:
        project, plan = self.project, self.plan
        self.sinks, self.dead = sink_specs(
            plan, table_path=lambda name: str(project.table_path(name)), run_id=self.run_id)
        if any(is_kafka(s) for s in self.sinks.values()):  # Kafka models: their producers
            kafka = KafkaWriter(project.config.kafka_outputs or KafkaOutputs())
            self.writer = Outputs(self.writer, kafka)
            self.cleanup.callback(kafka.close)
        specs = [*self.sinks.values(), self.dead]
        if self.full_refresh:
            for spec in specs:
                self.writer.drop(spec)
            self.report(FullRefreshDone())
        elif self.fresh:
            self.writer.refuse_foreign_tables(
                specs, hint="restore the original checkpoint directory, or pass "
                            "--full-refresh to drop and recreate every table from the source")
        self.bp = BatchPlan(
            plan=plan, sinks=self.sinks, dead_letter=self.dead,
            metadata_columns=source_metadata_columns(project.config.source.type),
            writer=self.writer, parallelism=project.config.parallelism,
            parse_only_used_fields=project.config.parse_only_used_fields,
            park=park_policy(plan, project.config.on_model_error), lookups=self.pinned,
            unreadable=self.guard.unreadable if self.guard.files_source else None)

    def handover(self) -> None:
        self.decided = prepare_handover(self.project, self.bp, query_id=self.run_id,
                                                 rebuild=self.rebuild, report=self.report)
        # with the registry's decisions saved: the batch each model writes next is known
        record_definitions(self.checkpoint, self.plan, rebuilt=self.rebuild,
                           full_refresh=self.full_refresh)

    def schema_check(self) -> None:
        project, plan = self.project, self.plan
        if self.full_refresh or not any(is_table(project.table_path(s.name))
                                        for s in plan.steps):
            return  # nothing to compare on a first run
        outputs = model_output_schemas(self.spark, plan, project.parsed_events_columns)
        dropped = self.decided.to_drop
        check_schema_changes([s for s in plan.steps if s.name not in dropped],
                             lambda name: str(project.table_path(name)),
                             output_schemas=outputs, report=self.report)

    def backfill(self) -> bool:
        """Backfill (returns True when a signal stopped it), then register the names."""
        if self.fresh:
            write_query_id(self.checkpoint, self.run_id)
        handover = self.decided
        if finish_handover(self.spark, self.project, self.bp, handover,
                           stop=self.stopper.requested, report=self.report,
                           on_parked=self.parking.add):
            return True
        self.parking.still |= {m for m, e in handover.entries.items() if e.state == "parked"}
        self.names_check.register()  # the tables that exist now (rebuilt, backfilled, earlier)
        return False

    def query(self, *, mode: Literal["available_now", "processing_time"],
              trigger: str) -> StreamSummary:
        plan, project = self.plan, self.project
        self.report(PipelineStarted(plan.project, tuple(s.name for s in plan.steps),
                                    self.writer.engine, project.config.source.type,
                                    str(self.checkpoint)))
        # After each batch's sinks: its ledger entry (snapshots), then maintenance when due;
        # then the names of the tables the batch created.
        remote = self._remote_batch()
        on_batch = self.report if remote is not None else Bookkeeper(
            project, self.bp, query_id=self.run_id, report=self.report).wrap(self.report)
        on_batch = self.names_check.wrap(on_batch)
        return Query(self.spark, project, self.bp, parking=self.parking, guard=self.guard,
                     stopper=self.stopper, report=self.report, on_batch=on_batch,
                     on_progress=self.on_progress, remote=remote).run(mode=mode,
                                                                      trigger=trigger)

    def _remote_batch(self) -> RemoteBatch | None:
        """Over Spark Connect, the batch function the server runs (the ledger and maintenance
        go with it: runner.runtime.batches.remote_batch); None for a classic session."""
        if not is_remote(self.spark):
            return None
        from runner.checkpoint.lock import remote_permit

        return RemoteBatch(bp=self.bp, project=self.project, query_id=self.run_id,
                           guard=self.guard, engine=self.writer.engine,
                           arrow_max_rows=self.project.config.delta.arrow_max_rows,
                           keep=offset_keeper(self.spark, self.project),
                           permit=remote_permit(self.lock), run=uuid.uuid4().hex[:16])


def _refuse_kafka_models_over_connect(plan: Plan) -> None:
    """Over Spark Connect the batch runs on the server's worker, whose writer is Delta's
    only (runner.runtime.batches.remote_batch): a Kafka model is refused before anything is
    written, never written to a table instead of its topic."""
    kafka = sorted(s.name for s in plan.steps if s.config.materialized == "kafka")
    if kafka:
        raise ConfigError(
            f"Kafka models cannot run over Spark Connect yet: {', '.join(kafka)} "
            "(materialized='kafka')",
            hint="run this pipeline with a classic session (the target's spark.master instead "
                 "of spark.remote / SPARK_REMOTE), or disable those models "
                 "(config(enabled=false)); nothing was written")


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
                             hint="point `warehouse` (the target's, else project.yml's) at a "
                                  "directory this user can write (a read-only mount, a full "
                                  "disk or a file in the way all stop it); nothing was written"
                             ) from e
