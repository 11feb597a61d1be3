"""What a test passes as ``run_stream``'s reporter: it keeps every event, by type."""

from __future__ import annotations

from typing import TypeVar

from runner.events import BackfillProgress, BatchDone, Event, Reporter
from runner.runtime.batches.batch import BatchResult

E = TypeVar("E", bound=Event)


class Recorder(list[Event]):
    """A :data:`runner.events.Reporter` that keeps the events in order."""

    def __call__(self, event: Event) -> None:
        self.append(event)

    def of(self, cls: type[E]) -> list[E]:
        """The events of one class, in order."""
        return [e for e in self if isinstance(e, cls)]

    @property
    def batches(self) -> list[BatchResult]:
        """The stream's finished batches (:class:`runner.events.BatchDone`)."""
        return [e.result for e in self.of(BatchDone) if isinstance(e.result, BatchResult)]

    @property
    def backfill(self) -> list[BackfillProgress]:
        return self.of(BackfillProgress)


def results_into(batches: list[BatchResult]) -> Reporter:
    """A reporter appending each finished batch's result to ``batches`` (others dropped)."""
    def report(event: Event) -> None:
        if isinstance(event, BatchDone) and isinstance(event.result, BatchResult):
            batches.append(event.result)
    return report
