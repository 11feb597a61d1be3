"""``runner stream``: one Structured Streaming query, one checkpoint, one ``foreachBatch``.

:func:`run_stream` locks the checkpoint, records the run, and hands over to the start-up
(:mod:`runner.runtime.start.startup`: every check and decision before the first batch, in order),
which ends by starting the query (:mod:`runner.runtime.start.query`). SIGINT and SIGTERM stop it
after the batch in flight (or the backfill after its batch in flight). Every refusal happens
before the first batch, so nothing is written then.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import ExitStack
from typing import Literal

from runner.checkpoint.lock import checkpoint_lock
from runner.checkpoint.runs import RunRecord
from runner.compile.plan import Plan
from runner.errors import ConfigError
from runner.events import Reporter, ignore
from runner.project.loader import Project
from runner.runtime.start.query import Progress, Stopper, StreamSummary
from runner.runtime.start.startup import StartUp

__all__ = ["StreamSummary", "run_stream"]


def run_stream(project: Project, plan: Plan, *, mode: Literal["available_now", "processing_time"],
               trigger: str, full_refresh: bool = False, rebuild: Collection[str] = (),
               report: Reporter = ignore, on_progress: Progress = lambda p: None,
               ) -> StreamSummary:
    """Run the pipeline until ``available_now`` input is done, a signal, or a failure.

    ``report`` gets every event (:mod:`runner.events`: batches, backfill batches, start-up
    notes); ``on_progress`` gets Spark's ``StreamingQuery.lastProgress`` about twice a second
    while the query runs, and once at its end (repeats included: :mod:`.prometheus`).

    Before the query starts, models new to the checkpoint (and those in ``rebuild``, whose
    tables are dropped first) are backfilled from the checkpoint's history
    (:mod:`runner.runtime.start.backfill`), each batch reported as a ``BackfillProgress``.

    Raises:
        ConfigError: a fresh checkpoint over tables written by another one (no --full-refresh).
        ExecutionError: a batch failed (names the model), or the source/sinks are unusable.
    """
    if not plan.steps:
        raise ConfigError("no models to run (all disabled or none selected)")
    checkpoint = project.checkpoint
    with checkpoint_lock(checkpoint) as lock, Stopper() as stopper, RunRecord(checkpoint), \
            ExitStack() as cleanup:
        start = StartUp(project, plan, lock=lock, stopper=stopper, cleanup=cleanup,
                        full_refresh=full_refresh, rebuild=rebuild, report=report,
                        on_progress=on_progress)
        return start.run(mode=mode, trigger=trigger)
