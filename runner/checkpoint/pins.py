"""The version of every source and seed each batch read (DESIGN.md "Sources and seeds").

A batch reads each lookup (a declared source, or a seed) at one version: a source's latest
committed Delta version when the batch first runs, a seed's content hash. That version is
recorded here **before any table commits the batch**, and every replay of the batch, a backfill
of a new model over it and a rebuild (``--full-refresh --select``) read the recorded version:
all tables agree on a batch's enrichment, and a rerun reproduces it.

Layout, under ``<checkpoint>/pins/``::

    <checkpoint>/pins/00000000000000000042.json
    {"batch_id": 42, "lookups": {
       "crm.customers": {"kind": "source", "version": 7, "committed_at": 1795000000.0,
                         "pinned_at": "2026-11-24T20:00:00Z"},
       "country_codes": {"kind": "seed", "version": "<sha256>", "committed_at": null,
                         "pinned_at": "2026-11-24T20:00:00Z"}}}
    <checkpoint>/pins/seeds/<sha256>.json     a seed's content at that version:
    {"name": "country_codes", "columns": [{"name": "code", "type": "STRING"}], "csv": "..."}

A lookup's pin is never changed once written. A batch that has no pin for a lookup (the lookup
came with a model added later, which is now backfilled over the batch) gets one at first use;
the file is then rewritten atomically with the old pins unchanged plus the new one. A seed's
content is kept by content hash (write-once), so a replay after the CSV file changed reads the
recorded rows. Only the stream's process writes here (it holds the checkpoint lock).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.checkpoint.files import BatchFiles, write_atomic, write_once
from runner.errors import ExecutionError

__all__ = ["PINS_DIR", "Pin", "Pins", "SeedContent"]

#: Folder of the pins inside the pipeline's checkpoint.
PINS_DIR = "pins"


@dataclass(frozen=True)
class Pin:
    """One lookup's version for one batch: an int (a source's Delta version) or a str (a
    seed's content hash)."""

    kind: str  # "source" | "seed"
    version: int | str
    pinned_at: str
    committed_at: float | None = None  # a source version's commit time (epoch seconds)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "version": self.version, "committed_at": self.committed_at,
                "pinned_at": self.pinned_at}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Pin:
        version = doc["version"]
        return cls(kind=str(doc["kind"]), version=version if isinstance(version, str)
                   else int(version), pinned_at=str(doc.get("pinned_at") or ""),
                   committed_at=None if doc.get("committed_at") is None
                   else float(doc["committed_at"]))


@dataclass(frozen=True)
class SeedContent:
    """A seed's rows at one version: its declared columns (name, Spark type) and CSV text."""

    name: str
    columns: tuple[tuple[str, str], ...]
    csv: str

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "columns": [{"name": n, "type": t}
                                                          for n, t in self.columns],
                           "csv": self.csv})

    @classmethod
    def from_json(cls, text: str) -> SeedContent:
        doc = json.loads(text)
        return cls(name=str(doc["name"]),
                   columns=tuple((str(c["name"]), str(c["type"])) for c in doc["columns"]),
                   csv=str(doc["csv"]))


class Pins:
    """The pins of one checkpoint (``<checkpoint>/pins/``)."""

    def __init__(self, checkpoint: Path) -> None:
        self.folder = Path(checkpoint) / PINS_DIR
        self.seeds = self.folder / "seeds"

    def _path(self, batch_id: int) -> Path:
        return BatchFiles(self.folder).path(batch_id)

    def batch_ids(self) -> list[int]:
        """Batch ids with pins, ascending."""
        return BatchFiles(self.folder).ids()

    def get(self, batch_id: int) -> dict[str, Pin]:
        """Lookup name -> pin of ``batch_id`` (empty: none recorded)."""
        path = self._path(batch_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            doc = json.loads(text)
            return {str(k): Pin.from_dict(v) for k, v in doc["lookups"].items()}
        except (ValueError, KeyError, TypeError) as e:
            raise ExecutionError(f"pin file {path} is unreadable: {e}",
                                 hint="restore it from a backup of the checkpoint: it records "
                                      "which source versions the batch joined") from e

    def pin(self, batch_id: int, new: Mapping[str, Pin]) -> dict[str, Pin]:
        """Record ``new`` pins of ``batch_id`` for the lookups it has none for (atomic,
        durable); a lookup pinned already keeps its pin. Returns every pin of the batch."""
        self.folder.mkdir(parents=True, exist_ok=True)
        old = self.get(batch_id)
        merged = {**{k: v for k, v in new.items() if k not in old}, **old}
        if merged == old:
            return old
        text = json.dumps({"batch_id": batch_id,
                           "lookups": {k: merged[k].to_dict() for k in sorted(merged)}},
                          separators=(",", ":"))
        if not old:
            if not write_once(self._path(batch_id), text):  # written meanwhile: keep that
                return self.pin(batch_id, new)
        else:
            write_atomic(self._path(batch_id), text, durable=True)
        return merged

    def latest(self) -> tuple[int, dict[str, Pin]] | None:
        """The newest batch with pins and its pins (``runner status``)."""
        ids = self.batch_ids()
        return (ids[-1], self.get(ids[-1])) if ids else None

    def keep_seed(self, content_hash: str, content: SeedContent) -> None:
        """Keep a seed's content under its hash (write-once: a hash names one content)."""
        self.seeds.mkdir(parents=True, exist_ok=True)
        write_once(self.seeds / f"{content_hash}.json", content.to_json())

    def seed(self, content_hash: str) -> SeedContent | None:
        """The seed content kept under ``content_hash``, or None."""
        try:
            return SeedContent.from_json(
                (self.seeds / f"{content_hash}.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def prune(self, below: int) -> int:
        """Delete the pins of batches ``< below`` (no longer replayable); return how many."""
        return BatchFiles(self.folder).prune(below)
