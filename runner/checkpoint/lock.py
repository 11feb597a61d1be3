"""The checkpoint's file locks: one class for both of them.

- ``runner.lock`` (:data:`STREAM`): one runner per checkpoint. A second ``runner stream`` is
  refused up front with the holder's pid, host and start time, instead of two queries racing on
  one checkpoint; ``runner maintain`` takes it too when no stream runs.
- ``maintain.lock`` (:data:`MAINTENANCE`): one maintenance at a time (the stream's own, between
  batches, or ``runner maintain``).

Both are ``flock`` locks: the OS releases them when the holder dies, even on SIGKILL, and not
before, so an flock needs no holder identity (boot, PID namespace: containers sharing the
folder share its kernel's locks) and no check before each commit, unlike a lease. The file
holds the last holder's ``pid <pid> on <host> since <time>``; :func:`lock_holder` reads it
without taking the lock (so a stream starting at that moment is not refused), confirmed on
Linux by ``/proc/locks`` or by the pid being alive.

In an object store, where there is no ``flock``, the same files are leases
(:mod:`runner.checkpoint.lease`); :func:`checkpoint_lock` picks the kind for the checkpoint.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from runner.checkpoint.holders import pid_alive
from runner.checkpoint.lease import ObjectLease, holder_gone, read_lease
from runner.errors import CheckpointBusyError, ExecutionError
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location, as_location

__all__ = ["MAINTENANCE", "STREAM", "CheckpointLock", "LockHolder", "checkpoint_lock",
           "lock_holder"]

STREAM = "runner.lock"
MAINTENANCE = "maintain.lock"
_HOLDER = re.compile(r"^pid (\d+) on (\S+) since (\S+)")


class CheckpointLock:
    """An exclusive, process-lifetime lock on one of the checkpoint's lock files."""

    def __init__(self, checkpoint: Path, file: str = STREAM) -> None:
        self.path = Path(checkpoint) / file
        self._handle: IO[str] | None = None

    def acquire(self, *, wait: float = 0.0) -> None:
        """Take the lock, waiting up to ``wait`` seconds for the holder to let go.

        Raises:
            CheckpointBusyError: another process still holds it (names the holder).
            ExecutionError: the checkpoint directory cannot be created or written.
        """
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+")
        except OSError as e:
            raise ExecutionError(
                f"cannot use checkpoint directory {self.path.parent}: "
                f"{e.strerror or type(e).__name__}",
                hint="point `checkpoint:` in project.yml at a directory this user can write"
            ) from e
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
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

    def holder(self) -> str:
        """The last holder's line in the lock file (``another process`` when unreadable)."""
        try:
            return self.path.read_text().strip() or "another process"
        except OSError:
            return "another process"

    def check(self) -> None:
        """Nothing to check: the OS keeps an flock for its holder until it dies, so no other
        process can hold it while this one commits."""

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


def checkpoint_lock(checkpoint: Location, file: str = STREAM) -> CheckpointLock | ObjectLease:
    """The lock of ``checkpoint``: an flock on local disk, a lease in an object store."""
    if isinstance(checkpoint, ObjectPath):
        return ObjectLease(checkpoint / file)
    return CheckpointLock(checkpoint, file)


@dataclass(frozen=True)
class LockHolder:
    pid: int | None
    host: str | None
    since: str | None
    held: bool | None  # None: cannot tell (another host, no /proc/locks)
    text: str

    def to_dict(self) -> dict[str, object]:
        return {"held": self.held, "pid": self.pid, "host": self.host, "since": self.since}


def lock_holder(checkpoint: Location, file: str = STREAM) -> LockHolder | None:
    """The lock file's last holder and whether it holds it now; None when there is no file."""
    path = as_location(checkpoint) / file
    if isinstance(path, ObjectPath):
        return _lease_holder(path)
    try:
        text = path.read_text().strip()
        inode = path.stat().st_ino
    except OSError:
        return None
    match = _HOLDER.match(text)
    pid, host, since = ((int(match.group(1)), match.group(2), match.group(3)) if match
                        else (None, None, None))
    held = _flock_held(inode)
    if held is None and pid is not None and host == socket.gethostname():
        held = pid_alive(pid)
    return LockHolder(pid, host, since, held, text)


def _lease_holder(path: ObjectPath) -> LockHolder | None:
    current = read_lease(path)
    if current is None:
        return None
    doc = current[0]
    pid = doc.get("pid") if isinstance(doc.get("pid"), int) else None
    return LockHolder(pid, doc.get("host"), doc.get("since"),
                      not holder_gone(doc, time.time()), str(doc.get("holder") or ""))


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
