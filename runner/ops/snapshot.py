"""Consistent multi-table snapshots: the pipeline's tables as of one batch.

``snapshot(project_dir)`` names, for the latest batch complete in every table (or batch
``N``), each table's path and the Delta version that holds exactly the batches up to it (from
the batch ledger, :mod:`runner.checkpoint.ledger`). Reading every table at its version is a
consistent cut: no table shows a batch that another does not. Any Delta reader can time
travel by version (docs/SNAPSHOTS.md has recipes for delta-rs, Polars, DuckDB and Spark)::

    snap = runner.snapshot("path/to/project")
    logs = DeltaTable(snap.path("request_logs"), version=snap.version("request_logs"))

No Spark, no table opened: one directory listing and one small file read.

A model parked at that batch (its SQL failed, ``on_model_error: park``) is listed with
``parked_since``: k, as the batch's ledger entry says; its version then holds its batches
before k only (its last good batch): the cut is consistent for every other table and that one
lags, until the fixed model catches up: that catch-up restates the entries it covers
(:mod:`runner.runtime.restate`), which then name the version holding exactly their batches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.errors import ConfigError, ExecutionError
from runner.project.loader import Project, load_project

if TYPE_CHECKING:
    from runner.sinks.inspect import DeltaTable

__all__ = ["Snapshot", "TableVersion", "snapshot", "snapshot_of"]


@dataclass(frozen=True)
class TableVersion:
    """One table of a snapshot: where it is, and the version to read (None: no table yet)."""

    path: str
    version: int | None
    parked_since: int | None = None  # parked from this batch: the version holds batches before


@dataclass(frozen=True)
class Snapshot:
    """Every table of the pipeline as of batch ``batch_id``."""

    batch_id: int
    tables: Mapping[str, TableVersion] = field(hash=False)
    written_at: str | None = None

    def path(self, table: str) -> str:
        return self._table(table).path

    def version(self, table: str) -> int | None:
        return self._table(table).version

    def delta_table(self, table: str) -> DeltaTable | None:
        """The table opened at its snapshot version with delta-rs (None: no table yet)."""
        from runner.sinks.inspect import open_table

        t = self._table(table)
        return None if t.version is None else open_table(t.path, t.version)

    def to_dict(self) -> dict[str, Any]:
        """``{"batch_id": N, "tables": {name: {"path": ..., "version": V}}}``, with
        ``"parked_since": k`` for a parked table."""
        return {"batch_id": self.batch_id,
                "tables": {name: {"path": t.path, "version": t.version,
                                  **({"parked_since": t.parked_since}
                                     if t.parked_since is not None else {})}
                           for name, t in self.tables.items()}}

    def _table(self, table: str) -> TableVersion:
        try:
            return self.tables[table]
        except KeyError:
            from runner.errors import did_you_mean

            raise ConfigError(f"no table '{table}' in the snapshot of batch {self.batch_id}"
                              + did_you_mean(table, self.tables)) from None


def snapshot(project_dir: str | os.PathLike[str] = ".", batch: int | None = None) -> Snapshot:
    """The latest consistent snapshot of a project's tables (or the one of batch ``batch``).

    Raises:
        ConfigError: no project there.
        ExecutionError: no batch is complete yet, or batch ``batch`` is not retained.
    """
    return snapshot_of(load_project(project_dir), batch=batch)


def snapshot_of(project: Project, *, batch: int | None = None) -> Snapshot:
    """:func:`snapshot` for a loaded project."""
    ledger = Ledger(project.checkpoint)
    ids = ledger.batch_ids()
    if not ids:
        raise ExecutionError(f"no batch has completed in every table yet (no ledger entries "
                             f"under {ledger.folder})",
                             hint="run `runner stream`; a snapshot exists once a batch has "
                                  "committed every table")
    wanted = ids[-1] if batch is None else batch
    entry = ledger.get(wanted)
    if entry is None:
        if wanted < ids[0]:
            raise ExecutionError(f"batch {wanted} is no longer retained (the oldest retained "
                                 f"batch is {ids[0]}; `runner maintain` vacuums older "
                                 "versions)",
                                 hint="raise maintenance.keep_batches in project.yml to keep "
                                      "more batches readable")
        raise ExecutionError(f"batch {wanted} is not complete in every table (the latest "
                             f"complete batch is {ids[-1]})")
    return _from_entry(project, entry)


def _from_entry(project: Project, entry: LedgerEntry) -> Snapshot:
    tables = {name: TableVersion(str(Path(project.table_path(name))), version,
                                 entry.parked.get(name))
              for name, version in entry.tables.items()}
    return Snapshot(batch_id=entry.batch_id, tables=tables, written_at=entry.written_at)


def snapshot_lines(snap: Snapshot) -> list[str]:
    """The text form: the batch, then one line per table (name, version, path)."""
    width = max((len(n) for n in snap.tables), default=0)
    lines = [f"batch {snap.batch_id}" + (f" (complete at {snap.written_at})"
                                         if snap.written_at else "")]
    for name, t in snap.tables.items():
        version = "no table yet" if t.version is None else f"version {t.version}"
        lines.append(f"  {name:<{width}}  {version:<14} {t.path}"
                     + (f"  (parked since batch {t.parked_since}: holds batches before it "
                        "only)" if t.parked_since is not None else ""))
    return lines
