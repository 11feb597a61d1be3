"""Every committed batch's Kafka offsets, kept past Spark's retention.

Spark keeps the ``offsets/`` entries of the last ``spark.sql.streaming.minBatchesToRetain``
(100) batches only. Without more, a rebuild or a backfill over older batches knows where the
oldest retained batch ends but not where each older batch did: it would read them as one batch
under one batch id, where the tables the stream wrote hold them under their own ids.

So at the start of each batch the stream copies the offsets of the committed batches it has not
kept yet, while Spark still has them, into one file per chunk of batches::

    <checkpoint>/kafka_offsets/<last batch of the chunk, 20 digits>.json
    {"batches": {"0": {"topic": {"0": 120, "1": 118}}, "1": {...}, ...}}

A chunk is written once there are ``every`` batches to keep (half the retention, at most 50: a
file per 50 batches, not per batch, and written long before Spark deletes its copy). Each
chunk is written once and never changed: a committed batch's offsets do not change. Batches
committed before the runner kept these (a checkpoint made by an older version) are missing
here for good; :mod:`runner.sources.history` says which batches it can no longer tell apart.
Only the stream's process writes here (it holds the checkpoint lock).
"""

from __future__ import annotations

import json
from typing import Any

from runner.checkpoint.batch_files import BatchFiles
from runner.checkpoint.spark_logs import retained_source_offsets
from runner.errors import ExecutionError
from runner.storage.ops import Location, write_once

__all__ = ["KAFKA_OFFSETS_DIR", "chunk_size", "keep_offsets", "kept_offsets"]

#: Folder of the kept offsets inside the pipeline's checkpoint.
KAFKA_OFFSETS_DIR = "kafka_offsets"


def chunk_size(min_batches_to_retain: int) -> int:
    """Batches per chunk for Spark's retention: half of it, at most 50, at least 1.

    >>> chunk_size(100), chunk_size(10), chunk_size(1)
    (50, 5, 1)
    """
    return max(1, min(50, min_batches_to_retain // 2))


def _files(checkpoint: Location) -> BatchFiles:
    return BatchFiles(checkpoint / KAFKA_OFFSETS_DIR)


def kept_offsets(checkpoint: Location) -> dict[int, Any]:
    """``{batch id: source offset JSON}`` of every kept batch.

    Raises:
        ExecutionError: a chunk is unreadable (names the file).
    """
    files = _files(checkpoint)
    out: dict[int, Any] = {}
    for last in files.ids():
        path = files.path(last)
        try:
            batches = json.loads(path.read_text(encoding="utf-8"))["batches"]
            out.update({int(b): offset for b, offset in batches.items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ExecutionError(f"the checkpoint's kept Kafka offsets {path} are unreadable: "
                                 f"{e}", hint="restore the checkpoint's kafka_offsets folder"
                                 ) from e
    return out


def keep_offsets(checkpoint: Location, *, before: int, every: int) -> int:
    """Keep the offsets of the committed batches ``< before`` that Spark still has and no chunk
    holds, once there are at least ``every`` of them; return how many were kept (0: none yet).
    """
    files = _files(checkpoint)
    last_kept = max(files.ids(), default=-1)
    if before - 1 - last_kept < every:
        return 0
    todo = {b: o for b, o in retained_source_offsets(checkpoint, through=before - 1).items()
            if b > last_kept and o is not None}
    if len(todo) < every:
        return 0
    files.folder.mkdir(parents=True, exist_ok=True)
    doc = {"batches": {str(b): todo[b] for b in sorted(todo)}}
    write_once(files.path(max(todo)), json.dumps(doc, sort_keys=True) + "\n")
    return len(todo)
