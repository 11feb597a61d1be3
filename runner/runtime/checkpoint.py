"""What the runner keeps in (and around) the pipeline's one Spark checkpoint.

- The query id: Spark stores it in ``<checkpoint>/metadata`` (``{"id": "<uuid>"}``) and keeps
  it for the checkpoint's life. The runner writes that file itself before the first start, so
  the id is known before any batch runs; Delta application ids derive from it
  (:func:`runner.sinks.base.app_id`), which makes them unique per (pipeline, model,
  checkpoint): a new checkpoint restarts batch ids at 0 under a new id.
- A lock (``<checkpoint>/runner.lock``): one runner per checkpoint. A second one is refused up
  front with the holder's pid, host and start time, instead of two queries racing on one
  checkpoint. The OS releases the lock when the holder dies, even on SIGKILL.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import IO

from runner.errors import CheckpointBusyError, ExecutionError

__all__ = ["CheckpointLock", "new_query_id", "read_query_id", "reset_checkpoint",
           "write_query_id"]


def read_query_id(checkpoint: Path) -> str | None:
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


def write_query_id(checkpoint: Path, query_id: str) -> None:
    """Create the checkpoint's metadata file the way Spark writes it (``{"id": ...}``)."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    metadata = checkpoint / "metadata"
    tmp = metadata.with_name(".metadata.tmp")
    tmp.write_text(json.dumps({"id": query_id}) + "\n")
    os.replace(tmp, metadata)


def reset_checkpoint(checkpoint: Path) -> None:
    """Delete the checkpoint's contents (for --full-refresh), keeping the lock file."""
    import shutil

    if not checkpoint.is_dir():
        return
    for child in checkpoint.iterdir():
        if child.name == CheckpointLock.FILE:
            continue
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()


class CheckpointLock:
    """An exclusive, process-lifetime lock on one checkpoint directory."""

    FILE = "runner.lock"

    def __init__(self, checkpoint: Path) -> None:
        self.path = checkpoint / self.FILE
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or raise CheckpointBusyError naming the current holder."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+")
        except OSError as e:
            raise ExecutionError(
                f"cannot use checkpoint directory {self.path.parent}: "
                f"{e.strerror or type(e).__name__}",
                hint="point `checkpoint:` in project.yml at a directory this user can write"
            ) from e
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise CheckpointBusyError(
                f"checkpoint {self.path.parent} is in use by {holder}",
                hint="one runner per checkpoint: stop the other one first") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since "
                     f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> CheckpointLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
