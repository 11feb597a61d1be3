"""Open delta-rs tables kept current between batches, instead of reopened for each look.

Opening a table (:func:`runner.sinks.delta.open_delta`) replays its log from the last
checkpoint: every commit since (up to 100 on a delta-rs table, ``delta.checkpointInterval``) is
listed and read, each time. A stream looks at each of its tables a few times per batch (is this
batch committed? append, read the version back), so the writers keep one open table per path
and bring it up to date with ``update_incremental()``, which reads only the commits made since:
once a log holds tens of commits an open costs several times an incremental read, and a stream
at a steady rate (``bench.kafka_bench --only rate``) spent more of its sink threads' time
opening tables than committing to them (docs/KAFKA.md).

A table kept open must still be the table at that path: a table dropped and written again
(``--full-refresh``, a rebuild) starts its versions again at 0, and an incremental update of
the old state would see none of the new table's commits (and would answer that its batches
are committed: data lost). The writers forget a path they drop (:meth:`OpenTables.forget`);
as a second guard every use compares the first commit file's identity (inode, size, mtime)
with what it was when the table was opened, and opens the table afresh when it differs or is
gone (a log cleaned up past its retention: correct, only the saving is lost). The price is
memory: each table's state (its file list) stays in the driver between batches, where it
used to be loaded and dropped at each look.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from deltalake.exceptions import DeltaError

from runner.sinks.delta import open_if_table
from runner.storage.ops import as_location

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["OpenTables"]

_FIRST_COMMIT = f"_delta_log/{0:020d}.json"


def _identity(path: str) -> tuple[int, int, int] | None:
    """(inode, size, mtime ns) of the table's commit 0; None when there is none."""
    try:
        st = (as_location(path) / _FIRST_COMMIT).stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class OpenTables:
    """One open :class:`DeltaTable` per path, current at each :meth:`get`.

    A table object is used by one thread at a time: a batch writes each table from one
    thread (one sink per path), and between batches only the stream's thread looks.
    """

    def __init__(self) -> None:
        self._tables: dict[str, tuple[DeltaTable, tuple[int, int, int]]] = {}
        self._lock = threading.Lock()

    def get(self, path: str) -> DeltaTable | None:
        """The table at ``path`` at its latest version; None when there is no table yet."""
        identity = _identity(path)
        with self._lock:
            kept = self._tables.get(path)
        if kept is not None and identity is not None and kept[1] == identity:
            table = kept[0]
            try:
                table.update_incremental()
                return table
            except (DeltaError, OSError):  # e.g. commits cleaned up meanwhile: open afresh
                self.forget(path)
        opened = open_if_table(path)  # the location's storage options (runner.sinks.delta)
        if opened is None:
            self.forget(path)
            return None
        if identity is not None:
            with self._lock:
                self._tables[path] = (opened, identity)
        return opened

    def forget(self, path: str) -> None:
        """Drop what is kept for ``path`` (the table was dropped, or a write on it failed)."""
        with self._lock:
            self._tables.pop(path, None)
