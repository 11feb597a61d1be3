"""``runner maintain``: keep a long-running pipeline's tables healthy, while it runs.

Streaming leaves a small file per table per batch and a commit per batch in every table's log.
Maintenance, per table (:mod:`runner.sinks.maintenance`): compact small files, vacuum
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

from collections.abc import Sequence

from runner.checkpoint.lock import MAINTENANCE, checkpoint_lock
from runner.checkpoint.query_id import read_query_id
from runner.console import plural
from runner.errors import CheckpointBusyError, ExecutionError
from runner.project.loader import Project
from runner.sinks.base import app_id
from runner.sinks.maintenance import MaintenanceReport, Target, maintain_tables
from runner.storage.objects import ObjectPath

__all__ = ["maintain", "report_lines"]

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
               if m.name in chosen and m.config.materialized != "kafka"]  # a topic: no table
    targets += [target(name, None) for name in sorted(failed) if name in chosen]
    if not select:
        targets.append(target(project.config.dead_letter, False))
    lock = checkpoint_lock(project.checkpoint, MAINTENANCE)
    try:
        lock.acquire(wait=wait)
    except CheckpointBusyError:
        raise ExecutionError(f"another maintenance of checkpoint {project.checkpoint} is "
                             f"running ({lock.holder()})",
                             hint="wait for it to finish, then run runner maintain again"
                             ) from None
    stream_lock = checkpoint_lock(project.checkpoint)
    try:
        try:
            stream_lock.acquire()
            streaming = False
        except ExecutionError:
            streaming = True  # a stream holds the checkpoint: no merge compaction
            _refuse_beside_delta_spark(project)
        return maintain_tables(project, targets, stream_running=streaming, in_stream=False)
    finally:
        stream_lock.release()
        lock.release()


def _refuse_beside_delta_spark(project: Project) -> None:
    """In an object store, delta-spark commits with a check then a plain PUT (its S3 log store
    is single-writer per table): a maintenance commit made beside a stream that writes with
    delta-spark could be overwritten, and a log checkpoint written for it would describe a
    state that never was. So there, only the stream itself (``maintenance.every_batches``)
    maintains its tables while it runs."""
    if isinstance(project.checkpoint, ObjectPath) and project.config.delta.engine != "rs":
        raise ExecutionError(
            f"a stream holds checkpoint {project.checkpoint} and may commit with delta-spark "
            f"(delta.engine: {project.config.delta.engine}), which is single-writer per table "
            "in an object store: nothing was maintained",
            hint="let the stream maintain its own tables (maintenance.every_batches or "
                 "every_minutes in project.yml), or run runner maintain while it is stopped")


def report_lines(report: MaintenanceReport) -> list[str]:
    """The text form of a report: one line per table, then the ledger's retained range."""
    lines = []
    for t in report.tables:
        compaction = (f"compacted {plural(t.files_compacted, 'file')} into {t.files_written}"
                      if t.compaction == "done" else t.compaction)
        line = (f"{t.name}: {compaction}; vacuumed {plural(t.files_vacuumed, 'file')} "
                f"({t.files_on_disk} left on disk); "
                f"{plural(t.log_files_expired, 'log file')} expired; "
                f"{plural(t.staging_dirs_removed, 'staging folder')} removed; "
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
