"""The input of a checkpoint's committed batches, read from Spark's own logs (no Spark, no I/O
beyond the checkpoint directory).

Spark keeps in the checkpoint:

- ``commits/<N>``: batch N is complete (every sink written, the commit log entry made);
- ``offsets/<N>``: where batch N ends, per source: line 1 the log version, line 2 the batch's
  metadata, line 3 source 0's offset (files: ``{"logOffset": L}``; Kafka: ``{"topic":
  {"partition": next_offset}}``, the same JSON for Spark's source and the runner's);
- ``sources/0/<L>`` and ``sources/0/<L>.compact`` (files only): the files the file source
  picked up, one JSON line each with its ``batchId`` (= ``L``); every tenth log batch is a
  compaction that repeats all the earlier entries, and older plain entries are then deleted.

Batch N read the files of log batches ``(logOffset(N-1), logOffset(N)]``, or the Kafka offsets
``[end(N-1), end(N))``. Spark keeps only the last ``spark.sql.streaming.minBatchesToRetain``
(100) batches of ``offsets/`` and ``commits/``: for older batches the files source falls back
on its own log's batch ids (shifted to line up with the oldest retained batch; equal to the
stream's batch ids unless a run stopped between the two logs), and the Kafka source on one
batch from the start of the history (``initial`` offsets when known, else the earliest offset
the broker still has) to the end of the oldest retained batch: :attr:`PastBatch.first`
says which original batches a past batch stands for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import SourceError
from runner.sources.kafka.plan import TP, offsets_from_json

__all__ = ["KafkaSpan", "PastBatch", "committed_batches", "file_batches", "kafka_batches",
           "last_committed"]


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


def _numbered(folder: Path, suffix: str = "") -> dict[int, Path]:
    """``{N: path}`` for the files named ``N`` + ``suffix`` (Spark's temp and crc files skipped)."""
    if not folder.is_dir():
        return {}
    out = {}
    for p in folder.iterdir():
        stem = p.name[: len(p.name) - len(suffix)] if suffix and p.name.endswith(suffix) else (
            None if suffix else p.name)
        if stem is not None and stem.isdigit():
            out[int(stem)] = p
    return out


def committed_batches(checkpoint: Path) -> list[int]:
    """Batch ids with a commit log entry, ascending (only the retained ones)."""
    return sorted(_numbered(checkpoint / "commits"))


def last_committed(checkpoint: Path) -> int | None:
    """The last batch Spark committed, or None when none was."""
    batches = committed_batches(checkpoint)
    return batches[-1] if batches else None


def _log_lines(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SourceError(f"cannot read the checkpoint log {path}: {e.strerror or e}") from e
    if not lines or not lines[0].startswith("v"):
        raise SourceError(f"the checkpoint log {path} is not a Spark metadata log",
                          hint="restore the checkpoint directory")
    return lines[1:]


def _source_offset(path: Path) -> Any:
    """Source 0's offset of one ``offsets/<N>`` file, parsed; None for a source with none."""
    lines = _log_lines(path)
    if len(lines) < 2 or lines[1].strip() in ("", "-"):
        return None
    try:
        return json.loads(lines[1])
    except ValueError as e:
        raise SourceError(f"unreadable source offset in {path}: {lines[1][:200]!r}") from e


def _retained_offsets(checkpoint: Path, through: int) -> dict[int, Any]:
    """Source 0's offset of every committed batch up to ``through`` whose offsets are kept."""
    offsets = _numbered(checkpoint / "offsets")
    return {b: _source_offset(offsets[b]) for b in committed_batches(checkpoint)
            if b <= through and b in offsets}


# -- files -------------------------------------------------------------------------------------


def _file_log(folder: Path) -> dict[int, list[str]]:
    """The file source's log: ``{log batch: [file URI, ...]}``, compactions merged."""
    entries: dict[int, dict[str, None]] = {}
    compacts = _numbered(folder, ".compact")
    latest = max(compacts, default=-1)
    paths = ([compacts[latest]] if latest >= 0 else []) + [
        p for n, p in sorted(_numbered(folder).items()) if n > latest]
    for path in paths:
        for line in _log_lines(path):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                entries.setdefault(int(entry["batchId"]), {})[str(entry["path"])] = None
            except (ValueError, KeyError, TypeError) as e:
                raise SourceError(f"unreadable entry in the file source log {path}: "
                                  f"{line[:200]!r}") from e
    return {n: list(files) for n, files in sorted(entries.items())}


def file_batches(checkpoint: Path, *, through: int) -> list[PastBatch]:
    """The files each committed batch up to ``through`` read, oldest first (batches that read
    no file are left out)."""
    log = _file_log(checkpoint / "sources" / "0")
    ends: dict[int, int] = {}
    for b, offset in _retained_offsets(checkpoint, through).items():
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


def kafka_batches(checkpoint: Path, *, through: int,
                  initial: Mapping[TP, int] | None = None) -> list[PastBatch]:
    """The offsets each committed batch up to ``through`` read, oldest first.

    Args:
        initial: where batch 0 started, when known (concrete ``starting_offsets``); else
            Spark's Kafka source's record of it (``sources/0/0``); else the oldest batch starts
            at the earliest offset the broker retains (a :class:`KafkaSpan` with start None),
            as does a partition that is new in a batch.
    """
    ends = {b: offsets_from_json(o) for b, o in _retained_offsets(checkpoint, through).items()
            if o is not None}
    if initial is None:
        initial = spark_initial_offsets(checkpoint)
    retained = sorted(ends)
    batches = []
    for i, b in enumerate(retained):
        prev = retained[i - 1] if i else None
        start = ends[prev] if prev is not None else (initial or {})
        spans = tuple(KafkaSpan(t, p, start.get((t, p)), end)
                      for (t, p), end in sorted(ends[b].items()))
        batches.append(PastBatch(b, 0 if prev is None else prev + 1, spans=spans))
    return batches


def spark_initial_offsets(checkpoint: Path) -> dict[TP, int] | None:
    """Batch 0's start as Spark's own Kafka source records it (``sources/0/0``), if present.

    Its format: a zero byte (Spark 2.1 compatibility), a version line ``v1``, then the offsets
    JSON. The runner's Python source records nothing there.
    """
    path = checkpoint / "sources" / "0" / "0"
    try:
        text = path.read_bytes().decode("utf-8", errors="replace").lstrip("\x00")
    except OSError:
        return None
    version, _, body = text.partition("\n")
    if not version.startswith("v"):
        return None
    try:
        data = json.loads(body)
        return offsets_from_json(data) if isinstance(data, dict) else None
    except (ValueError, SourceError):
        return None
