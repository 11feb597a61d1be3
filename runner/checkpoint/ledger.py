"""The batch ledger: which Delta version of every table holds exactly the batches up to N.

Tables are committed one by one, so while a batch is in flight a reader of the tables' latest
versions can see batch N in one table and not in another. After the last sink of batch N has
committed (and before Spark writes its commit-log entry) the stream records, for every table
of the pipeline (the models and the dead-letter table), the table's version at that moment.
Each of those versions holds exactly the batches ``<= N``: the batch's own commits are in,
batch ``N + 1`` has not started, and the only other commits a table can get are maintenance
commits (compaction, vacuum), which change no data. Reading every table at its recorded
version is a consistent cut of the pipeline (:mod:`runner.snapshot`).

Layout: one small JSON file per batch under ``<checkpoint>/ledger/``::

    <checkpoint>/ledger/00000000000000000042.json
    {"batch_id": 42, "query_id": "...", "written_at": "2026-...Z",
     "tables": {"request_logs": 17, "error_events": 12, "_dead_letter": null}}

``null`` means the table did not exist at that cut (a reader treats it as empty). An entry may
also say ``"parked": {"fragile": 40}``: that model was parked (its SQL failed,
:mod:`runner.runtime.batches.parking`) since batch 40, so its version holds its batches before 40
only.

A Kafka model (``materialized='kafka'``) has no table and no version: the entry names it under
``"kafka"`` with its topic (``null``: its rows route themselves with a ``topic`` column) and
the last batch its marker held at that cut (:mod:`runner.sinks.kafka_markers`: the batch id
committed in the same Kafka transaction as the records), e.g. ``"kafka": {"orders_out":
{"topic": "orders-enriched", "batch": 42}}``. Written after the batch's transaction committed,
so an entry of batch N names batch N unless the model is parked (then its ``parked`` mark says
since when). A topic cannot be read at a version: the batch says which batches its records
are complete through at that cut.

Crash safety: an entry is written to a temporary name, flushed to disk, then linked to its
final name, which fails when the name exists: an entry is all there or not there, and a batch
that Spark replays (it crashed after the entry, before its commit-log entry) keeps the entry
it already has instead of writing a second, different one. The entry it has is still right:
the replay skips every sink (they all committed), so no table gains data.

Versions are found without opening the tables (:func:`runner.sinks.tables.versions_of`): a
few ``stat`` calls per table per batch.

Rebuilds and backfills (:mod:`runner.runtime.start.restate`): a table that is rebuilt or backfilled
gets new versions for old batches. Before a rebuild drops a table, the table is removed from
every entry (a snapshot of those batches then lacks it rather than naming versions of a dropped
table); once the backfill is complete, every entry from the backfill's first batch on is
rewritten (:meth:`Ledger.rewrite`) with the version of the new table that holds exactly the
batches up to the entry's, read from the table's own log (the commit carrying each batch's
application transaction).

Retention: ``runner maintain`` deletes entries older than the ones it keeps
(``maintenance.keep_batches``) before it vacuums, and vacuum keeps every version that a kept
entry names, so every entry in the ledger can be read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.checkpoint.batch_files import BatchFiles
from runner.errors import ExecutionError
from runner.storage.ops import Location, as_location, write_atomic, write_once

__all__ = ["LEDGER_DIR", "Ledger", "LedgerEntry", "TopicCut", "utc_now"]

#: Folder of the ledger inside the pipeline's checkpoint.
LEDGER_DIR = "ledger"


@dataclass(frozen=True)
class TopicCut:
    """A Kafka model at a cut: its topic (None: routed by a ``topic`` column) and the last
    batch committed to it (None: none)."""

    topic: str | None
    batch: int | None


@dataclass(frozen=True)
class LedgerEntry:
    """Batch ``batch_id`` is complete in every table at these versions (None: no table)."""

    batch_id: int
    tables: Mapping[str, int | None] = field(hash=False)
    query_id: str | None = None
    written_at: str | None = None
    # model -> the batch it is parked since (its version holds the batches before it)
    parked: Mapping[str, int] = field(default_factory=dict, hash=False)
    # Kafka model -> its topic and last committed batch at this cut (no table, no version)
    kafka: Mapping[str, TopicCut] = field(default_factory=dict, hash=False)

    def to_json(self) -> str:
        doc: dict[str, Any] = {"batch_id": self.batch_id, "query_id": self.query_id,
                               "written_at": self.written_at, "tables": dict(self.tables)}
        if self.parked:
            doc["parked"] = dict(self.parked)
        if self.kafka:
            doc["kafka"] = {m: {"topic": c.topic, "batch": c.batch}
                            for m, c in self.kafka.items()}
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LedgerEntry:
        doc = json.loads(text)
        tables = {str(k): (None if v is None else int(v)) for k, v in doc["tables"].items()}
        return cls(batch_id=int(doc["batch_id"]), tables=tables, query_id=doc.get("query_id"),
                   written_at=doc.get("written_at"),
                   parked={str(k): int(v) for k, v in doc.get("parked", {}).items()},
                   kafka={str(k): TopicCut(v["topic"], None if v["batch"] is None
                                           else int(v["batch"]))
                          for k, v in doc.get("kafka", {}).items()})


class Ledger:
    """The ledger of one checkpoint (``<checkpoint>/ledger/``)."""

    def __init__(self, checkpoint: Location) -> None:
        self.folder = as_location(checkpoint) / LEDGER_DIR

    def _path(self, batch_id: int) -> Location:
        return BatchFiles(self.folder).path(batch_id)

    def batch_ids(self) -> list[int]:
        """Batch ids with an entry, ascending (one directory listing)."""
        return BatchFiles(self.folder).ids()

    def get(self, batch_id: int) -> LedgerEntry | None:
        """The entry of ``batch_id``, or None when there is none (never written, or pruned)."""
        path = self._path(batch_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return LedgerEntry.from_json(text)
        except (ValueError, KeyError, TypeError) as e:
            raise ExecutionError(f"ledger entry {path} is unreadable: {e}",
                                 hint="delete the file: the batch is then no longer offered "
                                      "as a snapshot") from e

    def latest(self) -> LedgerEntry | None:
        """The newest entry: the latest batch complete in every table."""
        ids = self.batch_ids()
        return self.get(ids[-1]) if ids else None

    def record(self, entry: LedgerEntry) -> bool:
        """Write ``entry`` unless its batch has one already (a replay); atomic, durable.

        Returns:
            True when written, False when the batch already had an entry (kept as it is).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        return write_once(self._path(entry.batch_id), entry.to_json())

    def rewrite(self, entry: LedgerEntry) -> None:
        """Replace the entry of ``entry.batch_id`` (atomic, durable): only for a backfill or
        rebuild restating the versions of the tables it wrote (:mod:`runner.runtime.start.restate`);
        the stream's entries are write-once (:meth:`record`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomic(self._path(entry.batch_id), entry.to_json(), durable=True)

    def prune(self, below: int) -> int:
        """Delete the entries of batches ``< below`` (no longer retained); return how many."""
        return BatchFiles(self.folder).prune(below)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
