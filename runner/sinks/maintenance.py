"""Maintenance of Delta tables with delta-rs: compaction, vacuum, log checkpoint, log expiry and
the staging folders of committed batches. No Spark.

Each step is safe while the stream commits to the same table, given what :func:`maintain_tables`
and its callers guarantee around it (it never compacts a merge table while another process streams):

- **Compaction** (``optimize.compact``) rewrites small files into bigger ones in a commit that
  removes the old files and adds the new ones, with no data change. A concurrent append (the
  stream) commits fine after it, and delta-rs rebases a compaction over appends committed
  meanwhile. A concurrent MERGE conflicts with it (the merge read files the compaction
  removed), which is why merge tables are compacted only between batches.
- **Vacuum** deletes files that a commit removed (tombstones) and that no kept version needs:
  delta-rs plans it (a dry run, ``lite`` mode) and the files are deleted here, without the
  two log entries delta-rs' vacuum commits (a concurrent MERGE made those fail). In ``lite``
  mode, files that no commit names, i.e. the files Spark is staging for a batch in flight,
  are never touched. It keeps every file removed less than ``retention_hours`` ago
  (``maintenance.vacuum_retention_hours``, default 168 as Delta's own: readers that lag keep
  their files), and the files of every version a kept ledger entry names and of every
  version after the newest entry (a batch in flight may name one of them next, e.g. after a
  compaction committed between its sink commit and its entry), passed as ``keep_versions``
  (:func:`needed_versions` drops those whose files a later kept version has too).
- **Log checkpoint** (``create_checkpoint``): one Parquet file summing the log up to now, so
  readers and writers replay fewer commit files.
- **Log expiry**: commit files and checkpoints older than the newest checkpoint at or before
  the oldest kept version and older than the retention are deleted (Delta's own expiry waits
  30 days); every kept version, and every version committed within the retention, still
  loads from that checkpoint onwards.
- **Staging folders** (:mod:`runner.sinks.staged`): once a batch is committed its folder holds
  table files; when compaction and vacuum have removed them all, the empty folders go.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import DeltaError

from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.sinks.delta import open_delta
from runner.sinks.tables import is_table
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location, as_location, file_sizes, names

if TYPE_CHECKING:
    from runner.project.loader import Project

__all__ = ["MAINTENANCE_KEY", "MaintenanceFailure", "MaintenanceReport", "TableMaintenance",
           "Target", "expire_log", "log_size", "maintain_table", "maintain_tables", "prune_staging",
           "table_files"]

#: delta-rs' errors, as callers that must not know Delta catch them.
MaintenanceFailure = DeltaError

#: Commit-info key of every maintenance commit (``history()`` shows what did it).
MAINTENANCE_KEY = "runner.maintenance"

_DIGITS = 20


@dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did to one table."""

    name: str
    path: str
    version_before: int | None = None
    version_after: int | None = None
    files_before: int = 0  # active files (the latest version's)
    files_after: int = 0
    files_compacted: int = 0  # small files rewritten
    files_written: int = 0  # by compaction
    compaction: str = "done"  # done | skipped: <why> | failed: <error>
    files_vacuumed: int = 0  # data files deleted from storage
    files_on_disk: int = 0  # data files left in the table's folder (all versions')
    log_files_expired: int = 0
    staging_dirs_removed: int = 0
    checkpoint: int | None = None
    error: str | None = None
    seconds: float = 0.0


def table_files(table: DeltaTable) -> tuple[int, int]:
    """(active files, their total bytes) of the table's loaded version (no pyarrow import:
    delta-rs hands out arro3 tables)."""
    adds = table.get_add_actions(flatten=False)
    if adds.num_rows == 0:
        return 0, 0
    return adds.num_rows, int(sum(s for s in adds["size_bytes"].to_pylist() if s))


def data_files_on_disk(path: str | Location) -> set[str]:
    """Parquet files under the table's folder (its log aside): every version's files. Hidden
    ``_`` folders other than partitions (a CDC model's side tables: :mod:`runner.sinks.cdc`)
    are not the table's."""
    where = as_location(path)
    if isinstance(where, ObjectPath):
        return {f"{where}/{key}" for key in where.walk_keys()
                if key.endswith(".parquet") and not _hidden(key)}
    found: set[str] = set()
    for folder, dirs, files in os.walk(where):
        if folder == str(where):
            dirs[:] = [d for d in dirs if not _hidden(d + "/")]
        found.update(os.path.join(folder, f) for f in files if f.endswith(".parquet"))
    return found


def _hidden(key: str) -> bool:
    """``key`` (relative to a table) is under its log or another hidden ``_`` folder that is
    not a partition (a CDC model's side tables)."""
    first, sep, _ = key.partition("/")
    return bool(sep) and first.startswith("_") and "=" not in first


def log_size(path: str | Location) -> tuple[int, int]:
    """(files, bytes) in the table's ``_delta_log`` folder, its sub-folders left out (in a
    bucket too: delta-spark's ``_staged_commits/`` is a prefix there, which a HEAD finds
    absent)."""
    sizes = file_sizes(as_location(path) / "_delta_log")
    return len(sizes), sum(sizes.values())


def maintain_table(name: str, path: str, *, compact: bool | str, ledger: bool,
                 keep_versions: Sequence[int], keep_newer_than: int | None,
                 keep_from_version: int | None, app_id: str | None,
                 retention_hours: int) -> TableMaintenance:
    """Maintain one table; errors of a step are reported in the result, not raised.

    Args:
        compact: True to compact; a string says why compaction is skipped.
        ledger: whether the pipeline has a ledger; without one, vacuum keeps only by
            ``retention_hours``, not by the versions below.
        keep_versions: versions whose files vacuum must keep (those kept ledger entries name).
        keep_newer_than: vacuum also keeps this version and every later one (None: none).
        keep_from_version: the oldest version a kept ledger entry names (None: no log expiry).
        app_id: the sink's app id, whose committed batches' staging folders are pruned (None:
            leave them alone).
        retention_hours: vacuum keeps files removed less than this many hours ago, and log
            expiry the commits of that period.
    """
    run = _TableRun(name, path)
    run.compact(compact)
    run.vacuum(ledger, keep_versions, keep_newer_than, retention_hours)
    run.checkpoint()
    if keep_from_version is not None:
        run.expire_log(keep_from_version, retention_hours)
    if app_id is not None:
        run.prune_staging(app_id)
    return run.result()


class _TableRun:
    """One table's maintenance, step by step: each step records its numbers in ``out`` (the
    fields of :class:`TableMaintenance`) and its failure in ``errors``; none raises."""

    def __init__(self, name: str, path: str) -> None:
        self.name, self.path, self.where = name, path, as_location(path)
        self.started = time.perf_counter()
        self.table = open_delta(path)
        self.out: dict[str, Any] = {"version_before": self.table.version(),
                                    "files_before": table_files(self.table)[0]}
        self.errors: list[str] = []

    def compact(self, compact: bool | str) -> None:
        """Compact (``True``), or record why not."""
        if compact is not True:
            self.out["compaction"] = f"skipped: {compact}" if compact else "skipped"
            return
        tags = CommitProperties(custom_metadata={MAINTENANCE_KEY: "true"})
        try:
            metrics = self.table.optimize.compact(commit_properties=tags)
            self.out["files_compacted"] = int(metrics.get("numFilesRemoved", 0))
            self.out["files_written"] = int(metrics.get("numFilesAdded", 0))
        except DeltaError as e:  # a concurrent commit it cannot rebase over: next time
            self.out["compaction"] = f"failed: {_first_line(e)}"

    def vacuum(self, ledger: bool, keep_versions: Sequence[int], keep_newer_than: int | None,
               retention_hours: int) -> None:
        """Delete the files no kept version needs (without a ledger: by ``retention_hours``
        only), with no commit (:func:`delete_files`)."""
        on_disk = data_files_on_disk(self.path)
        try:
            self.table = open_delta(self.path)  # the latest version, compaction included
            current = self.table.version()
            newer = range(keep_newer_than, current + 1) if keep_newer_than is not None else ()
            keep = needed_versions(self.where, {*keep_versions, *newer}, current)
            plan = self.table.vacuum(retention_hours=retention_hours, dry_run=True,
                                     enforce_retention_duration=False,
                                     keep_versions=(keep or None) if ledger else None)
            delete_files(self.where, plan)
        except DeltaError as e:
            self.errors.append(f"vacuum: {_first_line(e)}")
        left = data_files_on_disk(self.path)
        self.out["files_on_disk"] = len(left)
        self.out["files_vacuumed"] = len(on_disk - left)

    def checkpoint(self) -> None:
        try:
            self.table = open_delta(self.path)
            self.table.create_checkpoint()
            self.out["checkpoint"] = self.table.version()
        except DeltaError as e:
            self.errors.append(f"checkpoint: {_first_line(e)}")

    def expire_log(self, keep_from_version: int, retention_hours: int) -> None:
        try:
            self.out["log_files_expired"] = expire_log(
                self.where, keep_from_version, older_than=time.time() - retention_hours * 3600)
        except OSError as e:
            self.errors.append(f"log expiry: {e}")

    def prune_staging(self, app_id: str) -> None:
        """Remove the staging folders of the batches the sink ``app_id`` has committed."""
        committed = self.table.transaction_version(app_id)
        if committed is None:
            return
        try:
            self.out["staging_dirs_removed"] = prune_staging(self.path, app_id, committed)
        except OSError as e:
            self.errors.append(f"staging folders: {e}")

    def result(self) -> TableMaintenance:
        table = open_delta(self.path)
        return TableMaintenance(name=self.name, path=self.path,
                                error="; ".join(self.errors) or None,
                                seconds=time.perf_counter() - self.started,
                                version_after=table.version(), files_after=table_files(table)[0],
                                **self.out)


def delete_files(table: Location, relative: Sequence[str]) -> int:
    """Delete the data files vacuum planned (paths relative to the table, as delta-rs gives
    them, percent-encoded or not); return how many were there.

    Vacuum plans in a dry run and the files are deleted here, with no commit: delta-rs'
    vacuum otherwise commits a VACUUM START and a VACUUM END entry, which a concurrent MERGE
    of the stream made fail ("a concurrent transaction deleted data this operation read").
    The log needs neither entry.
    """
    removed = 0
    for rel in relative:
        for candidate in dict.fromkeys((rel, unquote(rel))):
            target = table / candidate
            if candidate.startswith("_delta_log") or ".." in Path(candidate).parts:
                break
            try:
                target.unlink()
                removed += 1
                break
            except FileNotFoundError:
                continue
    return removed


def needed_versions(table: Location, versions: set[int], current: int) -> list[int]:
    """The fewest of ``versions`` whose files include the files of all of them.

    Between two kept versions ``a < b`` with no commit in ``(a, b]`` that removes a file,
    every file of ``a`` is still in ``b``: keeping ``b`` keeps ``a``'s files. Append tables
    remove files only when compacted, so a hundred kept versions come down to a handful
    (delta-rs replays the log once per kept version). A commit file that cannot be read counts
    as removing.
    """
    kept = sorted(v for v in versions if 0 <= v <= current)
    out = []
    for a, b in zip(kept, kept[1:]):
        if any(_removes(table, v) for v in range(a + 1, b + 1)):
            out.append(a)
    return out + kept[-1:]


def _removes(table: Location, version: int) -> bool:
    try:
        data = (table / "_delta_log" / f"{version:0{_DIGITS}d}.json").read_bytes()
    except OSError:
        return True
    return any(line.startswith(b'{"remove"') for line in data.splitlines())


def expire_log(table: Location, keep_from_version: int, *,
               older_than: float | None = None) -> int:
    """Delete log files that no version ``>= keep_from_version`` needs; return how many.

    Every version from the newest checkpoint at or before ``keep_from_version`` on loads from
    that checkpoint and the commit files after it: everything older goes. With
    ``older_than`` (a time), only a checkpoint whose commit was written before it counts, so
    every commit since then stays (a reader that lags reads on from where it is). Without
    such a checkpoint nothing is deleted.
    """
    log = table / "_delta_log"
    listed = names(log)
    checkpoints = sorted({int(n.split(".", 1)[0]) for n in listed
                          if ".checkpoint." in n and n.split(".", 1)[0].isdigit()})
    base = max((c for c in checkpoints if c <= keep_from_version
                and (older_than is None or _written(log, c) < older_than)), default=None)
    if base is None:
        return 0
    last = _last_checkpoint(log)
    if last is None or last < base:
        return 0  # _last_checkpoint must name a checkpoint that stays
    removed = 0
    for n in listed:
        head = n.lstrip(".").split(".", 1)[0]
        if head.isdigit() and len(head) == _DIGITS and int(head) < base:
            try:
                (log / n).unlink()
                removed += 1
            except FileNotFoundError:
                pass
    return removed


def _written(log: Location, version: int) -> float:
    """When ``version`` was committed (its commit file's mtime; the checkpoint's when the
    commit file is gone)."""
    for name in (f"{version:0{_DIGITS}d}.json", f"{version:0{_DIGITS}d}.checkpoint.parquet"):
        try:
            return (log / name).stat().st_mtime
        except OSError:
            continue
    return float("inf")  # unknown: never old enough


def _last_checkpoint(log: Location) -> int | None:
    try:
        return int(json.loads((log / "_last_checkpoint").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def prune_staging(table_path: str, app_id: str, committed_batch: int) -> int:
    """Remove the empty folders of committed batches under ``<table>/batches/<app id>/``.

    Folders of batches after ``committed_batch`` (in flight, or crashed and waiting for their
    replay) are left alone, and so is every file: a committed batch's files are table files
    until a vacuum deletes them.
    """
    from runner.sinks.staged import staging_path  # (pyarrow: only when pruning)

    app_dir = as_location(staging_path(table_path, app_id, 0)).parent
    if isinstance(app_dir, ObjectPath) or not app_dir.is_dir():
        return 0  # an object store has no empty folders to remove
    removed = 0
    for batch_dir in app_dir.iterdir():
        if not (batch_dir.name.isdigit() and int(batch_dir.name) <= committed_batch):
            continue
        for walked, _dirs, files in os.walk(batch_dir, topdown=False):
            if not files and not os.listdir(walked):
                os.rmdir(walked)
                removed += 1
    return removed  # batches/<app id>/ stays: Spark creates the next batch's folder in it


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


_MERGE_WHILE_STREAMING = ("merge table while a stream runs: compacted between batches by the "
                          "stream's own maintenance, or by runner maintain when none runs")


@dataclass(frozen=True)
class Target:
    """A table to maintain: its name, path, app id (None: unknown) and whether it is merged."""

    name: str
    path: str
    app_id: str | None
    merge: bool | None  # None: unknown (its model did not compile): treated as a merge


@dataclass(frozen=True)
class MaintenanceReport:
    tables: tuple[TableMaintenance, ...]
    stream_running: bool
    ledger_pruned: int
    oldest_batch: int | None  # the oldest batch `runner snapshot --batch` still serves
    latest_batch: int | None
    seconds: float
    vacuum_retention_hours: int = 168  # removed files kept this long (maintenance config)

    def to_dict(self) -> dict[str, object]:
        return {"stream_running": self.stream_running, "ledger_pruned": self.ledger_pruned,
                "vacuum_retention_hours": self.vacuum_retention_hours,
                "oldest_batch": self.oldest_batch, "latest_batch": self.latest_batch,
                "seconds": round(self.seconds, 3),
                "tables": {t.name: {k: v for k, v in vars(t).items() if k != "name"}
                           for t in self.tables}}


def maintain_tables(project: Project, targets: Sequence[Target], *, stream_running: bool,
                    in_stream: bool) -> MaintenanceReport:
    """The maintenance itself, the caller holding the maintenance lock (and, when no
    stream runs and this is not the stream, the checkpoint lock)."""
    started = time.perf_counter()
    ledger = Ledger(project.checkpoint)
    ids = ledger.batch_ids()
    pruned = 0
    kept: list[LedgerEntry] = []
    if ids:
        first_kept = ids[-1] - project.config.maintenance.keep_batches + 1
        pruned = ledger.prune(below=first_kept)  # before vacuum: never serve a vacuumed cut
        kept = [e for e in (ledger.get(i) for i in ids if i >= first_kept) if e is not None]
    oldest, latest = (kept[0], kept[-1]) if kept else (None, None)
    retention = project.config.maintenance.vacuum_retention_hours
    results = []
    for t in targets:
        if not is_table(t.path):
            continue
        compact: bool | str = True
        if stream_running and not in_stream and t.merge is not False:
            compact = _MERGE_WHILE_STREAMING
        named = [v for v in (e.tables.get(t.name) for e in kept) if v is not None]
        newest = latest.tables.get(t.name) if latest is not None else None
        results.append(maintain_table(
            t.name, t.path, compact=compact, ledger=latest is not None, keep_versions=named,
            # versions after the newest entry's: a batch in flight may name them next (a table
            # it creates is in no entry yet: all of its versions)
            keep_newer_than=(newest if newest is not None else 0) if latest else None,
            keep_from_version=named[0] if named else None, app_id=t.app_id,
            retention_hours=retention))
    return MaintenanceReport(tables=tuple(results), stream_running=stream_running,
                             vacuum_retention_hours=retention,
                             ledger_pruned=pruned,
                             oldest_batch=oldest.batch_id if oldest else None,
                             latest_batch=latest.batch_id if latest else None,
                             seconds=time.perf_counter() - started)
