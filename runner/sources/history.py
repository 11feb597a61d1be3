"""The input of a checkpoint's committed batches, from Spark's own logs (no Spark).

What Spark's logs hold, and their formats: :mod:`runner.checkpoint.spark_logs`.

Batch N read the files of log batches ``(logOffset(N-1), logOffset(N)]``, or the Kafka offsets
``[end(N-1), end(N))``. Spark keeps only the last ``spark.sql.streaming.minBatchesToRetain``
(100) batches of ``offsets/`` and ``commits/``: for older batches the files source falls back
on its own log's batch ids (shifted to line up with the oldest retained batch; equal to the
stream's batch ids unless a run stopped between the two logs), and the Kafka source on the
offsets the stream kept itself (:mod:`runner.checkpoint.kafka_offsets`). Batches older than
both (a checkpoint made before the runner kept offsets) are one batch from the start of the
history (``initial`` offsets when known, else the earliest offset the broker still has) to the
end of the oldest known batch: :attr:`PastBatch.first` says which original batches a past batch
stands for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from runner.checkpoint.kafka_offsets import kept_offsets
from runner.checkpoint.spark_logs import (
    file_log,
    kafka_start_offsets,
    retained_source_offsets,
)
from runner.errors import SourceError
from runner.sources.kafka.offset_plan import TP, offsets_from_json
from runner.storage.objects import SCHEMES, object_path
from runner.storage.ops import Location

__all__ = ["KafkaSpan", "PastBatch", "file_batches", "kafka_batches", "local_path"]


@dataclass(frozen=True)
class KafkaSpan:
    """Offsets ``[start, end)`` of one partition; ``start`` None: the earliest still retained."""

    topic: str
    partition: int
    start: int | None
    end: int


@dataclass(frozen=True)
class PastBatch:
    """The input of committed batch ``batch_id`` (standing for batches ``first`` .. ``batch_id``
    when the logs no longer tell them apart)."""

    batch_id: int
    first: int
    files: tuple[str, ...] = ()
    spans: tuple[KafkaSpan, ...] = ()


# -- files -------------------------------------------------------------------------------------


def file_batches(checkpoint: Location, *, through: int) -> list[PastBatch]:
    """The files each committed batch up to ``through`` read, oldest first (batches that read
    no file are left out)."""
    log = file_log(checkpoint)
    ends: dict[int, int] = {}
    for b, offset in retained_source_offsets(checkpoint, through=through).items():
        try:
            ends[b] = int(offset["logOffset"])
        except (TypeError, KeyError, ValueError) as e:
            raise SourceError(f"batch {b} of the checkpoint is not a files-source batch "
                              f"(offset {offset!r})",
                              hint="source.type changed since the checkpoint was made") from e
    if not ends:
        return []
    batches: list[PastBatch] = []
    oldest = min(ends)
    shift = ends[oldest] - oldest  # log ids ahead of the stream's batch ids (0 as a rule)
    for n in (n for n in log if n < ends[oldest]):  # older than the retained offsets
        b = max(0, min(n - shift, oldest - 1))
        batches.append(PastBatch(b, b, tuple(log[n])))
    retained = sorted(ends)
    for i, b in enumerate(retained):
        prev = retained[i - 1] if i else None
        start = ends[prev] if prev is not None else ends[b] - 1
        files = tuple(f for n in log if start < n <= ends[b] for f in log[n])
        if files:
            batches.append(PastBatch(b, b if prev is None else prev + 1, files))
    merged: list[PastBatch] = []
    for pb in batches:  # log batches folded onto one stream batch id (clamped at the edges)
        if merged and merged[-1].batch_id == pb.batch_id:
            last = merged.pop()
            pb = PastBatch(pb.batch_id, min(last.first, pb.first), last.files + pb.files)
        merged.append(pb)
    return merged


# -- Kafka -------------------------------------------------------------------------------------


def kafka_batches(checkpoint: Location, *, through: int,
                  initial: Mapping[TP, int] | None = None) -> list[PastBatch]:
    """The offsets each committed batch up to ``through`` read, oldest first.

    Args:
        initial: where batch 0 started, when known (concrete ``starting_offsets``); else
            Spark's Kafka source's record of it (``sources/0/0``); else the oldest batch starts
            at the earliest offset the broker retains (a :class:`KafkaSpan` with start None),
            as does a partition that is new in a batch.
    """
    known = {b: o for b, o in kept_offsets(checkpoint).items() if b <= through}
    known.update(retained_source_offsets(checkpoint, through=through))
    ends = {b: offsets_from_json(o) for b, o in known.items() if o is not None}
    if initial is None:
        recorded = kafka_start_offsets(checkpoint)
        initial = offsets_from_json(recorded) if recorded is not None else None
    batch_ids = sorted(ends)
    batches = []
    for i, b in enumerate(batch_ids):
        prev = batch_ids[i - 1] if i else None
        start = ends[prev] if prev is not None else (initial or {})
        spans = tuple(KafkaSpan(t, p, start.get((t, p)), end)
                      for (t, p), end in sorted(ends[b].items()))
        batches.append(PastBatch(b, 0 if prev is None else prev + 1, spans=spans))
    return batches


def file_location(uri: str) -> Location | None:
    """Where a file the files source logged lives, for the storage layer: a local path, or an
    object-store key (``s3://``, ``s3a://``, ``abfss://``, ``gs://``); None for another file
    system.

    >>> file_location("file:///data/in/a.json"), file_location("s3a://b/in/a.json")
    (PosixPath('/data/in/a.json'), ObjectPath('s3a://b/in/a.json'))
    """
    path = local_path(uri)
    if path is not None:
        return Path(path)
    scheme = uri.partition("://")[0].lower()
    return object_path(uri) if scheme in SCHEMES else None


def local_path(uri: str) -> str | None:
    """The local path of a file the files source logged (a ``file:`` URI or a plain path);
    None for another file system.

    >>> local_path("file:///data/in/events%2001.json"), local_path("s3a://b/k.json")
    ('/data/in/events 01.json', None)
    """
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return uri if parsed.scheme == "" else None
