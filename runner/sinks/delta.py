"""Opening a Delta table with delta-rs at a local path or an object-store URI (with the
bucket's storage options: :func:`runner.storage.ops.delta_options`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from runner.storage.objects import ObjectPath
from runner.storage.ops import delta_options

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = ["open_delta"]


def open_delta(path: str | os.PathLike[str] | ObjectPath,
               version: int | None = None) -> DeltaTable:
    """``DeltaTable`` at ``path`` (its latest version, or ``version``).

    Raises:
        deltalake.exceptions.TableNotFoundError: no table there.
    """
    from deltalake import DeltaTable

    where = str(path) if isinstance(path, ObjectPath) else os.fspath(path)
    return DeltaTable(where, version=version, storage_options=delta_options(path))
