"""Failpoints: named places where a test can make the runner fail on purpose.

Set ``RUNNER_FAILPOINTS`` to a comma-separated list of ``point[@batch][=action]`` entries, e.g.::

    RUNNER_FAILPOINTS="sink.after_commit:error_events@1=raise"

- ``point`` is a name passed to :func:`hit`; a point may carry a qualifier after ``:``
  (here the model name) so one sink can be targeted.
- ``@batch`` limits the failpoint to one batch id (default: every batch).
- ``action`` is ``raise`` (default: raise :class:`FailpointError`) or ``exit`` (``os._exit(137)``,
  a crash with no cleanup, as a SIGKILL would leave things).

Known points: ``batch.start`` (Spark has written the previous batch's commit log entry),
``sink.before_commit:<model>``, ``sink.after_commit:<model>``, ``batch.after_sinks`` (all sinks
done, before Spark's commit log entry).
The variable is read once per process; production never sets it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["FailpointError", "hit"]


class FailpointError(RuntimeError):
    """Raised by an armed failpoint whose action is ``raise``."""


@dataclass(frozen=True)
class _Failpoint:
    point: str
    batch_id: int | None
    action: str


@lru_cache(maxsize=1)
def _armed() -> tuple[_Failpoint, ...]:
    spec = os.environ.get("RUNNER_FAILPOINTS", "").strip()
    points = []
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        name, _, action = entry.partition("=")
        name, _, batch = name.partition("@")
        points.append(_Failpoint(name, int(batch) if batch else None, action or "raise"))
    return tuple(points)


def hit(point: str, *, batch_id: int | None = None) -> None:
    """Fail here if ``point`` is armed for ``batch_id``; otherwise do nothing (cheap)."""
    for fp in _armed():
        if fp.point == point and (fp.batch_id is None or fp.batch_id == batch_id):
            if fp.action == "exit":
                os._exit(137)
            raise FailpointError(f"failpoint {point} hit at batch {batch_id}")
