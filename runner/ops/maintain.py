"""``runner maintain``: keep a long-running pipeline's tables healthy, while it runs.

Streaming leaves a small file per table per batch and a commit per batch in every table's log.
Maintenance, per table (:func:`runner.sinks.upkeep.upkeep_table`): compact small files, vacuum
what no kept snapshot needs, write a log checkpoint, expire old log files, and remove the empty
staging folders of committed batches. Before that, ledger entries older than the
``maintenance.keep_batches`` newest are dropped: those batches are no longer offered by
``runner snapshot``, and vacuum keeps every version the remaining entries name.

Safe while the stream runs, with two rules:

- One maintenance at a time per checkpoint (``<checkpoint>/maintain.lock``): ``runner
  maintain`` waits for one the stream runs between batches, and the stream skips its turn
  while ``runner maintain`` works.
- A MERGE conflicts with a compaction committed while it runs (both rewrite the same files),
  and the stream would fail on it. So ``runner maintain`` takes the checkpoint's lock for the
  duration when no stream holds it (a stream starting meanwhile is refused, naming this
  process) and compacts every table; when a stream holds it, it compacts append tables and
  the dead-letter table only (appends commit fine over a compaction), and merge tables are
  left to the stream's own maintenance between batches (``maintenance.every_batches`` /
  ``every_minutes``), where nothing else commits to them. Vacuum, log checkpoints and log
  expiry never conflict with the stream's commits.

Nothing here starts Spark.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from runner.errors import ExecutionError
from runner.project.loader import Project
from runner.runtime.checkpoint import CheckpointLock, read_query_id
from runner.sinks.base import app_id
from runner.sinks.ledger import Ledger, LedgerEntry
from runner.sinks.upkeep import TableUpkeep, upkeep_table

__all__ = ["MaintenanceLock", "MaintenanceReport", "Target", "maintain", "maintain_tables",
           "report_lines"]

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
    tables: tuple[TableUpkeep, ...]
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


class MaintenanceLock:
    """``<checkpoint>/maintain.lock``: one maintenance at a time (flock, freed on death)."""

    FILE = "maintain.lock"

    def __init__(self, checkpoint: Path) -> None:
        self.path = Path(checkpoint) / self.FILE
        self._handle: IO[str] | None = None

    def acquire(self, *, wait: float = 0.0) -> bool:
        """Take the lock, waiting up to ``wait`` seconds; False when still held by another.

        Raises:
            ExecutionError: the checkpoint directory cannot be created or written.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+")
        except OSError as e:
            raise ExecutionError(f"cannot use checkpoint directory {self.path.parent}: "
                                 f"{e.strerror or type(e).__name__}",
                                 hint="point `checkpoint:` in project.yml at a directory "
                                      "this user can write") from e
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.close()
                    return False
                time.sleep(0.2)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since "
                     f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        handle.flush()
        self._handle = handle
        return True

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "another process"
        except OSError:
            return "another process"

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def maintain(project: Project, *, select: Sequence[str] = (),
             wait: float = 120.0) -> MaintenanceReport:
    """Maintain the selected models' tables (all, plus the dead-letter table, by default).

    Raises:
        ConfigError: a selector matches nothing.
        ExecutionError: another maintenance held the lock for longer than ``wait`` seconds.
    """
    from runner.compile.render import render_models
    from runner.compile.selection import select_names

    rendered, failed = render_models(project)  # configs only: no lint, no JVM
    enabled = [m for m in rendered if m.config.enabled]
    edges: dict[str, list[str]] = {m.name: list(m.refs) for m in enabled}
    edges.update({name: [] for name in failed})
    chosen = set(select_names(select, edges=edges, tags={m.name: list(m.config.tags)
                                                          for m in enabled}))
    query_id = read_query_id(project.checkpoint)

    def target(name: str, merge: bool | None) -> Target:
        return Target(name, str(project.table_path(name)),
                      app_id(project.config.name, name, query_id) if query_id else None, merge)

    targets = [target(m.name, m.config.materialized == "merge") for m in enabled
               if m.name in chosen]
    targets += [target(name, None) for name in sorted(failed) if name in chosen]
    if not select:
        targets.append(target(project.config.dead_letter, False))
    lock = MaintenanceLock(project.checkpoint)
    if not lock.acquire(wait=wait):
        raise ExecutionError(f"another maintenance of checkpoint {project.checkpoint} is "
                             f"running ({lock.holder()})",
                             hint="wait for it to finish, then run runner maintain again")
    stream_lock = CheckpointLock(project.checkpoint)
    try:
        try:
            stream_lock.acquire()
            streaming = False
        except ExecutionError:
            streaming = True  # a stream holds the checkpoint: no merge compaction
        return maintain_tables(project, targets, stream_running=streaming, in_stream=False)
    finally:
        stream_lock.release()
        lock.release()


def maintain_tables(project: Project, targets: Sequence[Target], *, stream_running: bool,
                    in_stream: bool) -> MaintenanceReport:
    """The maintenance itself, the caller holding :class:`MaintenanceLock` (and, when no
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
        if not (Path(t.path) / "_delta_log").is_dir():
            continue
        compact: bool | str = True
        if stream_running and not in_stream and t.merge is not False:
            compact = _MERGE_WHILE_STREAMING
        named = [v for v in (e.tables.get(t.name) for e in kept) if v is not None]
        newest = latest.tables.get(t.name) if latest is not None else None
        results.append(upkeep_table(
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


def report_lines(report: MaintenanceReport) -> list[str]:
    """The text form of a report: one line per table, then the ledger's retained range."""
    lines = []
    for t in report.tables:
        compaction = (f"compacted {t.files_compacted} files into {t.files_written}"
                      if t.compaction == "done" else t.compaction)
        line = (f"{t.name}: {compaction}; vacuumed {t.files_vacuumed} files "
                f"({t.files_on_disk} left on disk); "
                f"{t.log_files_expired} log files expired; "
                f"{t.staging_dirs_removed} staging folders removed; "
                f"files {t.files_before} -> {t.files_after}, version {t.version_before} -> "
                f"{t.version_after}, checkpoint {t.checkpoint} ({t.seconds:.1f}s)")
        if t.error:
            line += f"\n    problem: {t.error}"
        lines.append(line)
    if not report.tables:
        lines.append("no tables yet: nothing to maintain")
    retained = ("no snapshots yet" if report.latest_batch is None else
                f"snapshots retained for batches {report.oldest_batch}..{report.latest_batch}")
    lines.append(f"{retained}; {report.ledger_pruned} older ledger entries dropped; "
                 f"vacuum retention {report.vacuum_retention_hours} h; "
                 f"stream {'running' if report.stream_running else 'not running'}; "
                 f"{report.seconds:.1f}s")
    return lines
