"""The only reader of Spark's own logs in the checkpoint (no Spark, no I/O beyond the folder).

Spark keeps in the checkpoint:

- ``commits/<N>``: batch N is complete (every sink written, the commit log entry made);
- ``offsets/<N>``: where batch N ends, per source: line 1 the log version, line 2 the batch's
  metadata, line 3 source 0's offset (files: ``{"logOffset": L}``; Kafka: ``{"topic":
  {"partition": next_offset}}``, the same JSON for Spark's source and the runner's);
- ``sources/0/<L>`` and ``sources/0/<L>.compact`` (files only): the files the file source
  picked up, one JSON line each with its ``batchId`` (= ``L``); every tenth log batch is a
  compaction that repeats all the earlier entries, and older plain entries are then deleted;
- ``sources/0/0`` (Spark's Kafka source only): where batch 0 started.

Spark keeps only the last ``spark.sql.streaming.minBatchesToRetain`` (100) batches of
``offsets/`` and ``commits/``. Spark's temporary and ``.crc`` files are never counted.
"""

from __future__ import annotations

import json
from typing import Any

from runner.errors import SourceError
from runner.storage.ops import Location, names

__all__ = ["batch_files", "committed_batches", "committed_source_offset", "file_log",
           "is_committed",
           "kafka_start_offsets", "last_committed", "last_planned", "numbered",
           "pending_batch", "retained_source_offsets", "source_offset"]


def numbered(folder: Location, suffix: str = "") -> dict[int, Location]:
    """``{N: path}`` for the files named ``N`` + ``suffix`` in ``folder`` ({} when absent).

    >>> import tempfile
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("0", "1", ".1.crc", "9.compact", "tmp"): _ = (d / n).write_text("")
    >>> sorted(numbered(d)), sorted(numbered(d, ".compact"))
    ([0, 1], [9])
    """
    out = {}
    for name in names(folder):
        stem = name[: len(name) - len(suffix)] if suffix and name.endswith(suffix) else (
            None if suffix else name)
        if stem is not None and stem.isdigit():
            out[int(stem)] = folder / name
    return out


def committed_batches(checkpoint: Location) -> list[int]:
    """Batch ids with a commit log entry, ascending (only the retained ones)."""
    return sorted(numbered(checkpoint / "commits"))


def last_committed(checkpoint: Location) -> int | None:
    """The last batch Spark committed, or None when none was."""
    batches = committed_batches(checkpoint)
    return batches[-1] if batches else None


def is_committed(checkpoint: Location, batch_id: int) -> bool:
    """Whether Spark has logged batch ``batch_id`` as committed (``commits/<id>``)."""
    return (checkpoint / "commits" / str(batch_id)).exists()


def last_planned(checkpoint: Location) -> int | None:
    """The newest batch Spark planned (``offsets/<N>``): committed or in flight."""
    return max(numbered(checkpoint / "offsets"), default=None)


def pending_batch(checkpoint: Location) -> int | None:
    """The batch Spark replays on the next start: the newest planned batch (``offsets/<N>``)
    when it has no commit-log entry; None when every planned batch is committed."""
    planned = last_planned(checkpoint)
    if planned is None or is_committed(checkpoint, planned):
        return None
    return planned


def _log_lines(path: Location) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SourceError(f"cannot read the checkpoint log {path}: {e.strerror or e}") from e
    if not lines or not lines[0].startswith("v"):
        raise SourceError(f"the checkpoint log {path} is not a Spark metadata log",
                          hint="restore the checkpoint directory")
    return lines[1:]


def _source_offset(path: Location) -> Any:
    """Source 0's offset of one ``offsets/<N>`` file, parsed; None for a source with none."""
    lines = _log_lines(path)
    if len(lines) < 2 or lines[1].strip() in ("", "-"):
        return None
    try:
        return json.loads(lines[1])
    except ValueError as e:
        raise SourceError(f"unreadable source offset in {path}: {lines[1][:200]!r}") from e


def retained_source_offsets(checkpoint: Location, *, through: int) -> dict[int, Any]:
    """Source 0's offset (parsed JSON) of every committed batch up to ``through`` whose
    ``offsets/`` file is kept."""
    offsets = numbered(checkpoint / "offsets")
    return {b: _source_offset(offsets[b]) for b in committed_batches(checkpoint)
            if b <= through and b in offsets}


def source_offset(checkpoint: Location, batch_id: int) -> Any:
    """Source 0's offset (parsed JSON) where batch ``batch_id`` ends (committed or in flight);
    None when its ``offsets/`` entry is gone or names no offset.

    Raises:
        SourceError: the entry cannot be read (names the file).
    """
    path = checkpoint / "offsets" / str(batch_id)
    return _source_offset(path) if path.exists() else None


def committed_source_offset(checkpoint: Location) -> Any:
    """Source 0's offset after the last committed batch (None: none committed, or unreadable:
    for reports, which say "unknown" rather than fail)."""
    batch = last_committed(checkpoint)
    if batch is None:
        return None
    try:
        return _source_offset(checkpoint / "offsets" / str(batch))
    except SourceError:
        return None


def file_log(checkpoint: Location) -> dict[int, list[str]]:
    """The file source's log: ``{log batch: [file URI, ...]}``, compactions merged.

    Raises:
        SourceError: an entry of the log cannot be read (names the file).
    """
    folder = checkpoint / "sources" / "0"
    entries: dict[int, dict[str, None]] = {}
    compacts = numbered(folder, ".compact")
    latest = max(compacts, default=-1)
    paths = ([compacts[latest]] if latest >= 0 else []) + [
        p for n, p in sorted(numbered(folder).items()) if n > latest]
    for path in paths:
        try:
            lines = _log_lines(path)
        except SourceError:
            if path.exists():
                raise
            continue  # deleted by Spark's compaction while we listed
        for line in lines:
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                entries.setdefault(int(entry["batchId"]), {})[str(entry["path"])] = None
            except (ValueError, KeyError, TypeError) as e:
                raise SourceError(f"unreadable entry in the file source log {path}: "
                                  f"{line[:200]!r}") from e
    return {n: list(files) for n, files in sorted(entries.items())}


def batch_files(checkpoint: Location, batch_id: int) -> list[str]:
    """The file URIs of batch ``batch_id`` (in flight or committed), from its ``offsets/``
    entry and the file source's log entries after the previous batch's: no full read of the
    log unless an entry is a compaction (every tenth). [] when the batch is unknown.

    Raises:
        SourceError: an entry cannot be read (names the file).
    """
    offsets = checkpoint / "offsets"
    path = offsets / str(batch_id)
    if not path.exists():
        return []
    end = _log_offset(path)
    if end is None:
        return []
    before = offsets / str(batch_id - 1)
    start = _log_offset(before) if batch_id > 0 and before.exists() else end - 1
    if start is None:
        return []
    folder = checkpoint / "sources" / "0"
    files: dict[str, None] = {}
    for n in range(start + 1, end + 1):
        entry = folder / str(n)
        if not entry.exists():
            entry = folder / f"{n}.compact"
        for line in _log_lines(entry):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if int(record["batchId"]) == n:
                    files[str(record["path"])] = None
            except (ValueError, KeyError, TypeError) as e:
                raise SourceError(f"unreadable entry in the file source log {entry}: "
                                  f"{line[:200]!r}") from e
    return list(files)


def _log_offset(path: Location) -> int | None:
    """A files-source batch's log offset (``{"logOffset": L}``); None for another source."""
    offset = _source_offset(path)
    if isinstance(offset, dict) and isinstance(offset.get("logOffset"), int):
        return int(offset["logOffset"])
    return None


def kafka_start_offsets(checkpoint: Location) -> dict[str, Any] | None:
    """Batch 0's start as Spark's own Kafka source records it (``sources/0/0``), as its JSON
    (``{"topic": {"partition": offset}}``), or None when absent or not such a record.

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
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
