"""The one way the runner writes a file under the checkpoint (and target/, the docs site):
write a temporary file next to the final name, then rename or link it into place, so a reader
(or a crash) sees the old content or the new, never a part.

Temporary names are ``.<name>.<pid>.tmp``: hidden (Spark skips names starting with ``.``),
unique per process, and left behind only by a crash, where the next write replaces them.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["BatchFiles", "fsync_dir", "write_atomic", "write_once"]


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(path: Path, text: str, *, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically; ``durable``: fsync before the rename.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "doc.json"
    >>> write_atomic(p, "{}\\n"); p.read_text()
    '{}\\n'
    """
    tmp = _tmp(path)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def write_once(path: Path, text: str) -> bool:
    """Create ``path`` with ``text`` unless it exists; atomic and durable.

    Returns:
        True when written, False when ``path`` already existed (its content is kept).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "entry.json"
    >>> write_once(p, "first"), write_once(p, "second"), p.read_text()
    (True, False, 'first')
    """
    if path.exists():
        return False
    tmp = _tmp(path)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # fails when the name exists: write-if-absent, atomically
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return True


def fsync_dir(folder: Path) -> None:
    """Make a rename or link inside ``folder`` durable (where the file system supports it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every file system syncs directories; the file itself is on disk
    finally:
        os.close(fd)


class BatchFiles:
    """A folder of one JSON file per batch (the ledger, the pins): ``<batch id>.json``, the id
    zero-padded as wide as Delta's commit file names so the names sort as the numbers do.

    >>> import tempfile
    >>> files = BatchFiles(Path(tempfile.mkdtemp()) / "ledger")
    >>> files.ids()
    []
    >>> files.folder.mkdir(); write_atomic(files.path(7), "{}"); files.path(7).name
    '00000000000000000007.json'
    >>> files.ids(), files.prune(below=8), files.ids()
    ([7], 1, [])
    """

    DIGITS = 20

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, batch_id: int) -> Path:
        return self.folder / f"{batch_id:0{self.DIGITS}d}.json"

    def ids(self) -> list[int]:
        """Batch ids with a file, ascending (one directory listing)."""
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def prune(self, below: int) -> int:
        """Delete the files of batches ``< below``; return how many there were."""
        removed = 0
        for batch_id in self.ids():
            if batch_id >= below:
                break
            self.path(batch_id).unlink(missing_ok=True)
            removed += 1
        return removed
