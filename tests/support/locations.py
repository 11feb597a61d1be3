"""File operations a test harness makes on the runner's locations (warehouse, checkpoint,
source folder), for a local folder and a bucket prefix alike, through the runner's storage
layer (:mod:`runner.storage`): what ``shutil.move``, ``Path.rename`` and ``glob`` do on local
disk, done with object-store requests when the location is an
:class:`~runner.storage.objects.ObjectPath`.

The harness's project files stay local; only the locations the runner is pointed at move to the
bucket. Local paths take the same ``os`` and ``shutil`` calls as before, so a local run is what
it was.

>>> import tempfile
>>> from pathlib import Path
>>> root = Path(tempfile.mkdtemp())
>>> put(root / "a" / "x.json", b"{}\\n"); move_tree(root / "a", root / "b")
>>> child_names(root / "b"), (root / "a").exists()
(['x.json'], False)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from runner.storage.objects import ObjectPath, as_os_errors
from runner.storage.ops import Location, names, rmtree, write_atomic

__all__ = ["child_names", "move_tree", "put"]


def put(path: Location, data: bytes) -> None:
    """Write ``data`` to ``path`` whole (its folder created on local disk)."""
    if isinstance(path, ObjectPath):
        write_atomic(path, data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def child_names(folder: Location) -> list[str]:
    """The names right under ``folder`` that ``glob("*")`` gives (hidden ones left out), sorted;
    [] when it does not exist."""
    return [n for n in names(folder) if not n.startswith(".")]


def move_tree(src: Location, dst: Location) -> None:
    """Move the folder (or prefix) ``src`` to ``dst``: ``shutil.move`` on local disk; in an
    object store, every key copied server-side under ``dst``, then ``src`` deleted (S3A's
    empty directory markers, which object_store cannot address, stay). Not atomic in a store
    (no rename there): a harness step, not something the runner relies on."""
    if isinstance(src, Path) and isinstance(dst, Path):
        shutil.move(str(src), str(dst))
        return
    if not isinstance(src, ObjectPath) or not isinstance(dst, ObjectPath) or (
            src.store is not dst.store):
        raise ValueError(f"move {src} to {dst}: both in one bucket, or both local")
    import obstore

    for key in list(src.walk_keys()):
        try:
            with as_os_errors(src):
                obstore.copy(src.store, f"{src.key}/{key}", f"{dst.key}/{key}")
        except FileNotFoundError:
            # S3A's directory marker (an empty key "dir/", which delta-spark leaves for
            # _delta_log/ and _delta_log/_staged_commits/): listed as "dir", not reachable
            # by that name; it holds nothing, the folder exists through the keys under it
            continue
    rmtree(src)
