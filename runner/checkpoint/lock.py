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

Over Spark Connect the batch's commits are made by a Python worker on the server, a process
that holds no lock: the client gives it a :class:`RemotePermit` (the lock file and what the
client wrote in it), which the worker checks through the storage layer right before each
commit, as the client's own lock would be checked.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from runner.checkpoint.holders import pid_alive
from runner.checkpoint.lease import COMMIT_WINDOW, ObjectLease, holder_gone, read_lease
from runner.errors import CheckpointBusyError, ExecutionError, LeaseLostError
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location, as_location, read_versioned

__all__ = ["MAINTENANCE", "STREAM", "CheckpointLock", "LockHolder", "RemotePermit",
           "checkpoint_lock", "lock_holder", "remote_permit"]

STREAM = "runner.lock"
MAINTENANCE = "maintain.lock"
_HOLDER = re.compile(r"^pid (\d+) on (\S+) since (\S+)")


class CheckpointLock:
    """An exclusive, process-lifetime lock on one of the checkpoint's lock files."""

    def __init__(self, checkpoint: Path, file: str = STREAM) -> None:
        self.path = Path(checkpoint) / file
        self.line = ""  # what this process wrote in the file when it took the lock
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
        self.line = (f"pid {os.getpid()} on {socket.gethostname()} since "
                     f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
        handle.write(self.line)
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
class RemotePermit:
    """The lock holder's permit, checked by another process on its behalf (over Spark Connect:
    the server's Python worker that commits the batch). Data only, so it pickles.

    :meth:`check` reads the lock file through the storage layer right before a commit and
    lets it go on only while the file still names the holder that made this permit:

    - a lease (object storage): its token, and a renewal recent enough that the holder's own
      :meth:`~runner.checkpoint.lease.ObjectLease.check` would pass (the last renewal started
      less than two thirds of the time to live ago: ``expires - ttl``, on the clock the lease
      already relies on). A client that died stops renewing, so its query's worker stops
      committing within that window;
    - an ``flock`` (local disk): the holder line the client wrote when it took the lock
      (another runner that took it since wrote its own), and, when the worker is on the
      holder's host, the kernel still listing an ``flock`` on the file (``/proc/locks``): a
      killed client's lock is gone at once.
    """

    path: Location
    mark: str  # the lease's token, or the flock file's holder line
    ttl: float | None  # the lease's time to live; None: an flock

    def check(self) -> None:
        """Raise unless the holder still holds the lock.

        Raises:
            LeaseLostError: the lock is gone, held by another, or (a lease) not renewed in
                time, or (an flock on this host) no longer held by anyone.
        """
        got = read_versioned(self.path)
        if got is None:
            raise LeaseLostError(f"stopped writing: the lock {self.path} is gone",
                                 hint="the runner that started this query no longer holds "
                                      "the checkpoint; the batch replays on its next start")
        if self.ttl is not None:
            self._check_lease(got[0], self.ttl)
        else:
            self._check_flock(got[0].decode("utf-8", "replace").strip())

    def _check_lease(self, data: bytes, ttl: float) -> None:
        try:
            doc = json.loads(data)
        except ValueError:
            doc = {}
        doc = doc if isinstance(doc, dict) else {}
        if doc.get("token") != self.mark:
            raise LeaseLostError(f"stopped writing: the lease {self.path} was taken by "
                                 f"{doc.get('holder') or 'another process'}",
                                 hint="another runner holds the checkpoint now")
        try:
            renewed = time.time() - (float(doc.get("expires", 0)) - ttl)
        except (TypeError, ValueError):
            renewed = float("inf")
        if renewed > ttl * COMMIT_WINDOW:
            raise LeaseLostError(
                f"stopped writing: the lease {self.path} was last renewed {renewed:.1f} s ago "
                f"(time to live {ttl:.0f} s; commits stop after {ttl * COMMIT_WINDOW:.0f} s)",
                hint="the runner that started this query stopped renewing it (ended, killed "
                     "or cut off); the batch replays on its next start")

    def _check_flock(self, text: str) -> None:
        if text != self.mark:
            raise LeaseLostError(f"stopped writing: {self.path} is held by "
                                 f"{text or 'another process'} now, not {self.mark}",
                                 hint="another runner holds the checkpoint now")
        match = _HOLDER.match(text)
        if isinstance(self.path, ObjectPath) or match is None or (
                match.group(2) != socket.gethostname()):
            return  # another host: its kernel's locks are not in reach
        try:
            inode = os.stat(self.path).st_ino
        except OSError:
            return
        if _flock_held(inode) is False:
            raise LeaseLostError(f"stopped writing: {self.mark} no longer holds {self.path} "
                                 "(it ended or was killed)",
                                 hint="the batch replays on the runner's next start")


def remote_permit(lock: CheckpointLock | ObjectLease) -> RemotePermit:
    """The permit of a taken ``lock`` for a process other than its holder."""
    if isinstance(lock, ObjectLease):
        return RemotePermit(lock.path, lock.token, lock.ttl)
    return RemotePermit(lock.path, lock.line, None)


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
