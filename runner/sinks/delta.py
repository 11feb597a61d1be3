"""The one way the runner opens a Delta table with delta-rs (writers, readers, reports alike).

A table at an object-store URI opens only with its bucket's storage options
(:func:`runner.storage.ops.delta_options`: the endpoint, region and credentials the
deployment gives). A bare ``deltalake.DeltaTable(path)`` without them goes to the cloud's
default endpoint with whatever credentials the environment holds: against a private endpoint it
fails every time ("Generic S3 error"), and it would send the deployment's keys to the wrong
host. So every open goes through :func:`open_delta` or :func:`open_if_table` here
(``tests/unit/test_one_way_to_open.py`` fails on any other ``DeltaTable(...)`` call in
``runner/``), and a store that fails raises :class:`~runner.errors.StorageError` naming the
table's location and the cause, never a bare ``OSError`` that would end as an internal error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from runner.errors import StorageError
from runner.storage.objects import ObjectPath
from runner.storage.ops import delta_options

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["delta_storage_errors", "is_delta_table", "open_delta", "open_if_table"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _where(path: str | os.PathLike[str] | ObjectPath) -> str:
    return str(path) if isinstance(path, ObjectPath) else os.fspath(path)


def _cause(e: BaseException) -> str:
    """delta-rs' error chain on one line: its lines (``↳``-indented causes, coloured) joined.

    >>> _cause(OSError("Generic S3 error\\n  \\x1b[31m↳\\x1b[0m Error performing list request"))
    'Generic S3 error: Error performing list request'
    """
    lines = [_ANSI.sub("", line).strip().lstrip("↳").strip() for line in str(e).splitlines()]
    text = ": ".join(line for line in lines if line) or type(e).__name__
    return text[:400]


@contextmanager
def delta_storage_errors(path: str | os.PathLike[str] | ObjectPath) -> Iterator[None]:
    """delta-rs' storage failures (an ``OSError``: unreachable store, missing bucket, denied)
    as :class:`~runner.errors.StorageError` naming the table's location; "no table there"
    (``TableNotFoundError``, ``FileNotFoundError``) and the runner's own errors pass as they
    are."""
    try:
        yield
    except (FileNotFoundError, StorageError):
        raise
    except OSError as e:
        where = _where(path)
        raise StorageError(f"cannot read the Delta table at {where}: {_cause(e)}",
                           location=where) from e


def open_delta(path: str | os.PathLike[str] | ObjectPath,
               version: int | None = None) -> DeltaTable:
    """The Delta table at ``path`` (its latest version, or ``version``), opened with the
    location's storage options.

    Raises:
        deltalake.exceptions.TableNotFoundError: no table there.
        StorageError: the store failed (names the location and the cause).
    """
    from deltalake import DeltaTable

    with delta_storage_errors(path):
        return DeltaTable(_where(path), version=version, storage_options=delta_options(path))


def is_delta_table(path: str | os.PathLike[str] | ObjectPath) -> bool:
    """Whether ``path`` holds a Delta table, asked of delta-rs with the location's options.

    Raises:
        StorageError: the store failed (names the location and the cause).
    """
    from deltalake import DeltaTable

    with delta_storage_errors(path):
        return bool(DeltaTable.is_deltatable(_where(path), storage_options=delta_options(path)))


def open_if_table(path: str | os.PathLike[str] | ObjectPath) -> DeltaTable | None:
    """The Delta table at ``path`` at its latest version; None when there is none.

    Raises:
        StorageError: the store failed (names the location and the cause).
    """
    from deltalake.exceptions import TableNotFoundError

    if not is_delta_table(path):
        return None
    try:
        return open_delta(path)
    except TableNotFoundError:  # removed between the two looks
        return None
