"""A table's state for reports (``runner status``), read with delta-rs, no Spark: its last
batch (application transaction), version, files and log size, and its dead letters.

Errors are reported, not raised: a status report shows what it can of every table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deltalake import DeltaTable

from runner.sinks.delta import open_delta
from runner.sinks.maintenance import log_size, table_files
from runner.sinks.tables import is_table
from runner.storage.ops import Location

__all__ = ["DeltaTable", "TableState", "dead_letter_rows", "open_table", "table_state"]


@dataclass(frozen=True)
class TableState:
    exists: bool
    last_batch: int | None = None
    version: int | None = None
    files: int = 0
    size: int = 0
    log_files: int = 0
    log_bytes: int = 0
    error: str | None = None


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0][:500] if str(e) else type(e).__name__


def open_table(path: str, version: int | None = None) -> DeltaTable:
    """The table at ``path`` opened with delta-rs (at ``version``, or its latest)."""
    return open_delta(path) if version is None else open_delta(path, version)


def table_state(path: str, app_id: str | None) -> TableState:
    """The table's state; ``last_batch`` is ``app_id``'s transaction version (None: unknown)."""
    from deltalake.exceptions import DeltaError, TableNotFoundError

    try:  # a store that fails is this table's problem: the report shows the others
        if not is_table(path):
            return TableState(False)
        log_files, log_bytes = log_size(path)
    except OSError as e:  # StorageError: names the location and the cause
        return TableState(True, error=_first_line(e))
    try:
        table = open_table(path)
        files, size = table_files(table)
        last = table.transaction_version(app_id) if app_id else None
        return TableState(True, last, table.version(), files, size, log_files, log_bytes)
    except (DeltaError, TableNotFoundError, OSError) as e:
        return TableState(True, log_files=log_files, log_bytes=log_bytes, error=_first_line(e))


def dead_letter_rows(path: str | Location, *, from_batch: int
                     ) -> tuple[list[Any], list[Any]] | str:
    """``(batch ids, reasons)`` of the dead letters of batches ``>= from_batch``, or an error
    message. One SQL query through delta-rs (DataFusion), which reads only the files whose
    ``_batch_id`` statistics reach into those batches (no pyarrow import)."""
    from deltalake import QueryBuilder
    from deltalake.exceptions import DeltaError

    if not is_table(path):
        return [], []
    try:
        rows = QueryBuilder().register("dead", open_table(str(path))).execute(
            f"SELECT _batch_id, reason FROM dead WHERE _batch_id >= {int(from_batch)}"
        ).read_all()
        return list(rows["_batch_id"].to_pylist()), list(rows["reason"].to_pylist())
    except (DeltaError, OSError, KeyError, ValueError) as e:
        return _first_line(e)
