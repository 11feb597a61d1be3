"""A replayed batch reads the same input as its first attempt, or refuses.

Spark replays a batch (same id) when the run stopped after its ``offsets/`` entry and before its
``commits/`` entry; some tables may have committed it already, and they skip it. If the replay
read other input than the first attempt (a file removed, truncated or rewritten since; Kafka
offsets deleted by retention), the tables that had not committed the batch would get another
batch under the same id, silently. So (:class:`ReplayGuard`):

- At each batch's start, before any table commits it, the stream records the size, a content
  sample (a hash of the first and last 4 KiB) and the modification time of each of the
  batch's files (:mod:`runner.checkpoint.inputs`; write-once: a replay keeps the first
  attempt's record). The record says how each sample was taken (``sample_bytes``), and a
  replay samples the file that way: a runner upgraded between the attempts (another
  :data:`SAMPLE_BYTES`) compares like with like instead of finding every file larger than
  twice the sample "rewritten".
- At start-up, before anything is written, the batch Spark is about to replay
  (:func:`runner.checkpoint.spark_logs.pending_batch`) is checked: files, each listed file
  exists with the recorded size and sample (without a record, from a checkpoint older than
  the records, each file exists); Kafka, the brokers still hold its offsets
  ``[end(N-1), end(N))``. Otherwise a :class:`~runner.errors.ConfigError` (exit 2) names the
  batch, what is gone or changed, and the way out. The batch's own start compares again (a
  file removed after start-up).

Local files are checked (``file:`` URIs, plain paths); files on other file systems are not,
as :func:`runner.sources.files.unreadable_files`. Kafka with ``fail_on_data_loss: false``: the
missing offsets are reported and the replay reads what is left (that setting's meaning).

The modification time alone refuses nothing: a file put back by a plain copy has a new one
and the same bytes. A rewrite to the same size that changes neither the first nor the last
4 KiB of a larger file is not seen (reading every file whole again would).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from runner.checkpoint.identity import read_kafka_start
from runner.checkpoint.inputs import FileFact, InputRecords
from runner.checkpoint.spark_logs import (
    batch_files,
    kafka_start_offsets,
    pending_batch,
    source_offset,
)
from runner.errors import ConfigError
from runner.events import ReplayWithoutOffsets, Reporter, ignore
from runner.project.config import FilesSource, KafkaSource
from runner.sources.history import KafkaSpan, file_location
from runner.sources.kafka.offset_plan import TP, DataLoss, Watermarks, offsets_from_json
from runner.storage.ops import Location, as_location, read_range

__all__ = ["ReplayGuard", "file_changes", "kafka_losses", "pending_spans", "stat_files"]

#: The way out of a refused files replay (also in docs/RELIABILITY.md "The replay rule").
FILES_WAY_OUT = ("put the file(s) back as the batch first read them (same name and content) "
                 "and start again: nothing was written. If they are lost for good, `runner "
                 "stream --full-refresh` rebuilds every table from the files still there")


#: Bytes hashed from each end of a file for its sample: every file of every batch is sampled
#: before the batch commits, and the cost grows with the sample, so a few KiB; a truncated or
#: rewritten file still shows in its size or its ends.
SAMPLE_BYTES = 4 * 1024


def _sample(path: Location, size: int, sample_bytes: int = SAMPLE_BYTES) -> str:
    """A hash of the first and last ``sample_bytes`` of the file (all of it when smaller)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(read_range(path, 0, min(size, sample_bytes)))
    if size > sample_bytes:
        digest.update(read_range(path, max(sample_bytes, size - sample_bytes), size))
    return digest.hexdigest()


def stat_files(uris: Iterable[str], *, sample_bytes: Mapping[str, int] | None = None
               ) -> dict[str, FileFact | None]:
    """Size, modification time and sample of each file of ``uris`` on local disk or in an
    object store (None: gone or not readable); files on other file systems are left out.
    ``sample_bytes``: how to sample a file (as its record did; default
    :data:`SAMPLE_BYTES`; 0: no sample).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = p.write_text("{}\\n")
    >>> facts = stat_files([p.as_uri(), p.as_uri() + ".gone", "hdfs://nn/k.json"])
    >>> [(uri.rsplit("/", 1)[1], f and f.size) for uri, f in facts.items()]
    [('a.json', 3), ('a.json.gone', None)]
    """
    how = sample_bytes or {}
    out: dict[str, FileFact | None] = {}
    for uri in uris:
        path = file_location(uri)
        if path is None:
            continue
        n = how.get(uri, SAMPLE_BYTES)
        try:
            st = path.stat()
            sample = _sample(path, st.st_size, n) if n > 0 else ""
        except OSError:
            out[uri] = None
            continue
        out[uri] = FileFact(st.st_size, st.st_mtime_ns // 1_000_000, sample, max(n, 0))
    return out


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def file_changes(recorded: Mapping[str, FileFact | None] | None,
                 now: Mapping[str, FileFact | None]) -> list[str]:
    """What differs between the first attempt's files (``recorded``; None: no record, then
    only a gone file counts) and the files ``now``, one line per file. Samples are compared
    when both were taken the same way (the same ``sample_bytes``): ``now`` is sampled as the
    record was (:meth:`ReplayGuard.now`).

    >>> for line in file_changes({"a": FileFact(10, 0), "b": FileFact(5, 0), "c": None},
    ...                          {"a": None, "b": FileFact(3, 0), "c": None}):
    ...     print(line)
    a is gone (it had 10 bytes when the batch first ran)
    b was truncated or rewritten: 5 bytes when the batch first ran, 3 now
    >>> file_changes({"a": FileFact(9, 0, "x", 4096)}, {"a": FileFact(9, 0, "y", 4096)}
    ...              )[0].split(" (")[0]
    'a was rewritten: the same size, other content'
    >>> file_changes({"a": FileFact(9, 0, "x", 65536)}, {"a": FileFact(9, 0, "y", 4096)})
    []
    >>> file_changes(None, {"a": None, "b": FileFact(3, 0)})
    ['a is gone']
    """
    lines = []
    for uri, fact in now.items():
        if recorded is None or uri not in recorded:
            if fact is None:
                lines.append(f"{uri} is gone")
            continue
        first = recorded[uri]
        if first is None and fact is not None:
            lines.append(f"{uri} was gone when the batch first ran (a dead letter says so) "
                         "and is back")
        elif first is not None and fact is None:
            lines.append(f"{uri} is gone (it had {first.size} bytes when the batch first ran)")
        elif first is not None and fact is not None and first.size != fact.size:
            lines.append(f"{uri} was truncated or rewritten: {first.size} bytes when the "
                         f"batch first ran, {fact.size} now")
        elif (first is not None and fact is not None and first.sample_bytes > 0
              and first.sample_bytes == fact.sample_bytes and first.sample != fact.sample):
            lines.append(f"{uri} was rewritten: the same size, other content (modified at "
                         f"{_when(fact.mtime_ms)}; at {_when(first.mtime_ms)} when the batch "
                         "first ran)")
    return lines


def pending_spans(checkpoint: Location, batch_id: int) -> list[KafkaSpan]:
    """The Kafka offsets ``[end(N-1), end(N))`` of planned batch ``batch_id``; a partition
    whose start is unknown (new in the batch, or batch 0 without a record of its start) starts
    at None: the earliest offset retained."""
    end = source_offset(checkpoint, batch_id)
    if not isinstance(end, dict):
        return []
    before = source_offset(checkpoint, batch_id - 1) if batch_id > 0 else (
        read_kafka_start(checkpoint) or kafka_start_offsets(checkpoint))
    start = offsets_from_json(before) if isinstance(before, dict) else {}
    return [KafkaSpan(t, p, start.get((t, p)), e)
            for (t, p), e in sorted(offsets_from_json(end).items())]


def kafka_losses(spans: Sequence[KafkaSpan], available: Mapping[TP, Watermarks]
                 ) -> list[DataLoss]:
    """The offsets of ``spans`` the brokers no longer hold (:func:`resolve_spans`'s)."""
    from runner.sources.replay import resolve_spans

    return resolve_spans(spans, available)[1]


class ReplayGuard:
    """The replay rule of one run (see the module docstring).

    Args:
        checkpoint: the pipeline's checkpoint.
        source: the project's source.
        watermarks: Kafka: the brokers' offsets now (default: one round trip,
            :func:`runner.sources.replay.broker_watermarks`).
    """

    def __init__(self, checkpoint: Location, source: FilesSource | KafkaSource, *,
                 watermarks: Callable[[], Mapping[TP, Watermarks]] | None = None) -> None:
        self.checkpoint = as_location(checkpoint)
        self.source = source
        self.records = InputRecords(self.checkpoint)
        self._watermarks = watermarks
        self._files: tuple[int, list[str]] | None = None

    @property
    def files_source(self) -> bool:
        return self.source.type == "files"

    def files(self, batch_id: int) -> list[str]:
        """The batch's file URIs from the checkpoint (read once per batch)."""
        if self._files is None or self._files[0] != batch_id:
            self._files = (batch_id, batch_files(self.checkpoint, batch_id))
        return self._files[1]

    def check_pending(self, *, report: Reporter = ignore) -> int | None:
        """At start-up, before anything is written: refuse when the batch Spark is about to
        replay would read other input than its first attempt. Returns that batch's id (None:
        no replay pending).

        Raises:
            ConfigError: names the batch, what is gone or changed, and the way out.
        """
        batch_id = pending_batch(self.checkpoint)
        if batch_id is None:
            return None
        if self.files_source:
            recorded = self.records.get(batch_id)
            self._check_files(batch_id, self.now(batch_id, recorded), recorded)
        else:
            self._check_kafka(batch_id, report)
        return batch_id

    def __call__(self, batch_id: int) -> None:
        """At a batch's start, before any table commits it (files source): record what its
        files are, or, when its first attempt recorded them, refuse if they changed since."""
        if not self.files_source:
            return
        recorded = self.records.get(batch_id)
        now = self.now(batch_id, recorded)
        if recorded is not None:
            self._check_files(batch_id, now, recorded)
        self.records.record(batch_id, now)

    def now(self, batch_id: int, recorded: Mapping[str, FileFact | None] | None = None
            ) -> dict[str, FileFact | None]:
        """The batch's files now, each sampled as ``recorded`` (its first attempt's record)
        sampled it: a replay by a runner whose :data:`SAMPLE_BYTES` differs from the first
        attempt's (upgraded in between) compares like with like; without a record, as
        :data:`SAMPLE_BYTES` says."""
        how = {uri: fact.sample_bytes for uri, fact in (recorded or {}).items()
               if fact is not None}
        return stat_files(self.files(batch_id), sample_bytes=how)

    def unreadable(self, batch_id: int) -> list[tuple[str, str]]:
        """:func:`runner.sources.files.unreadable_files` of the batch's files."""
        from runner.sources.files import unreadable_files

        return unreadable_files(self.files(batch_id))

    def _check_files(self, batch_id: int, now: Mapping[str, FileFact | None],
                     recorded: Mapping[str, FileFact | None] | None) -> None:
        changes = file_changes(recorded, now)
        if not changes:
            return
        listed = "\n".join(f"  - {line}" for line in changes[:10])
        more = f"\n  ... and {len(changes) - 10} more" if len(changes) > 10 else ""
        raise ConfigError(
            f"batch {batch_id} must be replayed (the last run stopped before Spark's commit "
            f"log recorded it; some tables may hold it already), but its input is not what "
            f"its first attempt read, so the other tables would get a different batch "
            f"{batch_id}:\n{listed}{more}",
            hint=FILES_WAY_OUT)

    def _check_kafka(self, batch_id: int, report: Reporter) -> None:
        assert isinstance(self.source, KafkaSource)
        spans = pending_spans(self.checkpoint, batch_id)
        if not spans:
            return
        if self._watermarks is not None:
            available = self._watermarks()
        else:
            from runner.sources.replay import broker_watermarks

            available = broker_watermarks(self.source)
        losses = kafka_losses(spans, available)
        if not losses:
            return
        if not self.source.fail_on_data_loss:
            report(ReplayWithoutOffsets(batch_id, tuple(loss.describe() for loss in losses)))
            return
        lines = "\n".join(f"  - {loss.describe()}" for loss in losses)
        raise ConfigError(
            f"batch {batch_id} must be replayed (the last run stopped before Spark's commit "
            f"log recorded it; some tables may hold it already), but the brokers no longer "
            f"hold all of its offsets, so the other tables would get a different batch "
            f"{batch_id} (fail_on_data_loss is true):\n{lines}",
            hint="set fail_on_data_loss: false to replay what is left (the tables that had "
                 "not committed the batch then lack the missing records), or start over with "
                 "`runner stream --full-refresh`; nothing was written")
