"""One writer per checkpoint in an object store: a lease, since a bucket has no ``flock``.

The lease is the lock file itself (``runner.lock``, ``maintain.lock``) holding JSON: who holds
it (host, boot id, PID namespace, pid: :mod:`runner.checkpoint.holders`; and the start time), a
random token and when it expires. It is

- **taken** by creating the object if absent (a conditional PUT), or by replacing it
  conditionally (on the ETag read) once it has expired, or at once when its holder is provably
  gone (:func:`runner.checkpoint.holders.provably_gone`: same host name, boot and PID
  namespace, and its pid not alive; a holder in another container with the same host name is
  not provably gone, and only expiry frees its lease);
- **renewed** every third of its time to live by a conditional replace (a failed attempt is
  tried again sooner); a renewal that finds another token, or cannot write, marks the lease
  lost;
- **checked** (:meth:`ObjectLease.check`, in memory: the lost flag and the time of the last
  renewal) right before each commit: every write under the checkpoint through the storage
  layer (:mod:`runner.storage.fence`: ledger, registry, pins, run record, offsets ...), and
  each Delta commit of either engine (:attr:`runner.sinks.base.DeltaWriter.permit`). After a
  lost lease, or once the last renewal is older than two thirds of the time to live, the check
  raises :class:`~runner.errors.LeaseLostError` and the batch fails without committing; Spark
  replays it on the next start, exactly once as after a crash;
- **released** by deleting it when it is still ours.

What is guaranteed. A renewal writes ``expires`` = (its start on the holder's clock) + time to
live, so another process (whose clock is ``skew`` ahead) can take the lease over no earlier
than ``ttl - skew`` after the start of the last renewal that succeeded. The check lets a commit
start only up to ``2/3 ttl`` after that start. So every commit starts at least ``ttl/3 - skew``
(20 s with the default 60 s, less the clocks' disagreement) before anyone else may hold the
checkpoint, whether the renewals failed because the store is unreachable, slow, or the lease
was taken (a taken lease is found at the next renewal and stops commits at once).

The remaining window: a commit that starts just before that point and takes longer than the
third kept in hand, while the renewals keep failing (while they succeed, the lease never
expires, however long a commit takes). The check sits right before the commit itself where the
engine lets it: a delta-rs staged append commits files already written, and a delta-spark
append to an existing table is checked between writing its files and committing them. Where
one call writes the files and commits (a MERGE on either engine, delta-spark's first write of a
table, delta-rs' Arrow appends), the check precedes the call, and the files' writing counts
against the margin. Spark's own offsets and commit logs are written by the JVM, outside these
checks; the ledger entry written before Spark's commit-log entry (each batch) is checked, so a
batch whose permit failed is never marked committed by this process.

Expiry compares the clock of the process reading with the time the holder wrote, so clocks
must agree to well within the time to live (60 s; ``RUNNER_LEASE_SECONDS`` changes it).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import Any

from runner.checkpoint.holders import identity, provably_gone
from runner.errors import CheckpointBusyError, ExecutionError, LeaseLostError
from runner.storage import fence
from runner.storage.objects import ObjectPath
from runner.storage.ops import read_versioned, write_if

__all__ = ["ObjectLease", "holder_gone", "lease_seconds", "read_lease"]

#: The share of the time to live after the last renewal's start during which commits may
#: start (the module docstring: the rest is the margin kept in hand).
COMMIT_WINDOW = 2 / 3


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


def holder_gone(doc: dict[str, Any], now: float) -> bool:
    """Whether the lease in ``doc`` may be taken: expired, or its holder provably dead
    (:func:`runner.checkpoint.holders.provably_gone`)."""
    try:
        expires = float(doc.get("expires", 0))
    except (TypeError, ValueError):
        expires = 0.0
    return expires < now or provably_gone(doc)


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
        me = identity()
        return json.dumps({"holder": f"pid {me['pid']} on {me['host']} since {since}", **me,
                           "since": since, "token": self.token,
                           "expires": time.time() + self.ttl}).encode()

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
                    if write_if(self.path, self._doc(since), version, fenced=False):
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
        self._lost = None
        fence.hold(self.path, self.check)
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
        if write_if(self.path, json.dumps(doc).encode(), current[1], fenced=False):
            self._renewed = started
        else:
            self._lost = f"the lease {self.path} changed while being renewed"

    def _renew_loop(self) -> None:
        pause = self.ttl / 3
        while not self._stop.wait(pause):
            try:
                self._renew_once()
            except Exception:  # noqa: BLE001 - a store error: try again soon; check() times out
                pause = self.ttl / 12
                continue
            if self._lost:
                return
            pause = self.ttl / 3

    def check(self) -> None:
        """Raise unless this process may still commit (see the module docstring). In memory:
        cheap enough to call right before every commit.

        Raises:
            LeaseLostError: the lease was taken, or its last renewal is too old.
        """
        if self._lost:
            raise LeaseLostError(f"stopped writing: {self._lost}",
                                 hint="another runner holds the checkpoint now")
        age = time.monotonic() - self._renewed
        if age > self.ttl * COMMIT_WINDOW:
            raise LeaseLostError(
                f"stopped writing: the lease {self.path} was last renewed {age:.1f} s ago "
                f"(time to live {self.ttl:.0f} s; commits stop after "
                f"{self.ttl * COMMIT_WINDOW:.0f} s)",
                hint="the object store did not answer; restart when it does")

    def holder(self) -> str:
        current = read_lease(self.path)
        return str(current[0].get("holder") or "another process") if current else \
            "another process"

    def release(self) -> None:
        fence.let_go(self.path, self.check)
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
