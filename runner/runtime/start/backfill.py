"""Evolving a running pipeline: backfill new models, rebuild one, note retired ones.

At start-up, before the query starts (:func:`prepare_handover`, then the schema checks, then
:func:`finish_handover`, called by ``runner stream``):

1. :func:`decide` compares the models of this run with the checkpoint's registry
   (:mod:`runner.checkpoint.registry`): a model the checkpoint has never written is *new*, one
   that sat out some runs (``enabled=false``, not selected) is *back* and missed batches
   ``left_at`` .. last committed; ``--full-refresh --select`` asks for a *rebuild*; a model
   whose SQL file is gone is *retired* (its table is left in place, and the start-up says so).
2. Check, then act: the history each backfill replays must be complete (input files still
   there, Kafka offsets still retained: :mod:`runner.runtime.start.history_check`), else the
   start-up refuses with nothing changed. The registry is saved first, then rebuilt tables leave the
   snapshot ledger and are dropped, then every model to backfill runs on the checkpoint's committed
   batches, read again from the source (:mod:`runner.sources.history`,
   :mod:`runner.sources.replay`), through the same per-batch function as the stream
   (:func:`runner.runtime.batches.batch.run_batch`) with a plan cut down to those models and their
   ancestors (computed from their logic, not read from their tables) that writes only their tables:
   no other table is touched, the dead-letter table included.
3. Then the ledger entries of the batches they wrote name their new versions
   (:mod:`runner.runtime.start.restate`), the registry marks them live and the stream goes on from
   the next batch with them.

One backfill batch per original batch, with the original batch id: an accumulating
``merge_update`` sees exactly the merges it would have seen had it existed from batch 0, and
every commit carries the application transaction ``(app id, batch id)``, so a crash anywhere
resumes after the last batch the table committed (the registry still says ``backfilling``).
A model with ``backfill=false`` starts at the next batch instead. Rows a backfilled model's
expectations quarantine are counted in the progress, not written (the dead-letter table
already holds those batches).

Failpoints (:mod:`runner.failpoints`): ``backfill.start`` (registry saved, nothing dropped or
written yet), ``backfill.after_commit:<model>`` (after each backfill batch),
``backfill.before_live`` (every batch written, registry not yet updated),
``backfill.after_live`` (registry updated, query not started); inside a backfill batch the
batch and sink points fire as in the stream, with the original batch ids.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from runner.checkpoint.ledger import TopicCut
from runner.checkpoint.registry import Entry, load_registry, save_registry
from runner.checkpoint.spark_logs import last_committed
from runner.compile.graph import ancestors
from runner.errors import ConfigError, ExecutionError
from runner.events import (
    BackfillProgress,
    BackfillResumes,
    Event,
    ModelAbsent,
    ModelJoining,
    ModelRebuilding,
    ModelRetired,
    ModelStaysParked,
    Reporter,
    StopRequested,
    ignore,
)
from runner.failpoints import failpoint
from runner.project.loader import Project
from runner.runtime.batches.batch import BatchPlan, prepare, run_batch
from runner.runtime.batches.parking import ParkedError
from runner.runtime.client.remote import new_session
from runner.runtime.start.history_check import check_history, past_batches
from runner.runtime.start.restate import forget, restate
from runner.runtime.start.topics import holds_batches, kafka_models, refuse_history_again
from runner.sinks import SinkSpec
from runner.sinks.base import app_id
from runner.sinks.tables import check_droppable
from runner.sources.history import PastBatch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BackfillProgress", "Handover", "decide", "finish_handover", "prepare_handover",
           "refuse_moved_table"]


@dataclass(frozen=True)
class Handover:
    """What the start-up does about the model set: the registry to save, and what to report."""

    entries: dict[str, Entry]
    events: tuple[Event, ...] = ()
    next_batch: int = 0
    committed: int | None = None

    @property
    def to_drop(self) -> list[str]:
        return sorted(m for m, e in self.entries.items() if e.state == "backfilling" and e.drop)


def decide(*, entries: Mapping[str, Entry] | None, run: Sequence[str], files: Collection[str],
           committed: int | None, no_backfill: Collection[str] = (),
           rebuild: Collection[str] = (), known: Collection[str] = (),
           version: Callable[[str], int | None] = lambda m: None,
           table: Callable[[str], str] = str,
           exists: Callable[[str], bool] = lambda m: True,
           topics: Mapping[str, str] | None = None) -> Handover:
    """The registry after this start-up's decisions (pure: no I/O).

    Args:
        entries: the registry, or None when the checkpoint has none yet.
        run: the models of this run; ``files``: every model with a SQL file.
        committed: the last committed batch (None: none yet).
        no_backfill: models whose config says ``backfill=false``.
        rebuild: models to drop and rebuild (``--full-refresh --select``).
        known: without a registry, the models whose tables this checkpoint wrote.
        version: a table's application-transaction version (a backfill cut short).
        table: a model's table path, for events; ``exists``: whether it holds batches (a
            table; a Kafka model's topic); ``topics``: the Kafka models' ``"topic X"``.

    Without a registry (an older checkpoint, or the file deleted as its error's hint says), the
    registry is rebuilt from the tables' own batch ids: a model of ``known`` whose table holds
    this checkpoint's batches up to ``v`` left at ``v + 1`` (it may have been live, parked,
    disabled or backfilling: only its table knows), so it catches up from there like a model
    that is back; a model whose table holds none of them is new.
    """
    nxt = 0 if committed is None else committed + 1
    legacy = entries is None
    if entries is None:
        entries = ({m: Entry("live") for m in run} if committed is None
                   else {m: Entry("absent", left_at=_next_of(version(m))) for m in known})
    d = _Decisions(dict(entries), committed=committed, next_batch=nxt, legacy=legacy,
                   topics=dict(topics or {}))
    for m in run:
        d.in_run(m, entries.get(m), rebuild=m in rebuild, no_backfill=m in no_backfill)
    for m, e in entries.items():
        if m not in run:
            d.not_in_run(m, e, gone=m not in files, exists=exists(m), version=version,
                         table=table)
    return Handover(entries=d.new, events=tuple(d.said), next_batch=nxt, committed=committed)


@dataclass
class _Decisions:
    """:func:`decide`'s registry being built (``new``) and what it says (``said``)."""

    new: dict[str, Entry]
    committed: int | None
    next_batch: int
    legacy: bool  # no registry: rebuilt from the tables' batch ids
    topics: dict[str, str] = field(default_factory=dict)  # Kafka models: "topic X"
    said: list[Event] = field(default_factory=list)

    def in_run(self, m: str, e: Entry | None, *, rebuild: bool, no_backfill: bool) -> None:
        """A model of this run: rebuilt, joining (new, back, parked before), or as it was."""
        committed, nxt = self.committed, self.next_batch
        if rebuild:
            self.new[m] = Entry("backfilling", start=0, drop=True)
            self.said.append(ModelRebuilding(m, committed))
        elif e is None or e.state in ("absent", "retired", "parked"):
            start = 0 if e is None else e.left_at
            status: Literal["new", "back", "legacy", "parked"] = (
                "new" if e is None else "legacy" if self.legacy else
                "back" if e.state != "parked" else "parked")
            joining = functools.partial(ModelJoining, m, status, start=start, committed=committed,
                                        next_batch=nxt,
                                        error=e.error if e and status == "parked" else None)
            if e is not None and e.drop:
                self.new[m] = Entry("backfilling", start=0, drop=True)
                self.said.append(joining("rebuild"))
            elif start >= nxt:
                self.new[m] = Entry("live", since=nxt)
                if e is not None and not self.legacy:
                    self.said.append(joining("live"))
            elif no_backfill:
                self.new[m] = Entry("live", since=nxt)
                self.said.append(joining("no_backfill"))
            else:
                self.new[m] = Entry("backfilling", start=start)
                self.said.append(joining("backfill"))
        elif e.state == "backfilling":
            self.said.append(BackfillResumes(m, e.drop, e.start, committed))

    def not_in_run(self, m: str, e: Entry, *, gone: bool, exists: bool,
                   version: Callable[[str], int | None], table: Callable[[str], str]) -> None:
        """A model of the registry not in this run: retired (``gone``: no SQL file), absent
        (disabled, not selected), still parked, or forgotten when it has no table."""
        if not exists and not e.drop:  # nothing to keep (or deleted by hand): forget it,
            del self.new[m]  # so that, back, it is new (a batch that gave no rows gives none)
            if gone:
                self.said.append(ModelRetired(m, None, e.left_at))
            return
        if e.state == "parked" and not gone:  # stays parked, and catches up when it is back
            self.said.append(ModelStaysParked(m, e.left_at, e.error))
            return
        if e.state == "live":
            left, drop = self.next_batch, False
        elif e.state == "backfilling":
            v = version(m)
            left = 0 if e.drop else (e.start if v is None else max(e.start, v + 1))
            drop = e.drop
        else:
            left, drop = e.left_at, e.drop
        self.new[m] = Entry("retired" if gone else "absent", left_at=left, drop=drop)
        topic = self.topics.get(m)
        self.said.append(ModelRetired(m, None if topic else table(m), left, topic) if gone
                         else ModelAbsent(m, left, topic))


def _next_of(version: int | None) -> int:
    """The first batch a table does not hold, from its application-transaction version."""
    return 0 if version is None else version + 1


def prepare_handover(project: Project, bp: BatchPlan, *, query_id: str,
                     rebuild: Collection[str] = (),
                     report: Reporter = ignore) -> Handover:
    """Decide (:func:`decide`) and save the registry; say what happens to each model that
    joins, returns, is rebuilt or leaves. No table is touched yet: :func:`finish_handover`
    drops and backfills, after the schema checks (which skip :attr:`Handover.to_drop`)."""
    checkpoint = project.checkpoint
    committed = last_committed(checkpoint)
    entries = load_registry(checkpoint)
    run = [s.name for s in bp.plan.steps]
    kafka = kafka_models(project, bp, set(entries or {}) - set(run), query_id)

    def spec(m: str) -> SinkSpec:
        return bp.sinks.get(m) or SinkSpec(model=m, path=str(project.table_path(m)),
                                           app_id=app_id(bp.plan.project, m, query_id))

    known: set[str] = set()
    if entries is None and committed is not None:  # a checkpoint older than the registry
        candidates = set(run) | ({p.name for p in project.warehouse.iterdir()
                                  if p.is_dir() and p.name.isidentifier()
                                  and p.name != bp.plan.dead_letter}
                                 if project.warehouse.is_dir() else set())
        known = {m for m in candidates if bp.writer.committed_version(spec(m)) is not None}
    handover = decide(
        entries=entries, run=run, files={m.name for m in project.models}, committed=committed,
        no_backfill={s.name for s in bp.plan.steps if not s.config.backfill},
        rebuild=rebuild, known=known, version=lambda m: bp.writer.committed_version(spec(m)),
        table=lambda m: str(project.table_path(m)),
        exists=lambda m: holds_batches(project, kafka, m),
        topics={m: f"topic {c.topic}" if c.topic else "topics" for m, c in kafka.items()})
    starts = {}  # check, then act: the history each backfill replays must be complete
    for m, e in handover.entries.items():
        if e.state == "backfilling" and m in run:
            v = None if e.drop else bp.writer.committed_version(spec(m))
            starts[m] = e.start if v is None else max(e.start, v + 1)
    check_history(project, starts, committed=committed, rebuild=handover.to_drop,
                  report=report)
    if bp.lookups is not None and starts and committed is not None:  # the pinned versions
        edges = {s.name: s.depends_on for s in bp.plan.steps}  # the backfill joins: readable
        needed = set(starts).union(*(ancestors(m, edges) for m in starts))
        views = {v for s in bp.plan.steps if s.name in needed for v in s.lookups}
        batches = range(min(starts.values()), committed + 1)
        bp.lookups.check_pinned(batches, views)
        for seed in bp.lookups.changed_seeds(batches, views):
            report(seed)
    # A table a joining model finds is its own only with proof, even with no batch committed.
    joining = [m for m in run if (entries or {}).get(m, Entry("absent")).state in
               ("absent", "retired", "parked")
               and handover.entries[m].state in ("backfilling", "live")
               and not handover.entries[m].drop]
    bp.writer.refuse_foreign_tables(
        [spec(m) for m in joining], run_id=query_id,
        hint="a table kept from before a --full-refresh (its model was disabled or not "
             "selected then): rebuild it from this checkpoint's history with `runner stream "
             "--full-refresh --select <model>`, or move the table away")
    for m in joining:
        first = (handover.next_batch if handover.entries[m].state == "live"
                 else starts.get(m, handover.entries[m].start))
        refuse_moved_table(bp, spec(m), first=first, query_id=query_id, committed=committed,
                           table=str(project.table_path(m)))
    check_droppable({m: project.table_path(m) for m in handover.to_drop})
    refuse_history_again(project, bp, joining, query_id, before=entries, after=handover.entries)
    for event in handover.events:
        report(event)
    save_registry(checkpoint, handover.entries)
    return handover


def refuse_moved_table(bp: BatchPlan, spec: SinkSpec, *, first: int, query_id: str,
                       committed: int | None, table: str) -> None:
    """Refuse a table holding this checkpoint's batches of another model (a table moved with a
    renamed model) unless the proof holds that nothing is written twice: every batch it holds
    under the other model's app id comes before ``first``, the first batch this model writes
    into it (the next batch for ``backfill=false``; the backfill's first batch otherwise).

    Raises:
        ConfigError: names the table, the other model, its batches and the way out (exit 2).
    """
    suffix = f".{query_id}"
    for other in sorted(a for a in bp.writer.foreign_app_ids(spec) if a.endswith(suffix)):
        held = bp.writer.committed_version(dataclasses.replace(spec, app_id=other))
        if held is None or held < first:
            continue
        name = other.removesuffix(suffix).removeprefix(f"{bp.plan.project}.")
        what = (f"table {table} of model {spec.model} holds batches up to {held} of model "
                f"{name} of this checkpoint (app id {other}; a table moved with a rename)")
        if committed is None or held > committed:
            raise ConfigError(
                f"{what}, but the checkpoint committed "
                + ("no batch" if committed is None else f"batches up to {committed} only")
                + f": the stream would write batch {first if committed is None else committed + 1}"
                  " into it a second time",
                hint=f"put back models/{name}.sql and the table (move {table} back to the name "
                     f"{name}), let `runner stream` finish the batch the crash left, then rename "
                     "again")
        raise ConfigError(
            f"{what}: backfilling {spec.model} from batch {first} would write batches "
            f"{first}..{held} into it a second time",
            hint=f"to keep the table's rows, give models/{spec.model}.sql "
                 "{{ config(backfill=false) }} for this start (it goes on from the next batch); "
                 "to compute them again, move the table away")


def finish_handover(spark: SparkSession, project: Project, bp: BatchPlan, handover: Handover, *,
                    stop: threading.Event | None = None,
                    report: Reporter = ignore,
                    on_parked: Callable[[ParkedError], None] = lambda p: None) -> bool:
    """Drop the tables to rebuild, backfill the models the handover left ``backfilling``,
    then mark them live. A model of ``bp.park`` whose SQL fails in a backfill batch (or whose
    ancestor's does) is parked at that batch instead (registry saved at once, ``on_parked``);
    the others go on.

    Returns:
        True when a stop was requested during the backfill (the stream must not start).

    Raises:
        ExecutionError, SourceError: a backfill batch failed, or the history is incomplete;
            what was committed stays committed and the next start-up resumes.
    """
    entries = handover.entries
    run = {s.name for s in bp.plan.steps}
    todo = {m: e.start for m, e in entries.items() if e.state == "backfilling" and m in run}
    if not todo:
        return False
    failpoint("backfill.start")
    forget(project.checkpoint, [m for m in handover.to_drop if m in run])  # before the drop
    for m in handover.to_drop:
        if m in run:
            bp.writer.drop(bp.sinks[m])
            entries[m] = entries[m].to("backfilling", drop=False)
            save_registry(project.checkpoint, entries)

    def park(p: ParkedError) -> None:
        entries[p.model] = Entry("parked", left_at=p.batch_id, error=p.text)
        save_registry(project.checkpoint, entries)
        on_parked(p)

    if handover.committed is not None and _backfill(
            spark, project, bp, todo, through=handover.committed, stop=stop, report=report,
            on_parked=park):
        return True
    if handover.committed is not None:  # the ledger names the tables' new versions
        blurred = {k for b in past_batches(project, handover.committed)
                   for k in range(b.first, b.batch_id)}
        kafka = {m for m in todo if bp.sinks[m].materialized == "kafka"}  # no table: a marker
        restate(project.checkpoint, {m: (project.table_path(m), bp.sinks[m].app_id)
                                     for m in todo if m not in kafka},
                starts=todo, through=handover.committed, blurred=blurred,
                parked={m: entries[m].left_at for m in todo if entries[m].state == "parked"},
                topics={m: TopicCut(bp.sinks[m].topic, bp.writer.committed_version(bp.sinks[m]))
                        for m in kafka})
    failpoint("backfill.before_live")
    for m in todo:
        if entries[m].state != "parked":
            entries[m] = Entry("live", since=handover.next_batch)
    save_registry(project.checkpoint, entries)
    failpoint("backfill.after_live")
    return False


def _cut(bp: BatchPlan, targets: Collection[str]) -> BatchPlan:
    """``bp`` running ``targets`` and their ancestors, writing only the targets' tables."""
    edges = {s.name: s.depends_on for s in bp.plan.steps}
    needed = set(targets).union(*(ancestors(t, edges) for t in targets))
    plan = dataclasses.replace(bp.plan, steps=tuple(s for s in bp.plan.steps if s.name in needed))
    return dataclasses.replace(bp, plan=plan, sinks={m: bp.sinks[m] for m in targets},
                               write_dead_letters=False)


def _reader(spark: SparkSession, project: Project,
            report: Reporter) -> Callable[[PastBatch], DataFrame]:
    from runner.sources.replay import KafkaHistory, read_files

    source = project.config.source
    if source.type == "files":
        return lambda batch: read_files(spark, batch)
    return KafkaHistory(spark, source, report=report).read


@dataclass
class _Totals:
    batches: int = 0
    input_rows: int = 0
    rows: dict[str, int] = field(default_factory=dict)


def _backfill(spark: SparkSession, project: Project, bp: BatchPlan, todo: Mapping[str, int], *,
              through: int, stop: threading.Event | None, report: Reporter,
              on_parked: Callable[[ParkedError], None]) -> bool:
    """Run the models of ``todo`` (model -> first batch) on batches up to ``through``; True
    when stopped by a signal."""
    resume = {}
    for m, start in todo.items():
        v = bp.writer.committed_version(bp.sinks[m])  # what a cut-short backfill wrote
        resume[m] = start if v is None else max(start, v + 1)
    pending = {m: r for m, r in resume.items() if r <= through}
    if not pending:
        return False
    session = new_session(spark)  # the batches' temp views stay out of the stream's session
    read = _reader(session, project, report)
    batches = [b for b in past_batches(project, through) if b.batch_id >= min(pending.values())]
    models = tuple(sorted(pending))
    totals, started = _Totals(), time.perf_counter()
    prepare(_cut(bp, models))
    for past in batches:
        targets = sorted(m for m, r in pending.items() if r <= past.batch_id)
        blurred = [m for m in targets if past.first < pending[m]]
        if blurred:
            raise ExecutionError(
                f"model {blurred[0]} must catch up from batch {pending[blurred[0]]}, but the "
                f"checkpoint no longer tells batches {past.first}..{past.batch_id} apart "
                "(Spark keeps the offsets of its last batches only)",
                hint=f"rebuild it from the whole history: runner stream --full-refresh "
                     f"--select {blurred[0]}; or give it backfill=false")
        if not targets:
            continue
        result = run_batch(_cut(bp, targets), read(past), past.batch_id)
        for m in targets:
            if m in result.parked:  # its SQL (or an ancestor's) failed: parked, not retried
                del pending[m]
                on_parked(result.parked[m])
        for m in targets:
            failpoint(f"backfill.after_commit:{m}", batch_id=past.batch_id)
        totals.batches += 1
        totals.input_rows += result.input_rows
        for m, n in result.rows_by_model.items():
            totals.rows[m] = totals.rows.get(m, 0) + n
        report(BackfillProgress(tuple(targets), past.batch_id, through, result.input_rows,
                                result.rows_by_model, result.skipped, result.seconds))
        if stop is not None and stop.is_set():
            report(StopRequested("backfill", past.batch_id))
            return True
    seconds = time.perf_counter() - started
    report(BackfillProgress(models, through, through, totals.input_rows, totals.rows, (),
                            seconds, batches=totals.batches, done=True))
    return False
