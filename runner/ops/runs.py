"""Who runs the pipeline now, and how its last run ended: read by ``runner status``.

- :class:`RunRecord` keeps ``<checkpoint>/last_run.json`` for ``runner stream``: written when
  the run starts (``running``, pid, host) and when it ends (``finished``, ``interrupted`` or
  ``failed`` with the error's message and hint). A run that died without a word (SIGKILL, power
  loss) stays ``running`` with no lock holder: :func:`read_last_run` says so.
- :func:`lock_holder`: the process holding ``<checkpoint>/runner.lock`` (pid, host, since),
  from the lock file's text, confirmed on Linux by ``/proc/locks`` (or by the pid being alive):
  the lock is never taken to find out, so a stream starting at that moment is not refused.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from runner.errors import RunnerError

__all__ = ["LAST_RUN", "LockHolder", "RunRecord", "lock_holder", "read_last_run"]

LAST_RUN = "last_run.json"
_HOLDER = re.compile(r"^pid (\d+) on (\S+) since (\S+)")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class RunRecord:
    """Context manager around one ``runner stream`` run (inside the checkpoint lock)."""

    def __init__(self, checkpoint: Path, *, command: str = "stream") -> None:
        self.path = Path(checkpoint) / LAST_RUN
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
            _write_json(self.path, self.doc)
        except OSError:
            pass  # the record is for `runner status`; never fail a run over it


@dataclass(frozen=True)
class LockHolder:
    pid: int | None
    host: str | None
    since: str | None
    held: bool | None  # None: cannot tell (another host, no /proc/locks)
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"held": self.held, "pid": self.pid, "host": self.host, "since": self.since}


def lock_holder(checkpoint: Path, file: str = "runner.lock") -> LockHolder | None:
    """The lock file's last holder and whether it holds it now; None when there is no file."""
    path = Path(checkpoint) / file
    try:
        text = path.read_text().strip()
        inode = os.stat(path).st_ino
    except OSError:
        return None
    match = _HOLDER.match(text)
    pid, host, since = ((int(match.group(1)), match.group(2), match.group(3)) if match
                        else (None, None, None))
    held = _flock_held(inode)
    if held is None and pid is not None and host == socket.gethostname():
        held = _alive(pid)
    return LockHolder(pid, host, since, held, text)


def _flock_held(inode: int) -> bool | None:
    """Whether ``/proc/locks`` lists an flock on that inode (None: no /proc/locks)."""
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:2f:5678 0 EOF" (blocked waiters carry "->")
        if len(parts) >= 6 and parts[1] == "FLOCK" and "->" not in parts:
            try:
                if int(parts[5].rsplit(":", 1)[1]) == inode:
                    return True
            except (IndexError, ValueError):
                continue
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_last_run(checkpoint: Path, holder: LockHolder | None) -> dict[str, Any] | None:
    """``last_run.json`` as a dict; a ``running`` run whose process no longer holds the lock
    is reported as ``died`` (killed, or the machine stopped)."""
    try:
        doc = json.loads((Path(checkpoint) / LAST_RUN).read_text())
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
