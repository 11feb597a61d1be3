"""A folder of one JSON file per batch (the ledger, the pins, input records, Kafka offsets),
on local disk or in an object store: the writes themselves are :mod:`runner.storage.ops`'s."""

from __future__ import annotations

from runner.storage import fence
from runner.storage.ops import Location, names

__all__ = ["BatchFiles"]


class BatchFiles:
    """``<batch id>.json`` files in one folder, the id zero-padded as wide as Delta's commit
    file names so the names sort as the numbers do.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from runner.storage.ops import write_atomic
    >>> files = BatchFiles(Path(tempfile.mkdtemp()) / "ledger")
    >>> files.ids()
    []
    >>> files.folder.mkdir(); write_atomic(files.path(7), "{}"); files.path(7).name
    '00000000000000000007.json'
    >>> files.ids(), files.prune(below=8), files.ids()
    ([7], 1, [])
    """

    DIGITS = 20

    def __init__(self, folder: Location) -> None:
        self.folder = folder

    def path(self, batch_id: int) -> Location:
        return self.folder / f"{batch_id:0{self.DIGITS}d}.json"

    def ids(self) -> list[int]:
        """Batch ids with a file, ascending (one listing)."""
        return sorted(int(n[:-5]) for n in names(self.folder)
                      if n.endswith(".json") and n[:-5].isdigit())

    def prune(self, below: int) -> int:
        """Delete the files of batches ``< below``; return how many there were. Deletes pass
        the checkpoint's fence as writes do (:mod:`runner.storage.fence`)."""
        fence.check(self.folder)
        removed = 0
        for batch_id in self.ids():
            if batch_id >= below:
                break
            self.path(batch_id).unlink(missing_ok=True)
            removed += 1
        return removed
