"""One writer per checkpoint in an object store: a lease, since a bucket has no ``flock``.

The lease is the lock file itself (``runner.lock``, ``maintain.lock``) holding JSON: who holds
it (pid, host, start), a random token and when it expires. It is

- **taken** by creating the object if absent (a conditional PUT), or by replacing it
  conditionally (on the ETag read) once it has expired, or at once when its holder is provably
  gone (same host, process not alive);
- **renewed** every third of its time to live by a conditional replace; a renewal that finds
  another token, or cannot write, marks the lease lost;
- **checked** (:meth:`ObjectLease.check`) before the holder writes: after a lost lease, or
  when the last renewal is older than two thirds of the time to live (so the holder stops
  before anyone could take the lease over), the check raises and the batch fails without
  committing; Spark replays it on the next start, exactly once as after a crash;
- **released** by deleting it when it is still ours.

Expiry compares the clock of the process reading with the time the holder wrote, so clocks
must agree to well within the time to live (60 s; ``RUNNER_LEASE_SECONDS`` changes it). A
spark-engine write checks before it starts and commits at its end: the third of the time to
live kept in hand is what such a write may take.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any

from runner.errors import CheckpointBusyError, ExecutionError
from runner.storage.objects import ObjectPath
from runner.storage.ops import read_versioned, write_if

__all__ = ["ObjectLease", "holder_gone", "lease_seconds", "pid_alive", "read_lease"]


def lease_seconds() -> float:
    """The lease's time to live (``RUNNER_LEASE_SECONDS``, default 60)."""
    try:
        return max(1.0, float(os.environ.get("RUNNER_LEASE_SECONDS", "60")))
    except ValueError:
        return 60.0


def read_lease(path: ObjectPath) -> tuple[dict[str, Any], str] | None:
    """The lease's document and version; None when absent. An unreadable document counts as
    an expired lease (a crash cannot leave one: each write is one PUT)."""
    got = read_versioned(path)
    if got is None:
        return None
    data, version = got
    try:
        doc = json.loads(data)
    except ValueError:
        doc = {}
    return (doc if isinstance(doc, dict) else {}), version


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (one we may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_gone(doc: dict[str, Any], now: float) -> bool:
    """Whether the lease in ``doc`` may be taken: expired, or its holder provably dead."""
    if float(doc.get("expires", 0)) < now:
        return True
    pid = doc.get("pid")
    return doc.get("host") == socket.gethostname() and isinstance(pid, int) and not pid_alive(pid)


class ObjectLease:
    """The lock of a checkpoint in an object store (same interface as the local flock)."""

    def __init__(self, path: ObjectPath) -> None:
        self.path = path
        self.ttl = lease_seconds()
        self.token = uuid.uuid4().hex
        self._renewed = 0.0
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _doc(self, since: str) -> bytes:
        return json.dumps({"holder": self._holder_line(since), "pid": os.getpid(),
                           "host": socket.gethostname(), "since": since,
                           "token": self.token, "expires": time.time() + self.ttl}).encode()

    @staticmethod
    def _holder_line(since: str) -> str:
        return f"pid {os.getpid()} on {socket.gethostname()} since {since}"

    def acquire(self, *, wait: float = 0.0) -> None:
        """Take the lease, waiting up to ``wait`` seconds for the holder to let go.

        Raises:
            CheckpointBusyError: another live holder keeps it (named).
            ExecutionError: the store cannot be reached or written.
        """
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        deadline = time.monotonic() + wait
        while True:
            try:
                current = read_lease(self.path)
                version = None if current is None else current[1]
                if current is None or holder_gone(current[0], time.time()):
                    started = time.monotonic()
                    if write_if(self.path, self._doc(since), version):
                        self._renewed = started
                        break
                    continue  # someone else wrote meanwhile: look again
            except OSError as e:
                raise ExecutionError(f"cannot use checkpoint {self.path.parent}: {e}",
                                     hint="check the store's address, credentials and "
                                          "permissions") from e
            if time.monotonic() >= deadline:
                holder = current[0].get("holder") or "another process" if current else \
                    "another process"
                raise CheckpointBusyError(
                    f"checkpoint {self.path.parent} is in use by {holder} (lease until "
                    f"{time.strftime('%H:%M:%SZ', time.gmtime(current[0].get('expires', 0)))})"
                    if current else f"checkpoint {self.path.parent} is in use",
                    hint="one runner per checkpoint: stop the other one first (a holder that "
                         "died releases it when its lease expires)")
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        self._thread = threading.Thread(target=self._renew_loop, name="runner-lease",
                                        daemon=True)
        self._thread.start()

    def _renew_once(self) -> None:
        current = read_lease(self.path)
        if current is None or current[0].get("token") != self.token:
            self._lost = f"the lease {self.path} was taken by " + (
                str(current[0].get("holder")) if current else "nobody (deleted)")
            return
        started = time.monotonic()
        doc = dict(current[0], expires=time.time() + self.ttl)
        if write_if(self.path, json.dumps(doc).encode(), current[1]):
            self._renewed = started
        else:
            self._lost = f"the lease {self.path} changed while being renewed"

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self._renew_once()
            except Exception:  # noqa: BLE001 - a store error: try again; check() times out
                continue
            if self._lost:
                return

    def check(self) -> None:
        """Raise unless this process may still write (see the module docstring)."""
        if self._lost:
            raise ExecutionError(f"stopped writing: {self._lost}",
                                 hint="another runner holds the checkpoint now")
        age = time.monotonic() - self._renewed
        if age > self.ttl * 2 / 3:
            raise ExecutionError(
                f"stopped writing: the lease {self.path} was last renewed {age:.0f} s ago "
                f"(time to live {self.ttl:.0f} s)",
                hint="the object store did not answer; restart when it does")

    def holder(self) -> str:
        current = read_lease(self.path)
        return str(current[0].get("holder") or "another process") if current else \
            "another process"

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        try:
            current = read_lease(self.path)
            if current is not None and current[0].get("token") == self.token:
                self.path.unlink(missing_ok=True)
        except OSError:
            pass  # it expires by itself

    def __enter__(self) -> ObjectLease:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
