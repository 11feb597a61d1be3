"""What each batch's input files were when the batch first ran: size, a content sample,
modification time.

A batch Spark replays (it crashed before its commit-log entry) must read the same input as its
first attempt, or some tables would hold one version of the batch and the rest another under
the same batch id (docs/RELIABILITY.md, "The replay rule"). Spark's file source logs which files a
batch read, not what they held, so at the start of each batch, **before any table commits it**,
the stream records what it finds of each of the batch's files; a replay compares
(:mod:`runner.sources.same_input`).

Layout: one small JSON file per batch under ``<checkpoint>/inputs/``::

    <checkpoint>/inputs/00000000000000000042.json
    {"batch_id": 42, "files": {"file:///data/in/a.json": {"size": 1234, "mtime_ms": 1795...,
                                                          "sample": "9f0c...",
                                                          "sample_bytes": 4096},
                               "file:///data/in/b.json": null}}

``sample``: a hash of the file's first and last ``sample_bytes`` (4 KiB; the whole file when
smaller): a rewrite to the same size shows there without reading the file again, and a copy put
back (a new modification time, the same bytes) still matches. ``sample_bytes`` says how the
sample was taken, so a replay compares like with like: the check samples the file now the way
the record did, whatever the runner's own default is then (the runner upgraded, or its default
changed, between the first attempt and the replay; a runner that took 64 KiB and one that takes
4 KiB hash other bytes of a file larger than 8 KiB). A record without it (written before it
was recorded) has its samples ignored: size and presence are still compared.
``null``: the file was already gone when the batch first ran (its dead letter says so). Files on
other file systems than the local one are not listed (not checked). An entry is written once
(write-if-absent: a replay keeps the first attempt's). Only the newest entry matters to the
stream (Spark replays the last planned batch only), so writing batch N's deletes the older ones.
Only the stream's process writes here (it holds the checkpoint lock).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.checkpoint.batch_files import BatchFiles
from runner.errors import ExecutionError
from runner.storage.ops import Location, as_location, write_once

__all__ = ["INPUTS_DIR", "FileFact", "InputRecords"]

#: Folder of the input records inside the pipeline's checkpoint.
INPUTS_DIR = "inputs"


@dataclass(frozen=True)
class FileFact:
    """One input file as a batch found it: its size in bytes, modification time (ms) and
    content sample (:func:`runner.sources.same_input.stat_files`), taken from
    ``sample_bytes`` at each end (0: no sample, or a record that does not say how it was
    taken: not compared)."""

    size: int
    mtime_ms: int
    sample: str = ""
    sample_bytes: int = 0


class InputRecords:
    """The input records of one checkpoint (``<checkpoint>/inputs/``).

    >>> import tempfile
    >>> from pathlib import Path
    >>> records = InputRecords(Path(tempfile.mkdtemp()))
    >>> records.record(3, {"file:///a.json": FileFact(10, 5, "ab", 4096),
    ...                    "file:///b.json": None})
    True
    >>> records.record(3, {}), records.get(3)["file:///a.json"], records.get(4)
    (False, FileFact(size=10, mtime_ms=5, sample='ab', sample_bytes=4096), None)
    """

    def __init__(self, checkpoint: Location) -> None:
        self.files = BatchFiles(as_location(checkpoint) / INPUTS_DIR)

    def get(self, batch_id: int) -> dict[str, FileFact | None] | None:
        """What batch ``batch_id``'s first attempt found of each file; None: no record."""
        path = self.files.path(batch_id)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return {str(uri): None if fact is None else _fact(fact)
                    for uri, fact in doc["files"].items()}
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ExecutionError(f"input record {path} is unreadable: {e}",
                                 hint="delete the file: a replay of the batch then checks only "
                                      "that its files still exist") from e

    def record(self, batch_id: int, facts: Mapping[str, FileFact | None]) -> bool:
        """Write batch ``batch_id``'s record unless it has one (a replay), then delete the
        records of older batches (committed: never replayed). Atomic and durable.

        Returns:
            True when written, False when the batch already had one (kept as it is).
        """
        self.files.folder.mkdir(parents=True, exist_ok=True)
        doc = {"batch_id": batch_id, "files": {
            uri: None if f is None else {"size": f.size, "mtime_ms": f.mtime_ms,
                                         "sample": f.sample, "sample_bytes": f.sample_bytes}
            for uri, f in facts.items()}}
        written = write_once(self.files.path(batch_id), json.dumps(doc, separators=(",", ":")))
        self.files.prune(below=batch_id)
        return written


def _fact(doc: Mapping[str, Any]) -> FileFact:
    """One file's entry; without ``sample_bytes`` (or not a positive number) the sample is
    unknown (""), never compared with one taken another way."""
    how = doc.get("sample_bytes")
    sample_bytes = how if isinstance(how, int) and not isinstance(how, bool) and how > 0 else 0
    return FileFact(int(doc["size"]), int(doc["mtime_ms"]),
                    str(doc["sample"]) if sample_bytes else "", sample_bytes)
