"""Consistent multi-table snapshots: the pipeline's tables as of one batch.

``snapshot(project_dir)`` names, for the latest batch complete in every table (or batch
``N``), each table's path and the Delta version that holds exactly the batches up to it (from
the batch ledger, :mod:`runner.checkpoint.ledger`). Reading every table at its version is a
consistent cut: no table shows a batch that another does not. Any Delta reader can time
travel by version (docs/SNAPSHOTS.md has recipes for delta-rs, Polars, DuckDB and Spark)::

    snap = runner.snapshot("path/to/project")
    logs = snap.delta_table("request_logs")  # at its version, with the location's options

No Spark, no table opened: one directory listing and two small file reads (the entry and the
model registry), plus, for a table that lags, its commit files back to its last write.

The rule: the batch a snapshot names is complete in every table it lists **unmarked**. A table
that lags behind it is listed with ``lag`` (why) and ``last_batch`` (the last batch its version
holds: it holds exactly the batches up to that one), and the cut is consistent for every other
table. A table lags when its model sat out the batches after its last one
(:func:`lagging`, from the checkpoint's model registry, :mod:`runner.checkpoint.registry`):

- parked (its SQL failed, ``on_model_error: park``) since batch k, as the batch's ledger entry
  or the registry says: also ``parked_since``: k;
- not selected in the runs since (``runner stream --select``), or disabled (``enabled=false``);
- removed (its SQL file is gone) while its table remains;
- back, or new, and still being backfilled (a new model's table is listed with ``"version":
  null``: the cut holds none of its batches yet).

Each lasts until the model catches up: the catch-up restates the entries it covers
(:mod:`runner.runtime.start.restate`), which then name the version holding exactly their batches.
A registry that cannot be read makes the snapshot refuse (it could not tell which tables lag).

Kafka models (``materialized='kafka'``) have no table and no version: they are listed apart,
under ``topics`` (JSON ``"topics": {"orders_out": {"topic": "orders-enriched", "batch": 41}}``),
so that a reader opening every entry of ``tables`` as a Delta table never meets a topic.
``batch`` is the last batch committed to the topic at that cut (its marker,
:mod:`runner.sinks.kafka_markers`, recorded in the ledger entry): the same rule holds, a topic
listed unmarked holds the snapshot's batch; one that does not (parked, left out, being
backfilled) is marked with ``lag`` like a table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.checkpoint.ledger import Ledger, LedgerEntry, TopicCut
from runner.checkpoint.query_id import read_query_id
from runner.checkpoint.registry import Entry, load_registry
from runner.errors import ConfigError, ExecutionError, RunnerError, StorageError
from runner.project.loader import Project, load_project
from runner.sinks.base import app_id
from runner.sinks.tables import last_batch_at

if TYPE_CHECKING:
    from runner.sinks.inspect import DeltaTable

__all__ = ["Lag", "Snapshot", "TableVersion", "TopicVersion", "kafka_models", "lagging",
           "snapshot", "snapshot_of"]


@dataclass(frozen=True)
class TableVersion:
    """One table of a snapshot: where it is, and the version to read (None: no table yet)."""

    path: str
    version: int | None
    parked_since: int | None = None  # parked from this batch: the version holds batches before
    # Set when the table lags behind the snapshot's batch: why, and the last batch its version
    # holds (None: none); unset, the version holds exactly the batches up to the snapshot's.
    lag: str | None = None
    last_batch: int | None = None


@dataclass(frozen=True)
class TopicVersion:
    """One Kafka model of a snapshot: its topic (None: routed by a ``topic`` column) and the
    last batch committed to it at the cut (None: none); ``lag`` and ``parked_since`` as for a
    table."""

    topic: str | None
    batch: int | None
    parked_since: int | None = None
    lag: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "batch": self.batch,
                **({"parked_since": self.parked_since} if self.parked_since is not None else {}),
                **({"lag": self.lag} if self.lag is not None else {})}


@dataclass(frozen=True)
class Lag:
    """A table behind a snapshot's batch: its version holds exactly the batches up to
    ``last_batch`` (None: no batch), for ``reason``."""

    last_batch: int | None
    reason: str
    parked_since: int | None = None


@dataclass(frozen=True)
class Snapshot:
    """Every table of the pipeline as of batch ``batch_id``."""

    batch_id: int
    tables: Mapping[str, TableVersion] = field(hash=False)
    written_at: str | None = None
    #: the Kafka models: no table, no version (see the module docstring)
    topics: Mapping[str, TopicVersion] = field(default_factory=dict, hash=False)

    def path(self, table: str) -> str:
        return self._table(table).path

    def version(self, table: str) -> int | None:
        return self._table(table).version

    def delta_table(self, table: str) -> DeltaTable | None:
        """The table opened at its snapshot version with delta-rs (None: no table yet)."""
        from runner.sinks.inspect import open_table

        t = self._table(table)
        return None if t.version is None else open_table(t.path, t.version)

    @property
    def lagging(self) -> dict[str, TableVersion]:
        """The tables behind ``batch_id`` (marked with ``lag`` and ``last_batch``)."""
        return {name: t for name, t in self.tables.items() if t.lag is not None}

    def to_dict(self) -> dict[str, Any]:
        """``{"batch_id": N, "tables": {name: {"path": ..., "version": V}}}``; a table that
        lags also has ``"lag"`` (why) and ``"last_batch"``, and a parked one ``"parked_since"``;
        with Kafka models, ``"topics": {name: {"topic": ..., "batch": B}}`` too."""
        doc: dict[str, Any] = {
            "batch_id": self.batch_id,
            "tables": {name: {"path": t.path, "version": t.version,
                              **({"parked_since": t.parked_since}
                                 if t.parked_since is not None else {}),
                              **({"lag": t.lag, "last_batch": t.last_batch}
                                 if t.lag is not None else {})}
                       for name, t in self.tables.items()}}
        if self.topics:
            doc["topics"] = {name: t.to_dict() for name, t in self.topics.items()}
        return doc

    def _table(self, table: str) -> TableVersion:
        try:
            return self.tables[table]
        except KeyError:
            from runner.errors import did_you_mean

            if table in self.topics:
                raise ConfigError(f"'{table}' is a Kafka model (topic "
                                  f"{self.topics[table].topic or 'per row'}), not a table: "
                                  "a topic has no version to read",
                                  hint="read the topic with isolation.level=read_committed"
                                  ) from None
            raise ConfigError(f"no table '{table}' in the snapshot of batch {self.batch_id}"
                              + did_you_mean(table, self.tables)) from None


def snapshot(project_dir: str | os.PathLike[str] = ".", batch: int | None = None) -> Snapshot:
    """The latest consistent snapshot of a project's tables (or the one of batch ``batch``).

    Raises:
        ConfigError: no project there.
        ExecutionError: no batch is complete yet, batch ``batch`` is not retained, or the
            checkpoint's model registry cannot be read (which tables lag is then unknown).
    """
    return snapshot_of(load_project(project_dir), batch=batch)


def snapshot_of(project: Project, *, batch: int | None = None) -> Snapshot:
    """:func:`snapshot` for a loaded project.

    The model registry is read before and after the ledger entry, and the two reads must agree
    (else read again): a start-up that takes a model out saves the registry before any entry
    leaves the model's table behind, and one that brings it back restates the entries before
    the registry says so; so an entry read between two equal registries is judged right.
    """
    for _ in range(5):
        before = _registry(project)
        entry = _entry(project, batch)
        registry = _registry(project)
        if registry == before:
            return _from_entry(project, entry, registry)
    raise ExecutionError("no snapshot: the checkpoint's model registry changed at every read "
                         "(a start-up is changing which models run)",
                         hint="run `runner snapshot` again once the stream has started")


def _registry(project: Project) -> dict[str, Entry]:
    try:
        return load_registry(project.checkpoint) or {}
    except StorageError:
        raise  # the store failed, not the registry: the location and cause, exit 74
    except RunnerError as e:
        raise ExecutionError(f"no snapshot: {e}", hint="which tables lag behind a batch is "
                             "read from the model registry; restore it, or run `runner "
                             "stream` once (its start-up rebuilds a missing one)") from e


def _entry(project: Project, batch: int | None) -> LedgerEntry:
    ledger = Ledger(project.checkpoint)
    ids = ledger.batch_ids()
    if not ids:
        raise ExecutionError(f"no batch has completed in every table yet (no ledger entries "
                             f"under {ledger.folder})",
                             hint="run `runner stream`; a snapshot exists once a batch has "
                                  "committed every table")
    wanted = ids[-1] if batch is None else batch
    entry = ledger.get(wanted)
    if entry is None:
        if wanted < ids[0]:
            raise ExecutionError(f"batch {wanted} is no longer retained (the oldest retained "
                                 f"batch is {ids[0]}; `runner maintain` vacuums older "
                                 "versions)",
                                 hint="raise maintenance.keep_batches in project.yml to keep "
                                      "more batches readable")
        raise ExecutionError(f"batch {wanted} is not complete in every table (the latest "
                             f"complete batch is {ids[-1]})")
    return entry


def _from_entry(project: Project, entry: LedgerEntry, registry: Mapping[str, Entry]
                ) -> Snapshot:
    lags = lagging(project, entry, registry)
    cuts = dict(entry.kafka)
    new = [name for name in lags if name not in entry.tables and name not in cuts]
    kafka = kafka_models(project) if new else {}  # a new Kafka model being backfilled
    cuts.update({name: TopicCut(kafka[name], None) for name in new if name in kafka})
    topics = {}
    for name, cut in cuts.items():
        lag = lags.get(name)
        if lag is None and (cut.batch is None or cut.batch < entry.batch_id):  # never unmarked
            lag = Lag(cut.batch, "its Kafka marker does not hold this batch")
        topics[name] = TopicVersion(cut.topic, cut.batch,
                                    lag.parked_since if lag is not None else None,
                                    lag.reason if lag is not None else None)
    versions: dict[str, int | None] = dict(entry.tables)
    versions.update({name: None for name in lags if name not in versions and name not in cuts})
    tables = {}
    for name, version in versions.items():
        lag = lags.get(name)
        tables[name] = TableVersion(
            str(project.table_path(name)), version,
            lag.parked_since if lag is not None else None,
            lag.reason if lag is not None else None, lag.last_batch if lag is not None else None)
    return Snapshot(batch_id=entry.batch_id, tables=tables, written_at=entry.written_at,
                    topics=topics)


def lagging(project: Project, entry: LedgerEntry, registry: Mapping[str, Entry]
            ) -> dict[str, Lag]:
    """The tables behind batch ``entry.batch_id`` at the versions ``entry`` names, and why.

    A model that sat out batches ``k`` .. (parked, not selected, disabled, removed, or being
    backfilled since ``k``: the entry's mark or the ``registry``) lags in the entries from
    ``k`` on: its version there holds the batches up to ``k - 1``, or up to the last batch the
    table's own log shows committed at that version when that is later (a batch written just
    before a crash the stream replayed without it). A model new to the checkpoint and being
    backfilled is not in the entry yet: it lags with no version and no batch. The dead-letter
    table never lags (every run writes it; backfills leave it alone).
    """
    n = entry.batch_id
    starts: dict[str, tuple[int, str, int | None]] = {}  # table -> (from, reason, parked since)
    for name, since in entry.parked.items():
        e = registry.get(name)
        why = e.error if e is not None and e.state == "parked" else ""
        starts[name] = (since, _parked(why), since)
    files = {m.name for m in project.models}
    disabled: list[set[str]] = []  # rendered once, when a model sat out

    def absent_reason(name: str, e: Entry) -> str:
        if e.state == "parked":
            return _parked(e.error)
        if e.state == "retired" or name not in files:
            return "removed (its SQL file is gone)"
        if not disabled:
            disabled.append(_disabled(project))
        return "disabled" if name in disabled[0] else "not selected in the last run"

    for name, e in registry.items():
        listed = name in entry.tables or name in entry.kafka
        if name in starts or not (listed or e.state == "backfilling"):
            continue
        if e.state in ("absent", "retired", "parked") and e.left_at <= n:
            starts[name] = (e.left_at, absent_reason(name, e),
                            e.left_at if e.state == "parked" else None)
        elif e.state == "backfilling" and not listed:
            if name in files:  # new (or being rebuilt): the ledger has none of its versions yet
                starts[name] = (0, "being rebuilt" if e.drop else "new, being backfilled", None)
        elif e.state == "backfilling" and not e.drop and e.start <= n:
            starts[name] = (e.start, "being backfilled", None)
    query_id = read_query_id(project.checkpoint) if starts else None
    out = {}
    for name, (start, reason, parked) in starts.items():
        version = entry.tables.get(name)
        held = entry.kafka[name].batch if name in entry.kafka else None  # a topic: its marker
        if version is not None and query_id is not None:
            held = last_batch_at(project.table_path(name),
                                 app_id(project.config.name, name, query_id), version)
        last = max(start - 1, -1 if held is None else held)
        if last < n or parked is not None:
            out[name] = Lag(last if last >= 0 else None, reason, parked)
    return out


def _parked(error: str) -> str:
    first = error.strip().splitlines()[0][:200] if error.strip() else ""
    return "parked" + (f": {first}" if first else "")


def kafka_models(project: Project) -> dict[str, str | None]:
    """The models whose config says ``materialized='kafka'``, with their topics (rendered now,
    without Spark; a model that does not render is taken for a table)."""
    from runner.compile.render import render_models

    rendered, _ = render_models(project)
    return {m.name: m.config.topic for m in rendered if m.config.materialized == "kafka"}


def _disabled(project: Project) -> set[str]:
    """The models whose config says ``enabled=false`` (rendered now, without Spark; a
    model that does not render counts as not disabled)."""
    from runner.compile.render import render_models

    rendered, _ = render_models(project)
    return {m.name for m in rendered if not m.config.enabled}


def snapshot_lines(snap: Snapshot) -> list[str]:
    """The text form: the batch, then one line per table (name, version, path)."""
    width = max((len(n) for n in [*snap.tables, *snap.topics]), default=0)
    lines = [f"batch {snap.batch_id}" + (f" (complete at {snap.written_at})"
                                         if snap.written_at else "")]
    for name, t in snap.tables.items():
        version = "no table yet" if t.version is None else f"version {t.version}"
        lines.append(f"  {name:<{width}}  {version:<14} {t.path}" + lag_note(t.lag, t.last_batch))
    for name, k in snap.topics.items():
        batch = "no batch" if k.batch is None else f"batch {k.batch}"
        lines.append(f"  {name:<{width}}  {batch:<14} kafka topic {k.topic or '(per row)'}"
                     + lag_note(k.lag, k.batch))
    return lines


def lag_note(lag: str | None, last_batch: int | None) -> str:
    """The text form of a lagging table's mark ('' when it does not lag)."""
    if lag is None:
        return ""
    held = "no batch" if last_batch is None else f"batches up to {last_batch} only"
    return f"  LAGS: holds {held} ({lag})"
