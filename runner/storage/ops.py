"""The writes of the runner's own files, on local disk and in object stores alike.

A location is a ``pathlib.Path`` (local disk) or an :class:`~runner.storage.objects.ObjectPath`
(a bucket prefix); both read the same way. Writes differ, so they are these functions:

- :func:`write_atomic`: replace the content; a reader (or a crash) sees the old or the new.
  Local: a temporary file renamed into place (fsynced when ``durable``). Object store: one PUT.
- :func:`write_once`: create unless present, atomically. Local: a hard link, which fails on
  an existing name. Object store: a conditional PUT (``If-None-Match: *``).
- :func:`read_versioned` / :func:`write_if`: compare-and-swap on the version read. Local: the
  version is (inode, mtime, size) checked under an ``flock``. Object store: the ETag, with
  ``If-Match``.
- :func:`names`, :func:`file_sizes`, :func:`rmtree`, :func:`read_range`: list, delete a
  prefix, read a range.

Each write and :func:`rmtree` first passes the fences over its path
(:mod:`runner.storage.fence`): under a checkpoint whose lease this process has lost, it raises
:class:`~runner.errors.LeaseLostError` and writes nothing.

Temporary names on local disk are ``.<name>.<pid>.tmp``: hidden (Spark skips names starting
with ``.``), unique per process, left behind only by a crash, where the next write replaces
them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import TypeAlias

from runner.storage import fence
from runner.storage.objects import SCHEMES, ObjectPath, as_os_errors, object_path

__all__ = ["Location", "as_location", "delta_options", "file_sizes", "fsync_dir", "names",
           "read_range", "read_versioned", "rmtree", "write_atomic", "write_if", "write_once"]

#: Where the runner keeps a file: a local path or an object-store key.
Location: TypeAlias = "Path | ObjectPath"


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(path: Location, text: str | bytes, *, durable: bool = False,
                 fenced: bool = True) -> None:
    """Replace ``path`` with ``text`` (str as UTF-8) atomically, its folder created if
    needed; ``durable``: on local disk, fsync the file and its folder (an object PUT is
    durable when it returns). ``fenced=False``: not asked of a lease's permit (a report of
    why a batch failed, which must reach its client even when the permit is what failed).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "doc.json"
    >>> write_atomic(p, "{}\\n"); p.read_text()
    '{}\\n'
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if fenced:
        fence.check(path)
    if isinstance(path, ObjectPath):
        import obstore

        with as_os_errors(path):
            obstore.put(path.store, path.key, data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def write_once(path: Location, text: str | bytes, *, fenced: bool = True) -> bool:
    """Create ``path`` with ``text`` unless it exists; atomic and durable. ``fenced=False``
    skips the fences: only for a lease's own document (:mod:`runner.storage.fence`).

    Returns:
        True when written, False when ``path`` already existed (its content is kept).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "entry.json"
    >>> write_once(p, "first"), write_once(p, "second"), p.read_text()
    (True, False, 'first')
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if fenced:
        fence.check(path)
    if isinstance(path, ObjectPath):
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        with as_os_errors(path):
            try:
                obstore.put(path.store, path.key, data, mode="create")
            except (AlreadyExistsError, PreconditionError):
                return False
        return True
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(path)
    with open(tmp, "wb") as f:
        f.write(data)
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


def _local_version(path: Path) -> str:
    st = path.stat()
    return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


def read_versioned(path: Location) -> tuple[bytes, str] | None:
    """The content of ``path`` and its version (for :func:`write_if`); None when absent."""
    if isinstance(path, ObjectPath):
        import obstore

        try:
            with as_os_errors(path):
                result = obstore.get(path.store, path.key)
        except FileNotFoundError:
            return None
        return bytes(result.bytes()), str(result.meta["e_tag"])
    try:
        with open(path, "rb") as f:
            data = f.read()
            st = os.fstat(f.fileno())
    except FileNotFoundError:
        return None
    return data, f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


def write_if(path: Location, text: str | bytes, version: str | None, *,
             fenced: bool = True) -> bool:
    """Write ``path`` only if it is still at ``version`` (None: only if absent).
    ``fenced=False`` as for :func:`write_once`.

    Returns:
        True when written; False when another writer changed (or created) it first.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "lease.json"
    >>> write_if(p, "a", None), write_if(p, "b", None)
    (True, False)
    >>> data, v = read_versioned(p); write_if(p, "c", v), write_if(p, "d", v), p.read_text()
    (True, False, 'c')
    """
    if version is None:
        return write_once(path, text, fenced=fenced)
    data = text.encode("utf-8") if isinstance(text, str) else text
    if fenced:
        fence.check(path)
    if isinstance(path, ObjectPath):
        import obstore
        from obstore.exceptions import NotFoundError, PreconditionError

        with as_os_errors(path):
            try:
                obstore.put(path.store, path.key, data, mode={"e_tag": version})
            except (PreconditionError, NotFoundError, FileNotFoundError):
                return False
        return True
    guard = path.with_name(f".{path.name}.cas")
    with open(guard, "a") as g:
        fcntl.flock(g, fcntl.LOCK_EX)  # released when the file closes
        try:
            if _local_version(path) != version:
                return False
        except FileNotFoundError:
            return False
        write_atomic(path, data, durable=True)
        return True


def names(folder: Location) -> list[str]:
    """The names right under ``folder`` (files and sub-folders), sorted; [] when absent."""
    if isinstance(folder, ObjectPath):
        return [p.name for p in folder.iterdir()]
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def ensure_folder(folder: Location, *, create: bool = True) -> bool | None:
    """Whether ``folder`` is one: True (it is, or was created with ``create``), False (a file
    is there), None (absent, ``create`` off). An object store's prefixes need no creating.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> ensure_folder(d / "a" / "b"), ensure_folder(d / "c", create=False)
    (True, None)
    """
    if isinstance(folder, ObjectPath):
        return True
    if folder.is_dir():
        return True
    if folder.exists():
        return False
    if not create:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    return True


def exists(path: Location) -> bool:
    """Whether a file (or folder) is at ``path``: one listing of its parent in an object
    store."""
    if isinstance(path, ObjectPath):
        return path.name in names(path.parent)
    return path.exists()


def file_sizes(folder: Location) -> dict[str, int]:
    """The files right under ``folder`` and their sizes (sub-folders, and in an object store
    the prefixes a listing shows as folders, left out); {} when absent. One listing in an
    object store.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> write_atomic(d / "sub" / "x", "ab"); write_atomic(d / "y", "c")
    >>> file_sizes(d)
    {'y': 1}
    """
    if isinstance(folder, ObjectPath):
        import obstore

        with as_os_errors(folder):
            listing = obstore.list_with_delimiter(folder.store, folder.key or None)
        return {o["path"].rsplit("/", 1)[-1]: int(o["size"]) for o in listing["objects"]}
    out: dict[str, int] = {}
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.is_file():
                    out[entry.name] = entry.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        pass
    return out


def rmtree(folder: Location) -> None:
    """Delete ``folder`` and everything under it (a prefix in an object store); absent: no-op."""
    fence.check(folder)
    if isinstance(folder, ObjectPath):
        import obstore

        keys = [f"{folder.key}/{k}" if folder.key else k for k in folder.walk_keys()]
        for start in range(0, len(keys), 1000):
            with as_os_errors(folder):
                obstore.delete(folder.store, keys[start:start + 1000])
        folder.unlink(missing_ok=True)  # the object itself, when it is one
        return
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    elif folder.exists() or folder.is_symlink():
        folder.unlink()


def read_range(path: Location, start: int, end: int) -> bytes:
    """Bytes ``start`` up to ``end`` of ``path`` (fewer at its end)."""
    if isinstance(path, ObjectPath):
        import obstore

        if end <= start:
            return b""
        with as_os_errors(path):
            return bytes(obstore.get_range(path.store, path.key, start=start, end=end))
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(max(0, end - start))


def fsync_dir(folder: Location) -> None:
    """Make a rename or link inside ``folder`` durable (local disk, where the file system
    supports it; object stores have nothing to sync)."""
    if isinstance(folder, ObjectPath):
        return
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


def as_location(value: str | os.PathLike[str] | ObjectPath) -> Location:
    """``value`` as a location: an :class:`ObjectPath` stays one (with its options), an
    object-store URI string becomes one (options from the environment only), anything else
    is a local ``Path``."""
    if isinstance(value, ObjectPath):
        return value
    text = os.fspath(value)
    if "://" in text and text.partition("://")[0].lower() in SCHEMES:
        return object_path(text)
    return Path(text)


def delta_options(path: str | os.PathLike[str] | ObjectPath) -> dict[str, str] | None:
    """delta-rs' ``storage_options`` for a table at ``path``: the environment's settings
    with the bucket's explicit options over them (:mod:`runner.storage.settings`); None on
    local disk."""
    from runner.storage.settings import storage_settings

    loc = as_location(path)
    if not isinstance(loc, ObjectPath):
        return None
    return storage_settings(str(loc), loc.options).resolved_options()
