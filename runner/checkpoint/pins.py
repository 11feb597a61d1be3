"""The version of every source and seed each batch read (docs/OPERATIONS.md, "Sources and
seeds: one version per batch").

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

Pins must outlive every batch that can still be replayed (a backfill can go back to batch 0),
so they are never dropped; but a file per batch would be 86,400 files a day at a 1 s trigger.
So once :data:`FOLD_EVERY` batch files have gathered, :meth:`Pins.fold` moves them into runs,
per lookup, of consecutive batches that read the same version::

    <checkpoint>/pins/runs.json
    {"lookups": {"crm.customers": [[0, 4131, {"kind": "source", "version": 7, ...}],
                                   [4132, 9020, {"kind": "source", "version": 8, ...}]]}}

(``pinned_at`` of a run: its first batch's). ``runs.json`` is replaced atomically before the
folded files are deleted; a crash in between leaves both, saying the same. A batch file, when
there is one, is read first.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.checkpoint.batch_files import BatchFiles
from runner.errors import ExecutionError
from runner.storage.ops import Location, as_location, write_atomic, write_once

__all__ = ["FOLD_EVERY", "PINS_DIR", "Pin", "Pins", "SeedContent"]

#: Folder of the pins inside the pipeline's checkpoint.
PINS_DIR = "pins"
#: The runs of batches folded out of their batch files (:meth:`Pins.fold`).
RUNS_FILE = "runs.json"
#: Batch files gathered before they are folded into runs.
FOLD_EVERY = 100

_Run = list[Any]  # [first batch, last batch, Pin]


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

    def __init__(self, checkpoint: Location) -> None:
        self.folder = as_location(checkpoint) / PINS_DIR
        self.seeds = self.folder / "seeds"
        self._parsed: tuple[tuple[int, int], dict[str, list[_Run]]] | None = None

    def _path(self, batch_id: int) -> Location:
        return BatchFiles(self.folder).path(batch_id)

    def batch_ids(self) -> list[int]:
        """Batch ids with pins, ascending."""
        return BatchFiles(self.folder).ids()

    def get(self, batch_id: int) -> dict[str, Pin]:
        """Lookup name -> pin of ``batch_id`` (empty: none recorded)."""
        found = self._file(batch_id)
        for name, runs in self._runs().items():
            if name not in found:
                i = bisect_right(runs, batch_id, key=lambda r: r[0])
                if i and runs[i - 1][0] <= batch_id <= runs[i - 1][1]:
                    found[name] = runs[i - 1][2]
        return found

    def _file(self, batch_id: int) -> dict[str, Pin]:
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

    def _runs(self) -> dict[str, list[_Run]]:
        """Lookup name -> its runs, ascending (``runs.json``; empty when there is none).
        Parsed again only when the file changed (a ``stat`` per call): :meth:`get` runs for
        every batch a backfill checks. Callers do not modify the result."""
        path = self.folder / RUNS_FILE
        try:
            info = path.stat()
        except FileNotFoundError:
            return {}
        key = (info.st_mtime_ns, info.st_size)
        if self._parsed is not None and self._parsed[0] == key:
            return self._parsed[1]
        try:
            runs = {str(name): [[int(a), int(b), Pin.from_dict(p)] for a, b, p in rs]
                    for name, rs in json.loads(path.read_text(encoding="utf-8"))[
                        "lookups"].items()}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ExecutionError(f"pin runs {path} are unreadable: {e}",
                                 hint="restore it from a backup of the checkpoint: it records "
                                      "which source versions the batches joined") from e
        self._parsed = (key, runs)
        return runs

    def fold(self, *, before: int, every: int | None = None) -> int:
        """Fold the batch files of batches ``< before`` into ``runs.json`` once there are at
        least ``every`` (default :data:`FOLD_EVERY`) of them; return how many were folded
        (0: not yet)."""
        files = BatchFiles(self.folder)
        todo = [b for b in files.ids() if b < before]
        if len(todo) < (FOLD_EVERY if every is None else every):
            return 0
        runs = {name: [list(r) for r in rs] for name, rs in self._runs().items()}  # a copy
        for batch_id in todo:
            for name, pin in self._file(batch_id).items():
                _insert(runs.setdefault(name, []), batch_id, pin)
        doc = {"lookups": {name: [[a, b, p.to_dict()] for a, b, p in runs[name]]
                           for name in sorted(runs)}}
        write_atomic(self.folder / RUNS_FILE, json.dumps(doc, separators=(",", ":")),
                     durable=True)
        self._parsed = None
        for batch_id in todo:
            files.path(batch_id).unlink(missing_ok=True)
        return len(todo)

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
        newest = max([*ids[-1:], *(runs[-1][1] for runs in self._runs().values() if runs)],
                     default=None)
        return (newest, self.get(newest)) if newest is not None else None

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
        """Delete the pins of batches ``< below`` (no longer replayable); return how many
        batch files went (runs are cut at ``below``)."""
        runs = self._runs()
        if runs:
            kept = {name: [[max(a, below), b, p] for a, b, p in rs if b >= below]
                    for name, rs in runs.items()}
            doc = {"lookups": {name: [[a, b, p.to_dict()] for a, b, p in rs]
                               for name, rs in sorted(kept.items()) if rs}}
            write_atomic(self.folder / RUNS_FILE, json.dumps(doc, separators=(",", ":")),
                         durable=True)
            self._parsed = None
        return BatchFiles(self.folder).prune(below)


def _same(a: Pin, b: Pin) -> bool:
    """The same version read (when it was pinned aside)."""
    return (a.kind, a.version, a.committed_at) == (b.kind, b.version, b.committed_at)


def _insert(runs: list[_Run], batch_id: int, pin: Pin) -> None:
    """Put ``batch_id``'s ``pin`` into one lookup's ascending, non-overlapping ``runs``:
    extend a neighbouring run of the same version, else start a run of its own. A batch
    already covered is left as it is (a pin never changes)."""
    i = bisect_right(runs, batch_id, key=lambda r: r[0])
    before = runs[i - 1] if i else None
    after = runs[i] if i < len(runs) else None
    if before is not None and before[0] <= batch_id <= before[1]:
        return
    joins_before = before is not None and before[1] == batch_id - 1 and _same(before[2], pin)
    joins_after = after is not None and after[0] == batch_id + 1 and _same(after[2], pin)
    if joins_before and joins_after:
        assert before is not None and after is not None
        before[1] = after[1]
        del runs[i]
    elif joins_before:
        assert before is not None
        before[1] = batch_id
    elif joins_after:
        assert after is not None
        after[0], after[2] = batch_id, pin  # the run's first batch's pin (its pinned_at)
    else:
        runs.insert(i, [batch_id, batch_id, pin])
