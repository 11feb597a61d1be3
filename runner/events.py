"""What ``runner stream`` reports while it runs, as typed events (as dbt-core's coded events).

Each kind of thing that happens is one frozen dataclass with typed fields; the emitters
(:mod:`runner.runtime`, :mod:`runner.sources`) build them and pass them to one
:data:`Reporter`; the words a user reads, and the ``--progress json`` records, are made from
them in :mod:`runner.console` only. This module imports nothing of the package, so every layer
can report (the one-way import rule of tests/unit/test_layout.py).

Spark's ``StreamingQuery.lastProgress`` dict, which feeds the Prometheus exporter, is not an
event: it is Spark's telemetry (polled twice a second, repeats included), not something that
happened, and travels on its own hook (:func:`runner.runtime.start.stream.run_stream`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["BackfillProgress", "BackfillResumes", "BatchDone", "BatchFacts",
           "DefinitionChanged", "EngineChosen", "Event", "FullRefreshDone", "KafkaStartUnknown",
           "MaintenanceFailed",
           "MaintenanceProblem", "MaintenanceRan", "MaintenanceSkipped", "ModelAbsent",
           "ModelJoining", "ModelParked", "ModelRebuilding", "ModelRetired", "ModelStaysParked",
           "NameNotRegistered", "OffsetsSkipped", "PipelineStarted", "ReplayWithoutOffsets",
           "Reporter", "SchemaChanged", "SeedChanged", "StopRequested", "TableRegistered",
           "event_classes", "event_type", "ignore"]


class Event:
    """The base of every event: :func:`event_type` names its kind in JSON records."""


#: Where events go: the console, a JSON printer, a test's list.
Reporter = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The reporter that drops every event (the default of the emitters)."""


def event_type(event: Event | type[Event]) -> str:
    """The ``type`` of an event's JSON record: its class name in snake case.

    >>> event_type(FullRefreshDone())
    'full_refresh_done'
    """
    cls = event if isinstance(event, type) else type(event)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def event_classes() -> list[type[Event]]:
    """Every event class, subclasses included (what the renderers must cover)."""
    found, todo = [], list(Event.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: c.__name__)


# -- start-up ----------------------------------------------------------------------------
@dataclass(frozen=True)
class EngineChosen(Event):
    """The Delta engine the stream writes with, why, and (spark chosen for want of jars)
    which jars are missing."""

    engine: str
    reason: str
    missing_jars: str | None = None


@dataclass(frozen=True)
class FullRefreshDone(Event):
    """``--full-refresh``: the checkpoint was reset and every table dropped."""


@dataclass(frozen=True)
class PipelineStarted(Event):
    """Start-up done: the query starts with these models."""

    project: str
    models: tuple[str, ...]
    engine: str
    source: str
    checkpoint: str


@dataclass(frozen=True)
class SchemaChanged(Event):
    """A model's table gained columns (``on_schema_change='append_new_columns'``)."""

    model: str
    columns: tuple[tuple[str, str], ...]  # (name, type)


@dataclass(frozen=True)
class DefinitionChanged(Event):
    """A model's definition differs from the one that wrote its table's batches up to
    ``last_batch`` (:mod:`runner.runtime.start.definitions`); ``action``: ``warn`` (the table mixes
    both from ``since``) or ``rebuild`` (it is rebuilt from the history with the new one)."""

    model: str
    last_batch: int
    since: int
    what: tuple[str, ...]
    action: str


@dataclass(frozen=True)
class SeedChanged(Event):
    """A seed's CSV changed since batches a backfill replays first ran: they join the content
    each recorded, not the edited file."""

    seed: str
    first_batch: int
    last_batch: int
    location: str


@dataclass(frozen=True)
class ReplayWithoutOffsets(Event):
    """The batch Spark replays lacks offsets the brokers no longer hold
    (``fail_on_data_loss: false``)."""

    batch_id: int
    losses: tuple[str, ...]  # one description per partition's missing range


@dataclass(frozen=True)
class KafkaStartUnknown(Event):
    """A backfill or rebuild replays batch 0 from the earliest offset the brokers hold: where
    it started is unknown for these partitions (``fail_on_data_loss: false``)."""

    verb: Literal["backfill", "rebuild"]
    models: tuple[str, ...]
    partitions: tuple[str, ...]  # "topic[partition]"


# -- the model set (runner.runtime.start.backfill.decide) -----------------------------------
@dataclass(frozen=True)
class ModelRebuilding(Event):
    """``--full-refresh --select``: the model's table is dropped and rebuilt."""

    model: str
    committed: int | None


@dataclass(frozen=True)
class ModelJoining(Event):
    """A model joins the stream: ``status`` says why it was not live (new, back after sitting
    out, its registry rebuilt from the tables, parked at ``start``), ``action`` what happens:
    its rebuild goes on, it goes live (it missed nothing), it starts at ``next_batch`` without
    the history (``backfill=false``), or it is backfilled from ``start``."""

    model: str
    status: Literal["new", "back", "legacy", "parked"]
    action: Literal["rebuild", "live", "no_backfill", "backfill"]
    start: int
    committed: int | None
    next_batch: int
    error: str | None = None  # why it was parked


@dataclass(frozen=True)
class BackfillResumes(Event):
    """A backfill (or rebuild) cut short by the last run goes on."""

    model: str
    rebuild: bool
    start: int
    committed: int | None


@dataclass(frozen=True)
class ModelRetired(Event):
    """The model's SQL file is gone; its table (``table``; None: it has none) stays, holding
    the batches before ``left_at``; a Kafka model's ``topic`` (``"topic X"``) keeps its records
    instead."""

    model: str
    table: str | None
    left_at: int
    topic: str | None = None


@dataclass(frozen=True)
class ModelStaysParked(Event):
    """A parked model is not in this run: it stays parked."""

    model: str
    batch_id: int
    error: str | None


@dataclass(frozen=True)
class ModelAbsent(Event):
    """A model is not in this run (``enabled=false``, not selected): its table (a Kafka
    model's ``topic``, ``"topic X"``) stops."""

    model: str
    left_at: int
    topic: str | None = None


# -- while running -------------------------------------------------------------------
@dataclass(frozen=True)
class ModelParked(Event):
    """A model's SQL failed (or an ancestor's): parked from ``batch_id`` on
    (the data of :class:`runner.runtime.batches.parking.ParkedError`)."""

    model: str
    batch_id: int
    error_class: str | None
    error: str  # the error class and message, or which ancestor failed
    path: str | None = None


@dataclass(frozen=True)
class BackfillProgress(Event):
    """One backfill batch done (``done=False``), or the whole backfill's totals (``done``)."""

    models: tuple[str, ...]
    batch_id: int
    through: int
    input_rows: int
    rows_by_model: Mapping[str, int]
    skipped: tuple[str, ...]
    seconds: float
    batches: int = 1
    done: bool = False


@dataclass(frozen=True)
class OffsetsSkipped(Event):
    """A replayed batch's Kafka offsets are gone (``fail_on_data_loss: false``): skipped."""

    batch_id: int
    losses: tuple[str, ...]


class _Write(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def rows(self) -> int: ...
    @property
    def skipped(self) -> bool: ...


class _Parked(Protocol):
    @property
    def text(self) -> str: ...


class BatchFacts(Protocol):
    """What :class:`BatchDone` reads of :class:`runner.runtime.batches.batch.BatchResult` (a
    protocol: this module imports nothing of the runtime)."""

    @property
    def batch_id(self) -> int: ...
    @property
    def input_rows(self) -> int: ...
    @property
    def dead_letters(self) -> int: ...
    @property
    def writes(self) -> Sequence[_Write]: ...
    @property
    def seconds(self) -> float: ...
    @property
    def expectations(self) -> Mapping[str, Mapping[str, int]]: ...
    @property
    def parked(self) -> Mapping[str, _Parked]: ...
    @property
    def skipped(self) -> tuple[str, ...]: ...
    @property
    def rows_by_model(self) -> dict[str, int]: ...


@dataclass(frozen=True)
class BatchDone(Event):
    """A micro-batch committed every sink (its :class:`~runner.runtime.batches.batch.BatchResult`).
    """

    result: BatchFacts


@dataclass(frozen=True)
class StopRequested(Event):
    """A signal: the stream stops ``before`` the first batch, after the batch ``in_flight``,
    or the ``backfill`` stops after ``batch_id`` (the next start-up resumes it)."""

    at: Literal["before", "in_flight", "backfill"]
    batch_id: int | None = None


@dataclass(frozen=True)
class TableRegistered(Event):
    """A model's table was registered in the metastore under this name."""

    model: str
    relation: str


@dataclass(frozen=True)
class NameNotRegistered(Event):
    """Mid-stream, the metastore failed: the stream goes on, the next start registers it."""

    error: str


@dataclass(frozen=True)
class MaintenanceRan(Event):
    """Maintenance (compaction, vacuum) ran from the stream."""

    tables: tuple[tuple[str, int, int], ...]  # (table, files before, files after)
    seconds: float


@dataclass(frozen=True)
class MaintenanceProblem(Event):
    """Maintenance of one table failed in part."""

    table: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
class MaintenanceSkipped(Event):
    """``runner maintain`` holds the maintenance lock: the stream's turn is skipped."""

    holder: str


@dataclass(frozen=True)
class MaintenanceFailed(Event):
    """Maintenance failed; it is tried again at its next turn."""

    error: str
