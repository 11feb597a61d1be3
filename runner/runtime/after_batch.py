"""What the stream does after each batch's sinks and before Spark's commit-log entry: record
the batch in the ledger (:mod:`runner.checkpoint.ledger`), then, when ``maintenance:`` in
project.yml says it is due, maintain the tables (:mod:`runner.sinks.maintenance`).

Both run inside ``foreachBatch``, between batches: no batch of this stream commits meanwhile,
which is what lets the stream's own maintenance compact merge tables. A maintenance that fails
is reported and retried at its next turn; it never fails the stream. A ledger entry that cannot
be written fails the batch (Spark replays it; every sink is then skipped).

A Kafka model has no table to probe: its entry is its topic and the last batch its writer
committed (what the writer knows after the batch's transaction: no broker is asked per batch).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from runner.checkpoint.ledger import Ledger, LedgerEntry, TopicCut, utc_now
from runner.checkpoint.lock import MAINTENANCE, checkpoint_lock
from runner.checkpoint.registry import load_registry
from runner.errors import CheckpointBusyError, RunnerError
from runner.events import (
    BatchDone,
    Event,
    MaintenanceFailed,
    MaintenanceProblem,
    MaintenanceRan,
    MaintenanceSkipped,
    Reporter,
    ignore,
)
from runner.failpoints import failpoint
from runner.sinks.maintenance import MaintenanceFailure, Target, maintain_tables
from runner.sinks.outputs import Outputs, is_kafka
from runner.sinks.tables import versions_of
from runner.storage.ops import as_location

if TYPE_CHECKING:
    from runner.project.loader import Project
    from runner.runtime.batches.batch import BatchPlan, BatchResult

__all__ = ["Bookkeeper"]


class Bookkeeper:
    """The ledger and the maintenance schedule of one ``runner stream`` run."""

    def __init__(self, project: Project, bp: BatchPlan, *, query_id: str,
                 report: Reporter = ignore) -> None:
        self.project = project
        self.query_id = query_id
        self.report = report
        self.ledger = Ledger(project.checkpoint)
        specs = [s for s in [*bp.sinks.values(), bp.dead_letter] if not is_kafka(s)]
        self.tables = {s.model: as_location(s.path) for s in specs}
        self.targets = [Target(s.model, s.path, s.app_id, s.materialized == "merge")
                        for s in specs]
        self.topics = {s.model: s for s in bp.sinks.values() if is_kafka(s)}
        self.writer = bp.writer if self.topics else None
        latest = self.ledger.latest()
        self.known: dict[str, int] = {}
        self.cuts: dict[str, TopicCut] = {}  # Kafka models: as the last entry left them
        models = {m.name for m in project.models}
        if latest is not None:  # tables this run does not write (--select) stay in the cut
            for name, version in latest.tables.items():
                if (name in self.tables or name in models) and name not in self.topics:
                    self.tables.setdefault(name, project.table_path(name))
                    if version is not None:  # (a deleted model's table leaves)
                        self.known[name] = version
            self.cuts = {m: c for m, c in latest.kafka.items()
                         if m in models and m not in self.tables}
        # Models parked when this run starts (the registry, after the start-up's catch-ups),
        # and from which batch; the batches of this run add theirs (``record``).
        self.parked = {m: e.left_at for m, e in (load_registry(project.checkpoint) or {}).items()
                       if e.state == "parked"}
        config = project.config.maintenance
        self.every_batches = config.every_batches
        self.every_seconds = config.every_minutes * 60 if config.every_minutes else None
        self._batches = 0
        self._last = time.monotonic()

    def wrap(self, report: Reporter) -> Reporter:
        """``report``, with a :class:`~runner.events.BatchDone` reported between the batch's
        ledger entry and the maintenance it makes due."""
        from runner.runtime.batches.batch import BatchResult

        def both(event: Event) -> None:
            if not (isinstance(event, BatchDone) and isinstance(event.result, BatchResult)):
                report(event)
                return
            self.record(event.result)
            report(event)
            self.maintain_if_due()
        return both

    def after_batch(self, result: BatchResult) -> None:
        """:meth:`record`, then :meth:`maintain_if_due`."""
        self.record(result)
        self.maintain_if_due()

    def record(self, result: BatchResult) -> None:
        """Record batch ``result.batch_id`` in the ledger (kept as it is on a replay)."""
        versions = versions_of(self.tables, known=self.known)
        cuts = self._topic_cuts()
        for m, p in result.parked.items():  # as record_parked keeps it: the earliest batch
            self.parked[m] = min(self.parked.get(m, p.batch_id), p.batch_id)
        parked = {m: k for m, k in self.parked.items()
                  if k <= result.batch_id and (m in versions or m in cuts)}
        self.ledger.record(LedgerEntry(result.batch_id, versions, query_id=self.query_id,
                                       written_at=utc_now(), parked=parked, kafka=cuts))
        self.known = {name: v for name, v in versions.items() if v is not None}
        self.cuts = cuts
        failpoint("batch.after_ledger", batch_id=result.batch_id)
        self._batches += 1

    def _topic_cuts(self) -> dict[str, TopicCut]:
        """Each Kafka model's topic and last committed batch, as its writer knows it (a model
        this run has not opened, parked before it, keeps what the last entry said)."""
        known = self.writer.kafka.last_batches() if isinstance(self.writer, Outputs) else {}
        cuts = dict(self.cuts)
        for m, spec in self.topics.items():
            if spec.app_id in known:
                cuts[m] = TopicCut(spec.topic, known[spec.app_id])
            else:
                cuts[m] = TopicCut(spec.topic, cuts[m].batch if m in cuts else None)
        return cuts

    def maintain_if_due(self) -> None:
        if self._due():
            self.maintain()

    def _due(self) -> bool:
        by_count = self.every_batches is not None and self._batches >= self.every_batches
        by_time = (self.every_seconds is not None
                   and time.monotonic() - self._last >= self.every_seconds)
        return by_count or by_time

    def maintain(self) -> None:
        """Maintain every table now, unless ``runner maintain`` is at it (then next turn)."""
        lock = checkpoint_lock(self.project.checkpoint, MAINTENANCE)
        try:
            lock.acquire()
        except CheckpointBusyError:
            self.report(MaintenanceSkipped(lock.holder()))
            return
        try:
            report = maintain_tables(self.project, self.targets, stream_running=True,
                                     in_stream=True)
        except (RunnerError, MaintenanceFailure, OSError) as e:
            self.report(MaintenanceFailed(str(e)))
            return
        finally:
            lock.release()
            self._batches = 0
            self._last = time.monotonic()
        self.report(MaintenanceRan(tuple((t.name, t.files_before, t.files_after)
                                         for t in report.tables), report.seconds))
        for t in report.tables:
            problems = [p for p in (t.error, t.compaction if t.compaction.startswith("failed")
                                    else None) if p]
            if problems:
                self.report(MaintenanceProblem(t.name, tuple(problems)))
