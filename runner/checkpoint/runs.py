"""Who runs the pipeline now, and how its last run ended: read by ``runner status``.

- :class:`RunRecord` keeps ``<checkpoint>/last_run.json`` for ``runner stream``: written when
  the run starts (``running``, pid, host) and when it ends (``finished``, ``interrupted`` or
  ``failed`` with the error's message and hint). A run that died without a word (SIGKILL, power
  loss) stays ``running`` with no lock holder: :func:`read_last_run` says so.
"""

from __future__ import annotations

import json
import os
import socket
import time
from types import TracebackType
from typing import Any

from runner.checkpoint.lock import LockHolder
from runner.errors import LeaseLostError, RunnerError
from runner.storage.ops import Location, as_location, write_atomic

__all__ = ["LAST_RUN", "RunRecord", "read_last_run"]

LAST_RUN = "last_run.json"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class RunRecord:
    """Context manager around one ``runner stream`` run (inside the checkpoint lock)."""

    def __init__(self, checkpoint: Location, *, command: str = "stream") -> None:
        self.path = as_location(checkpoint) / LAST_RUN
        self.doc: dict[str, Any] = {"command": command, "pid": os.getpid(),
                                    "host": socket.gethostname(), "started_at": None,
                                    "ended_at": None, "outcome": "running", "error": None}

    def __enter__(self) -> RunRecord:
        self.doc["started_at"] = _now()
        self._save()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.doc["ended_at"] = _now()
        if error is None:
            self.doc["outcome"] = "finished"
        elif isinstance(error, KeyboardInterrupt):
            self.doc["outcome"] = "interrupted"
        else:
            self.doc["outcome"] = "failed"
            self.doc["error"] = (str(error) if isinstance(error, RunnerError)
                                 else f"{type(error).__name__}: {error}")[:4000]
        self._save()

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(self.doc, indent=1) + "\n")
        except (OSError, LeaseLostError):
            pass  # the record is for `runner status`; never fail a run over it (nor write it
            # after the lease is lost: the checkpoint is another runner's now)


def read_last_run(checkpoint: Location, holder: LockHolder | None) -> dict[str, Any] | None:
    """``last_run.json`` as a dict; a ``running`` run whose process no longer holds the lock
    is reported as ``died`` (killed, or the machine stopped)."""
    try:
        doc = json.loads((as_location(checkpoint) / LAST_RUN).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    if doc.get("outcome") == "running":
        running_now = holder is not None and holder.held is not False and \
            holder.pid == doc.get("pid") and holder.host == doc.get("host")
        if not running_now:
            doc["outcome"] = "died"
            doc["error"] = doc.get("error") or ("the process ended without recording how "
                                                "(killed, or the machine stopped)")
    return doc
