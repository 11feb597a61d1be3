"""One micro-batch: parse once, run the plan's models in DAG order, write every sink once.

:func:`run_batch` is a function of (:class:`BatchPlan`, batch DataFrame, batch id) and nothing
else: no Jinja, no file reads, no ambient state. It is idempotent on the batch id because every
sink is (see :mod:`runner.sinks`): a replayed batch skips the sinks that already committed it.

No avoidable passes over the batch:

- With ``parse_only_used_fields: true`` in project.yml, the parse reads only the event fields
  the models use (``Plan.used_fields``, see :mod:`runner.runtime.batches.parse`). Off by default:
  then every declared field is type-checked on every record, as the dead-letter contract says.
- The source's metadata columns (``_source_file``, or the Kafka ones) are cached for dead rows
  only when no model can read them (no model SQL names one or uses ``*``: ``Step.reads``):
  the dead-letter table needs them, no model would see them.
- The parsed frame is persisted as soon as one model reads ``parsed_events``: the search for
  dead letters scans every record too, so the batch is read at least twice
  (:func:`should_persist`). A model read by other models (``ref``) is persisted too.
- No Spark action runs just to count: the job that parses the batch observes the record
  count and the dead count as it goes (``DataFrame.observe``), and the rows each sink wrote
  come from the sink (Parquet footers, or the Arrow table of a merge).
- The parse runs first, alone, as one job: a ``noop`` write of the persisted frame fills the
  cache in parallel tasks and counts the batch (the models' frames are built meanwhile:
  analysis is driver work and reads no data). Dead letters are written only when there are
  some (usually few: the writer sends them through Arrow, unless their raw text passes
  :data:`DEAD_LETTER_ARROW_MAX_BYTES`); a batch without any pays neither
  for a write job nor for building the dead-letter reasons. Then the models are written in
  parallel (a bounded thread pool of ``parallelism`` threads), from the cache, with the
  batch's size as a hint to the writer (the ``rs`` engine sends tiny batches through Arrow,
  see :mod:`runner.sinks.rs`). The writes wait for the parse: started with it, their tasks
  would wait on the same cache blocks while the parse ran, and the writers would not know the
  batch's size. (Without a persist, i.e. no model reads ``parsed_events``, the dead-letter
  write is the one pass and counts instead; on a replay that skips it, a ``count()`` does.)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from runner.compile.graph import descendants
from runner.compile.plan import Plan, Step
from runner.compile.reads import PARSED_EVENTS
from runner.errors import (
    DuplicateKeyError,
    ExecutionError,
    KafkaRecordError,
    RunnerError,
    SinkError,
    StorageError,
)
from runner.failpoints import failpoint
from runner.runtime.batches.dead_letters import DEAD_LETTER_ARROW_MAX_BYTES, DeadLetters
from runner.runtime.batches.expectations import (
    ExpectationOutcome,
    apply_expectations,
    expectation_failure,
)
from runner.runtime.batches.observation import ready_metrics
from runner.runtime.batches.parking import (
    ModelFailure,
    ParkedError,
    error_class,
    model_failure,
    parked_with,
)
from runner.runtime.batches.parse import parse_batch, prepare_parse
from runner.runtime.batches.pinned_lookups import Lookups
from runner.runtime.batches.sql_guard import checked_query
from runner.runtime.client.remote import conf_set_by_user, describe_jobs
from runner.sinks import DeltaWriter, SinkSpec, WriteResult
from runner.spark_errors import first_line, is_storage_failure, root_cause

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CACHE_COMPRESSION", "BatchPlan", "BatchResult", "persisted_models", "prepare",
           "run_batch", "should_persist", "uncompressed_batch_cache"]


@dataclass(frozen=True)
class BatchPlan:
    """Everything a batch needs, fixed at start: the compiled plan and where each sink goes."""

    plan: Plan
    sinks: Mapping[str, SinkSpec]  # model name -> spec (a step without one: computed, not written)
    dead_letter: SinkSpec
    metadata_columns: Mapping[str, str]  # the source's, name -> Spark type, in table order
    writer: DeltaWriter
    parallelism: int = 4
    parse_only_used_fields: bool = False  # project.yml: prune the parse to Plan.used_fields
    # A backfill (runner.runtime.start.backfill) runs a model and its ancestors on past batches:
    # only the steps with a sink are written, and the dead-letter table (which holds those batches
    # already) is left alone.
    write_dead_letters: bool = True
    # The models parked (batches/parking.py) when their own SQL fails, rather than failing the
    # batch: on_model_error 'park' (project.yml, or the model's config). Empty: all halt.
    park: frozenset[str] = frozenset()
    # The sources and seeds the models join, pinned per batch (batches/pinned_lookups.py).
    lookups: Lookups | None = None
    # The files source: batch id -> (file URI, reason) for each file of the batch that cannot
    # be read whole (runner.sources.files.unreadable_files): one dead letter each.
    unreadable: Callable[[int], Sequence[tuple[str, str]]] | None = None

    @property
    def parse_fields(self) -> tuple[str, ...] | None:
        """The event fields to parse: the models' (pruned parse) or None (every field)."""
        return self.plan.used_fields if self.parse_only_used_fields else None

    @property
    def models_read_metadata(self) -> bool:
        """False only when it is certain that no model reads a source metadata column."""
        names = frozenset(self.metadata_columns)
        return any(s.reads.may_read(names) for s in self.plan.steps)


@dataclass(frozen=True)
class BatchResult:
    """What one batch did: the progress line and the final summary are made from these."""

    batch_id: int
    input_rows: int
    dead_letters: int
    writes: tuple[WriteResult, ...]
    seconds: float
    # model -> expectation name -> rows that violated it (models whose counts are known)
    expectations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # models parked by this batch (they failed, or an ancestor did): not written from it on
    parked: Mapping[str, ParkedError] = field(default_factory=dict)

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(w.model for w in self.writes if w.skipped)

    @property
    def rows_by_model(self) -> dict[str, int]:
        return {w.model: w.rows for w in self.writes}


def should_persist(plan: Plan) -> bool:
    """Whether to persist the parsed batch: yes as soon as one model reads ``parsed_events``.

    The search for dead letters scans every record, so with one reading model the batch is
    read twice already; without a persist each read parses it again (and re-reads the source).
    ``bench.persist_bench --case parsed`` compares the two (docs/PERFORMANCE.md).
    """
    return any(s.reads.parsed_events for s in plan.steps)


def persisted_models(plan: Plan) -> frozenset[str]:
    """The models whose rows are read twice in a batch, so computed once and persisted: those
    other models ``ref``, and those with a quarantine expectation (their kept rows and their
    quarantined rows are two filters of one frame)."""
    referenced = {d for s in plan.steps for d in s.depends_on}
    return frozenset(s.name for s in plan.steps if s.name in referenced or any(
        e.on_violation == "quarantine" for e in s.config.expectations))


def _write(writer: DeltaWriter, spec: SinkSpec, df: DataFrame, batch_id: int,
           rows_hint: int | None = None, *, is_model: bool = True,
           step: Step | None = None) -> WriteResult:
    try:
        describe_jobs(df.sparkSession, f"runner: {spec.model} batch {batch_id}")
        return writer.write(spec, df, batch_id, rows_hint=rows_hint)
    except StorageError as e:  # the store failed (obstore, delta-rs): the sink's failure
        raise SinkError(f"table {spec.path} could not be written in batch {batch_id}: "
                        f"{e.strerror}",
                        hint="fix the storage (endpoint, credentials, bucket), then restart: "
                             "the batch is replayed, committed tables are skipped") from e
    except RunnerError:
        raise
    except Exception as e:  # a runtime failure surfaces at the write (Spark is lazy)
        cause = root_cause(e)
        if is_storage_failure(e):
            raise SinkError(f"table {spec.path} could not be written in batch {batch_id}: "
                            f"{cause}",
                            hint="fix the storage (mount, permissions, space), then restart: "
                                 "the batch is replayed, committed tables are skipped") from e
        if not is_model:
            raise ExecutionError(
                f"the dead-letter table {spec.path} failed in batch {batch_id}: {cause}",
                hint="this write also computes the rows that models quarantine by expectation: "
                     "check those models, then restart (the batch is replayed)") from e
        raise model_failure(spec.model, e, cause, batch_id=batch_id,
                            path=step.path if step else None, step=step) from e


def prepare(bp: BatchPlan) -> None:
    """Build the run's parse expressions once, before the streaming query starts.

    Every batch reuses them (:func:`parse_batch` caches them per schema). Built here, their
    cost (several hundred py4j calls on a cold JVM, docs/PERFORMANCE.md) is paid at start-up
    rather than in batch 0, and a schema that clashes with the metadata columns is reported
    before the query starts. When batches will be cached, the session caches uncompressed
    (:func:`uncompressed_batch_cache`). Nothing is computed or written; needs the active
    SparkSession.

    Raises:
        ConfigError: the schema is invalid or clashes with a metadata column (as batch 0 would).
    """
    prepare_parse(bp.plan.schema_ddl, metadata_columns=tuple(bp.metadata_columns),
                  fields=bp.parse_fields, valid_metadata=bp.models_read_metadata)
    if should_persist(bp.plan) or persisted_models(bp.plan):
        from pyspark.sql import SparkSession

        if (spark := SparkSession.getActiveSession()) is not None:
            uncompressed_batch_cache(spark)


#: Spark's switch for compressing cached (persisted) DataFrames; true by default.
CACHE_COMPRESSION = "spark.sql.inMemoryColumnarStorage.compressed"


def uncompressed_batch_cache(spark: SparkSession) -> bool:
    """Cache batches uncompressed, unless project.yml's ``spark.conf`` sets
    :data:`CACHE_COMPRESSION` itself; returns whether it changed the session.

    A batch's cache lives for one batch and is read a few times: building the compression
    (dictionary and run-length encodings, each string column scanned for its statistics) costs
    more than it saves; the price is more cache memory while the batch runs
    (``bench.parse_profile``: ``fill:runner`` against ``fill:runner-uncompressed``).
    """
    if conf_set_by_user(spark, CACHE_COMPRESSION):
        return False  # the project's own choice
    spark.conf.set(CACHE_COMPRESSION, "false")
    return True


def _fill(frame: DataFrame, batch_id: int) -> None:
    """Compute ``frame`` (persisted: this fills the cache) with no output but its metrics."""
    describe_jobs(frame.sparkSession, f"runner: parse batch {batch_id}")
    try:
        frame.write.format("noop").mode("overwrite").save()
    except Exception as e:  # a runtime failure of the parse itself (Spark is lazy)
        raise ExecutionError(f"parsing batch {batch_id} failed: {root_cause(e)}",
                             hint="check the source's records and the schema in project.yml, "
                                  "then restart (the batch is replayed)") from e


def run_batch(bp: BatchPlan, raw: DataFrame, batch_id: int,
              parked: Collection[str] = ()) -> BatchResult:
    """Process one micro-batch (``raw``: ``value`` plus source metadata columns).

    ``parked``: models parked before this batch (and their descendants): not run. A model of
    ``bp.park`` whose own SQL fails is parked by this batch (:attr:`BatchResult.parked`)
    rather than failing it. The steps, in order, are :class:`_Batch`'s methods.

    Raises:
        ExecutionError: a model (not parkable) or a sink failed; sinks that committed stay
            committed and are skipped when Spark replays the batch.
    """
    started = time.perf_counter()
    failpoint("batch.start", batch_id=batch_id)  # for crash tests: after batch_id - 1's commit log
    batch = _Batch(bp, raw, batch_id, parked)
    try:
        batch.pin_inputs()
        batch.parse()
        batch.model_frames()
        batch.count()
        batch.write_all()
        failpoint("batch.after_sinks", batch_id=batch_id)
    finally:
        batch.close()
    return batch.result(time.perf_counter() - started)


class _Batch:
    """One batch's steps, run in this order by :func:`run_batch`:

    1. :meth:`pin_inputs`: the sources and seeds the models join, pinned (recorded) before any
       table commits the batch; the files the source cannot read whole, listed before Spark
       reads them.
    2. :meth:`parse`: parse once; persisted as soon as a model reads ``parsed_events``, its job
       (filling the cache, counting) started in the pool while the models' frames are built.
    3. :meth:`model_frames`: every model's frame in dependency order, with its expectations;
       a parkable model whose SQL does not analyse is parked with its descendants.
    4. :meth:`count`: the parse's counts and the dead letters (without the cache, the
       dead-letter write is the counting pass).
    5. :meth:`write_all`: the dead letters and every model, in parallel, from the cache; the
       write failures that are their model's own park it, any other fails the batch.
    """

    def __init__(self, bp: BatchPlan, raw: DataFrame, batch_id: int,
                 parked: Collection[str]) -> None:
        from pyspark.sql import Observation

        self.bp, self.raw, self.batch_id = bp, raw, batch_id
        self.spark = raw.sparkSession  # the batch's own session: its temp views are private
        self.parked_before = frozenset(parked)
        self.edges = {s.name: s.depends_on for s in bp.plan.steps}
        self.skip = set(parked).union(*(descendants(m, self.edges) for m in parked))
        self.own: dict[str, ParkedError] = {}  # parked by this batch
        self.covered: set[str] = set()  # parked by this batch, with their descendants
        self.counts = Observation(f"runner_batch_{batch_id}_{uuid.uuid4().hex}")
        self.pool = ThreadPoolExecutor(max_workers=bp.parallelism,
                                       thread_name_prefix=f"batch{batch_id}")
        self.cached: list[DataFrame] = []
        self.unreadable: Sequence[tuple[str, str]] = ()
        self.frames: dict[str, DataFrame] = {}
        self.outcomes: dict[str, ExpectationOutcome] = {}
        self.quarantined: list[DataFrame] = []
        self.results: dict[str, WriteResult] = {}
        self.observed: Mapping[str, int | None] = {}

    def pin_inputs(self) -> None:
        bp = self.bp
        if bp.lookups is not None:
            bp.lookups.register(self.spark, self.batch_id, bp.plan)
        if bp.unreadable is not None and bp.write_dead_letters:
            self.unreadable = bp.unreadable(self.batch_id)

    def parse(self) -> None:
        bp = self.bp
        self.parsed = parse_batch(self.raw, schema_ddl=bp.plan.schema_ddl,
                                  batch_id=self.batch_id,
                                  metadata_columns=tuple(bp.metadata_columns),
                                  fields=bp.parse_fields, valid_metadata=bp.models_read_metadata)
        self.persist = should_persist(bp.plan)
        self.filled: Future[None] | None = None
        if self.persist:
            self.parsed.persist()  # valid rows and dead letters are both filters of this frame
            self.cached.append(self.parsed.frame)
        self.parsed.valid.createOrReplaceTempView(PARSED_EVENTS)
        if self.persist:  # analysing the models' frames meanwhile is driver work, no data
            self.filled = self.pool.submit(_fill, self.parsed.counting(self.counts),
                                           self.batch_id)

    def model_frames(self) -> None:
        bp, persisted = self.bp, persisted_models(self.bp.plan)
        for step in bp.plan.steps:  # dependency order: a ref'd view exists before its reader
            if step.name in self.skip:
                continue
            try:
                df = self.spark.sql(checked_query(self.spark, step.sql))  # batches/sql_guard.py
            except Exception as e:  # analysis errors (the plan was linted, but be explicit)
                failed = model_failure(step.name, e, first_line(e), batch_id=self.batch_id,
                                       path=step.path, step=step)
                if step.name not in bp.park or not isinstance(failed, ModelFailure):
                    raise failed from e
                self.own[step.name] = failed.parked(self.batch_id)
                self.skip |= descendants(step.name, self.edges)
                continue
            if step.name in persisted:
                df = df.persist()
                self.cached.append(df)
            outcome = apply_expectations(df, step, batch_id=self.batch_id,
                                         metadata_columns=bp.metadata_columns)
            if outcome.quarantined is not None:  # same commit as the parse's dead letters
                self.quarantined.append(outcome.quarantined)
            self.outcomes[step.name] = outcome
            outcome.kept.createOrReplaceTempView(step.name)  # refs see the kept rows only
            self.frames[step.name] = outcome.kept

    def count(self) -> None:
        bp, parsed = self.bp, self.parsed
        if self.filled is not None:
            self.filled.result()
            observed = self.counts.get
            dead_hint: int | None = observed["dead"]
            if (observed["dead_bytes"] or 0) > DEAD_LETTER_ARROW_MAX_BYTES:
                dead_hint = None  # too big for the driver: the writer goes Spark-native
            self.letters = DeadLetters(self.spark, bp.metadata_columns,
                                       (lambda: parsed.dead) if observed["dead"] else None,
                                       dead_hint, self.quarantined, self.unreadable,
                                       self.batch_id)
            self.observed = observed
            return
        # No model reads parsed_events: the dead-letter write is the one pass, counting.
        counted_dead = parsed.dead_of(parsed.counting(self.counts))
        self.letters = DeadLetters(self.spark, bp.metadata_columns, lambda: counted_dead, None,
                                   self.quarantined, self.unreadable, self.batch_id)
        if self.letters.any and bp.write_dead_letters:
            self._write_dead_letters()
        ready = ready_metrics(self.counts)
        if ready is None:  # the dead-letter sink was skipped (a replay): count here,
            counted_dead.count()  # through the observed branch: fills the observation
            ready = self.counts.get
        self.observed = ready

    def write_all(self) -> None:
        bp, batch_id = self.bp, self.batch_id
        rows_hint = int(self.observed["rows"] or 0) - int(self.observed["dead"] or 0)
        futures = {}
        # The dead letters (their frame built in the pool too: its reason expression is large)
        # commit alongside the models (not a model: never parked, its error is raised).
        if self.letters.any and bp.write_dead_letters and self.persist:
            futures[bp.dead_letter.model] = self.pool.submit(self._write_dead_letters)
        futures.update({name: self.pool.submit(_write, bp.writer, bp.sinks[name], df, batch_id,
                                               rows_hint, step=bp.plan.step(name))
                        for name, df in self.frames.items() if name in bp.sinks})
        raised: dict[str, BaseException] = {}
        for name, future in futures.items():
            try:
                self.results[name] = future.result()
            except BaseException as e:  # noqa: BLE001 - collected, the first is raised
                raised[name] = e
        self.results.pop(bp.dead_letter.model, None)  # the batch reports the models' writes
        self.own.update(_parkable(bp, raised, batch_id))
        self.covered = set(self.own).union(*(descendants(m, self.edges) for m in self.own))
        errors = [e for name, e in raised.items() if name not in self.covered]
        if errors:
            failed = next((f for f in map(expectation_failure, errors) if f is not None), None)
            if failed is not None:  # a 'fail' expectation: name the model and expectation
                raise failed from errors[0]
            raise errors[0]

    def _write_dead_letters(self) -> WriteResult:
        """The dead letters' frame is built here, in the thread that writes it."""
        dead, hint = self.letters.frame()
        return _write(self.bp.writer, self.bp.dead_letter, dead, self.batch_id, hint,
                      is_model=False)

    def close(self) -> None:
        self.pool.shutdown(wait=True)  # a job still running (a failed batch) ends first
        for df in self.cached:
            df.unpersist()

    def result(self, seconds: float) -> BatchResult:
        violations = {name: o.counts() for name, o in self.outcomes.items()
                      if o.expectations and name not in self.covered}
        # dead letters: the parse's, plus the rows models quarantined (None: a skipped replay)
        quarantined = sum(o.quarantined_rows() or 0 for name, o in self.outcomes.items()
                          if name not in self.covered)
        return BatchResult(batch_id=self.batch_id, input_rows=int(self.observed["rows"] or 0),
                           dead_letters=int(self.observed["dead"] or 0) + quarantined,
                           writes=tuple(self.results.values()), seconds=seconds,
                           expectations={m: c for m, c in violations.items() if c is not None},
                           parked=parked_with(self.bp.plan, self.own, skip=self.parked_before))


def _parkable(bp: BatchPlan, raised: Mapping[str, BaseException],
              batch_id: int) -> dict[str, ParkedError]:
    """The write failures that are their model's own (parkable, see
    :mod:`runner.runtime.batches.parking`): not a sink's, not a 'fail' expectation's."""
    out = {}
    for name, e in raised.items():
        if name not in bp.park or expectation_failure(e) is not None:
            continue
        if isinstance(e, ModelFailure):
            out[name] = e.parked(batch_id)
        elif isinstance(e, (DuplicateKeyError, KafkaRecordError)):  # the model's own records
            cls = e.error_class if isinstance(e, KafkaRecordError) else error_class(e)
            out[name] = ParkedError(name, batch_id, cls, first_line(e.message),
                                    bp.plan.step(name).path)
    return out
