"""What a Delta table holds, read without Spark: whether it exists, its version (from the log's
file names alone), its rows (with delta-rs), row counts and sample rows.

A Delta commit ``N`` is the file ``_delta_log/<N>.json`` (20 digits), created atomically, so the
current version is the last of an unbroken run of commit files after a known one (a version
seen before, or the log checkpoint named by ``_last_checkpoint``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import ConfigError
from runner.project.loader import Project
from runner.sinks.delta import open_delta
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location, as_location, names

__all__ = ["STAGING_DIR", "TableInfo", "batch_versions", "check_droppable", "columns_at",
           "commit_time", "current_version", "read_version", "table_version", "version_problem",
           "describe_tables", "is_table", "last_batch_at", "not_a_table", "read_table",
           "sample_rows", "versions_of"]

_DIGITS = 20  # the width of Delta's commit file names
#: The rs engine's staging folder inside a table (:mod:`runner.sinks.staged`).
STAGING_DIR = "batches"
#: What may sit in a table's folder before its first Delta commit (a crashed first write):
#: Parquet data and checksum files, partition folders, the staging folder, hidden and
#: ``_``-prefixed entries (``_delta_log``, ``.part-*.crc``).
_TABLE_DATA = re.compile(rf"[._].*|.*\.parquet|.*\.crc|[^/]*=[^/]*|{STAGING_DIR}")


@dataclass(frozen=True)
class TableInfo:
    name: str
    path: str
    exists: bool
    rows: int = 0
    version: int | None = None
    columns: tuple[str, ...] = ()
    sample: tuple[dict[str, Any], ...] = ()


def is_table(path: str | Location) -> bool:
    """Whether ``path`` holds a Delta table (its ``_delta_log`` folder exists)."""
    return (as_location(path) / "_delta_log").is_dir()


def not_a_table(path: str | Location) -> str | None:
    """Why the existing ``path`` is not a folder the runner may drop and recreate as a table
    (None: no such path, a Delta table, or the data files of a first write that crashed).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "part-0.parquet").write_text(""); not_a_table(d) is None
    True
    >>> _ = (d / "notes.txt").write_text("mine"); not_a_table(d)
    "holds files that are not a Delta table's (notes.txt)"
    """
    path = as_location(path)
    if isinstance(path, ObjectPath):
        if path.is_file():
            return "is a file"
    elif not path.exists():
        return None
    elif not path.is_dir():
        return "is a file"
    if is_table(path):
        return None
    strangers = [n for n in names(path) if not _TABLE_DATA.fullmatch(n)]
    if strangers:
        return f"holds files that are not a Delta table's ({', '.join(strangers[:3])})"
    return None


def check_droppable(paths: Mapping[str, str | Location]) -> None:
    """Refuse, before anything is deleted, to drop a table folder (``--full-refresh``, a
    rebuild) that holds something else than a table: ``warehouse: /`` with a model ``home``.

    Raises:
        ConfigError: names the model, the folder and what is in it (exit 2).
    """
    for model, path in paths.items():
        why = not_a_table(path)
        if why is not None:
            raise ConfigError(
                f"the table of model {model} would be dropped at {as_location(path).resolve()}, "
                f"which {why}",
                hint="point warehouse at a folder that holds only this pipeline's tables, or "
                     "rename the model; nothing was deleted")


def read_table(path: str) -> Any:
    """A Delta table as a pyarrow Table, read through the dataset: ``to_pyarrow_table()`` made
    the interpreter abort at exit (exit 134) in most runs with deltalake 1.6.6 and pyarrow 26."""

    return open_delta(path).to_pyarrow_dataset().to_table(use_threads=False)


def describe_tables(project: Project, *, limit: int = 3) -> list[TableInfo]:
    """Every enabled model's table plus the dead-letter table, in name order."""
    from deltalake.exceptions import TableNotFoundError

    names = [m.name for m in project.models] + [project.config.dead_letter]
    out = []
    for name in names:
        path = str(project.table_path(name))
        try:
            table = open_delta(path)
        except TableNotFoundError:
            out.append(TableInfo(name, path, exists=False))
            continue
        dataset = table.to_pyarrow_dataset()
        # no Arrow I/O threads either: they call back into Python (see sample_rows)
        rows = dataset.count_rows(use_threads=False)
        out.append(TableInfo(name, path, True, rows, table.version(),
                             tuple(dataset.schema.names), tuple(sample_rows(dataset, limit))))
    return out


def sample_rows(dataset: Any, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rows of a delta-rs ``pyarrow.dataset``, read one Parquet row group
    at a time, each read to its end.

    Not ``dataset.head(limit)``: it returns once it has the rows and leaves the read-ahead of
    the next files running on Arrow's I/O threads, which call back into Python (delta-rs'
    file handler); one still running while the interpreter finalises crashes the process at
    exit (issue 47: ``runner show`` on S3 exited 139 once a table held several files).
    """
    rows: list[dict[str, Any]] = []
    for fragment in dataset.get_fragments() if limit > 0 else ():
        for group in fragment.split_by_row_group():
            part = group.to_table(schema=dataset.schema, use_threads=False)
            rows.extend(part.slice(0, limit - len(rows)).to_pylist())
            if len(rows) >= limit:
                return rows
    return rows


def _commit_file(table: Location, version: int) -> Location:
    return table / "_delta_log" / f"{version:0{_DIGITS}d}.json"


def _last_checkpoint(table: Location) -> int | None:
    try:
        return int(json.loads((table / "_delta_log" / "_last_checkpoint").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def current_version(table: Location, *, at_least: int | None = None) -> int | None:
    """The table's latest committed version, or None when it has no commit yet.

    Probes commit files forward from the highest known version: ``at_least`` (a version known
    to exist, e.g. the previous ledger entry's) or the log checkpoint's; lists the log only
    when neither is known (or its commit file is gone: log cleanup).
    """
    start = max((v for v in (at_least, _last_checkpoint(table)) if v is not None), default=None)
    if start is None or not _commit_file(table, start).exists():
        return _listed_version(table)
    version = start
    while _commit_file(table, version + 1).exists():
        version += 1
    return version


def _listed_version(table: Location) -> int | None:
    """The highest commit number in the table's log (a directory listing)."""
    return max((int(n[:-5]) for n in names(table / "_delta_log")
                if n.endswith(".json") and n[:-5].isdigit()), default=None)


def versions_of(tables: Mapping[str, Location], *,
                known: Mapping[str, int | None] | None = None) -> dict[str, int | None]:
    """Current version of each table (name -> path), probing from ``known`` versions."""
    known = known or {}
    return {name: current_version(path, at_least=known.get(name))
            for name, path in tables.items()}


def batch_versions(table: Location, app_id: str) -> tuple[int, dict[int, int]] | None:
    """The table's latest version, and commit version -> the batch id of ``app_id``'s
    transaction in it for every commit that has one; None when there is no table or its log
    no longer starts at version 0 (cleaned up: commits of unknown batches may be missing)."""
    commits = sorted(int(n[:-5]) for n in names(table / "_delta_log")
                     if n.endswith(".json") and n[:-5].isdigit())
    if not commits or commits[0] != 0:
        return None
    found: dict[int, int] = {}
    for version in commits:
        for txn in _transactions(table, version):
            if txn.get("appId") == app_id:
                found[version] = int(txn["version"])
    return commits[-1], found


def last_batch_at(table: Location, app_id: str, version: int) -> int | None:
    """The batch id of ``app_id``'s latest transaction in the table's commits up to
    ``version``: the last batch that version holds; None when no commit up to it has one, or
    the commit files that would tell are gone (log cleanup)."""
    for v in range(version, -1, -1):
        try:
            found = [int(t["version"]) for t in _transactions(table, v)
                     if t.get("appId") == app_id]
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None
        if found:
            return max(found)
    return None


def _transactions(table: Location, version: int) -> list[dict[str, Any]]:
    """The ``txn`` actions (application transactions) of commit ``version``.

    Raises:
        FileNotFoundError: the commit file is gone (log cleanup).
    """
    text = _commit_file(table, version).read_text(encoding="utf-8")
    actions = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [a["txn"] for a in actions if isinstance(a.get("txn"), dict)]


def recent_app_ids(table: Location, *, commits: int = 20) -> set[str]:
    """The application ids of the transactions in the table's newest ``commits`` commits (a
    table written by the runner: ``<pipeline>.<model>.<query id>``); empty when none."""
    newest = current_version(table)
    found: set[str] = set()
    for version in range(newest if newest is not None else -1, -1, -1):
        if newest is not None and version <= newest - commits:
            break
        try:
            found |= {t["appId"] for t in _transactions(table, version)
                      if isinstance(t.get("appId"), str)}
        except FileNotFoundError:
            break  # log cleanup: older commits are gone
    return found


def version_problem(path: str, version: int) -> str | None:
    """Why version ``version`` of the Delta table at ``path`` can no longer be read (its commit
    gone from the log, or a data file of it deleted by vacuum), or None when it can be. Data
    files are checked on local paths only (a URI's are found missing by the read itself)."""

    try:
        table = open_delta(path, version)
    except Exception as e:  # noqa: BLE001 - delta-rs raises several kinds for a cleaned log
        return f"its log no longer has version {version} ({str(e).splitlines()[0][:200]})"
    for uri in table.file_uris():
        local = uri[len("file://"):] if uri.startswith("file://") else uri
        if "://" not in local and not os.path.exists(local):
            return (f"a data file of version {version} was deleted (vacuumed): "
                    f"{Path(local).name}")
    return None


def columns_at(path: str, version: int | None = None) -> tuple[str, ...]:
    """The column names of the Delta table at ``path`` (its latest version, or ``version``)."""

    table = open_delta(path) if version is None else open_delta(path, version)
    return tuple(f.name for f in table.schema().fields)


def read_version(path: str, version: int) -> Any:
    """Version ``version`` of the Delta table at ``path`` as a pyarrow Table (see
    :func:`read_table` for why through the dataset)."""

    return open_delta(path, version).to_pyarrow_dataset().to_table(use_threads=False)


def commit_time(table: Location, version: int) -> float | None:
    """When ``version`` of the table was committed (epoch seconds: the commit's own timestamp,
    else its file's modification time), or None when its commit file is gone."""
    path = _commit_file(table, version)
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            info = json.loads(line).get("commitInfo") if line.strip() else None
            if info and isinstance(info.get("timestamp"), int):
                return float(info["timestamp"]) / 1000
        return path.stat().st_mtime
    except (OSError, ValueError):
        return None


def table_version(path: str) -> int | None:
    """The latest committed version of the Delta table at ``path`` (a local path: from the
    log's file names; a URI: through delta-rs), or None when there is no table."""
    if "://" not in path or path.startswith("file://"):
        return current_version(Path(path.removeprefix("file://")))
    loc = as_location(path)
    if isinstance(loc, ObjectPath):
        return current_version(loc)

    try:
        return int(open_delta(path).version())
    except Exception:  # noqa: BLE001 - delta-rs: no table there (TableNotFoundError, OSError)
        return None
