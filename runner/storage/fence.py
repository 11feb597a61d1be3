"""Writes under a leased checkpoint pass the lease's permit first, right before each write.

In an object store a checkpoint's one writer is whoever holds its lease
(:mod:`runner.checkpoint.lease`). A holder can lose it while it runs: another runner takes it
over once it expired, after this process could not renew it in time. From the moment its
permit fails, this process must write nothing more under the checkpoint, and the permit must be
asked right before each write, not once before a long step. Every write of the runner's own
files goes through :mod:`runner.storage.ops`, which calls :func:`check` with the path just
before it writes: the ledger, registry, pins, run record, Kafka offsets, input records, query
id and identity files are all covered, and so is any file added later.

A lease holds a fence over its checkpoint (:func:`hold`) from when it is taken until it is
released (:func:`let_go`). The fences are process-wide, as holding a checkpoint is; several may
be held at once (a stream's lease and the maintenance lease of the same checkpoint, or leases of
two checkpoints), and a write passes every fence over its path. A permit is an in-memory check
(the time of the last renewal, a lost flag), never a request. The lease documents themselves are
written unfenced (``fenced=False`` in :mod:`runner.storage.ops`): each of those writes is
conditional on the version the lease read, a fence of its own. Local-disk checkpoints take no
fence: their lock is an ``flock``, which the kernel keeps for its holder until it dies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from runner.storage.objects import SCHEMES, ObjectPath

__all__ = ["check", "hold", "let_go"]

Permit = Callable[[], None]

_LOCK = threading.Lock()
#: lease document -> (the checkpoint it fences, its permit)
_FENCES: dict[ObjectPath, tuple[ObjectPath, Permit]] = {}


def hold(document: ObjectPath, permit: Permit) -> None:
    """Fence the folder of ``document`` (the checkpoint): each write under it first calls
    ``permit``, which raises when this process may no longer write there. A newer holder of
    the same document in this process replaces the older one's fence."""
    with _LOCK:
        _FENCES[document] = (document.parent, permit)


def let_go(document: ObjectPath, permit: Permit) -> None:
    """Remove the fence :func:`hold` set with ``permit`` (another holder's stays)."""
    with _LOCK:
        held = _FENCES.get(document)
        if held is not None and held[1] == permit:
            del _FENCES[document]


def check(path: Path | ObjectPath) -> None:
    """Call the permit of every fence over ``path``; its error (a
    :class:`~runner.errors.LeaseLostError`) propagates. Local paths pass at once."""
    if not _FENCES or not isinstance(path, ObjectPath):
        return
    with _LOCK:
        fences = list(_FENCES.values())
    for folder, permit in fences:
        if _under(path, folder):
            permit()


def _under(path: ObjectPath, folder: ObjectPath) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (same store and bucket)."""
    if (SCHEMES[path.scheme], path.bucket) != (SCHEMES[folder.scheme], folder.bucket):
        return False
    return not folder.key or path.key == folder.key or path.key.startswith(folder.key + "/")
