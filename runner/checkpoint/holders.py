"""Who holds a lease, exactly enough to tell when that holder is provably gone.

A lease can be taken at once, without waiting for it to expire, only when its holder is
provably dead: a process of *this* kernel, since this boot, in *this* PID namespace, whose pid
names no process. Host name and pid alone do not say that: two containers may share a host
name (Kubernetes pods of one StatefulSet on different nodes, ``--hostname`` in Docker) and,
with separate PID namespaces, each sees none of the other's processes, so ``kill(pid, 0)``
there answers "no such process" for a holder that runs. So a holder is identified by:

- ``host``: the host name (what a person reads);
- ``boot``: ``/proc/sys/kernel/random/boot_id``, one per kernel boot: another machine, or
  this one rebooted, has another;
- ``pid_ns``: the PID namespace, ``/proc/self/ns/pid``'s link (``pid:[4026531836]``), one per
  namespace for as long as it lives;
- ``pid``: the process in that namespace.

When this process cannot read its boot id or namespace (no ``/proc``: not Linux, or a
sandbox hiding it), or the lease names none (written by an older runner), nothing is provable
and only expiry frees the lease.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from typing import Any

__all__ = ["identity", "pid_alive", "provably_gone"]

BOOT_ID = "/proc/sys/kernel/random/boot_id"
PID_NAMESPACE = "/proc/self/ns/pid"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs in this PID namespace (one we may not signal counts as
    running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@cache
def _boot_id() -> str | None:
    try:
        with open(BOOT_ID, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    """This process's PID namespace (``pid:[N]``); read each time: ``unshare`` in a forked
    child changes it without changing the module's cache."""
    try:
        return os.readlink(PID_NAMESPACE)
    except OSError:
        return None


def identity() -> dict[str, Any]:
    """This process as a lease records its holder: ``host``, ``boot``, ``pid_ns``, ``pid``
    (``boot``/``pid_ns`` None when unreadable)."""
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid_ns": _pid_namespace(),
            "pid": os.getpid()}


def provably_gone(doc: dict[str, Any]) -> bool:
    """Whether the holder ``doc`` names is a process that no longer runs: same host name,
    boot and PID namespace as this process (each known on both sides), and its pid not
    alive. Anything unknown or different answers False (the lease must expire instead)."""
    here = identity()
    pid = doc.get("pid")
    if not isinstance(pid, int):
        return False
    for key in ("host", "boot", "pid_ns"):
        if here[key] is None or doc.get(key) != here[key]:
            return False
    return not pid_alive(pid)
