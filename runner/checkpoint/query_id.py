"""The checkpoint's identity: the query id Spark keeps in ``<checkpoint>/metadata``
(``{"id": "<uuid>"}``) for the checkpoint's life.

The runner writes that file itself before the first start, so the id is known before any batch
runs; Delta application ids derive from it (:func:`runner.sinks.base.app_id`), which makes them
unique per (pipeline, model, checkpoint): a new checkpoint restarts batch ids at 0 under a new
id.
"""

from __future__ import annotations

import json
import uuid

from runner.checkpoint.lock import MAINTENANCE, STREAM
from runner.errors import ExecutionError
from runner.storage.ops import Location, names, rmtree, write_atomic

__all__ = ["new_query_id", "read_query_id", "reset_checkpoint", "write_query_id"]


def read_query_id(checkpoint: Location) -> str | None:
    """The checkpoint's query id, or None when the checkpoint is new (no metadata yet)."""
    metadata = checkpoint / "metadata"
    if not metadata.is_file():
        return None
    try:
        return str(json.loads(metadata.read_text().splitlines()[0])["id"])
    except (ValueError, KeyError, IndexError) as e:
        raise ExecutionError(f"checkpoint metadata {metadata} is unreadable: {e}",
                             hint="restore the checkpoint, or start over with "
                                  "--full-refresh") from e


def new_query_id() -> str:
    return str(uuid.uuid4())


def write_query_id(checkpoint: Location, query_id: str) -> None:
    """Create the checkpoint's metadata file the way Spark writes it (``{"id": ...}``)."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    write_atomic(checkpoint / "metadata", json.dumps({"id": query_id}) + "\n")


def reset_checkpoint(checkpoint: Location) -> None:
    """Delete the checkpoint's contents (for --full-refresh), keeping the lock files."""
    for name in names(checkpoint):
        if name not in (STREAM, MAINTENANCE):
            rmtree(checkpoint / name)
