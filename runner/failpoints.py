"""Failpoints: named places where a test can make the runner fail on purpose.

Set ``RUNNER_FAILPOINTS`` to a comma-separated list of ``point[@batch][=action]`` entries, e.g.::

    RUNNER_FAILPOINTS="sink.after_commit:error_events@1=raise"

- ``point`` is a name passed to :func:`failpoint`; a point may carry a qualifier after ``:``
  (here the model name) so one sink can be targeted.
- ``@batch`` limits the failpoint to one batch id (default: every batch).
- ``action`` is ``raise`` (default: raise :class:`FailpointError`), ``exit`` (``os._exit(137)``,
  a crash with no cleanup, as a SIGKILL would leave things) or ``sleep:S`` (announce
  ``failpoint <point> sleeping`` on stderr, then sleep S seconds: a batch held in flight, for
  the stop-on-signal tests).

Known points: ``batch.start`` (Spark has written the previous batch's commit log entry),
``catalog.before_create:<model>`` (between the start-up's name check and the model's
``CREATE TABLE IF NOT EXISTS``),
``sink.before_commit:<model>``, ``sink.after_commit:<model>``, ``batch.after_sinks`` (all sinks
done), ``batch.after_ledger`` (the batch's ledger entry written, before Spark's commit log
entry); during a backfill (:mod:`runner.runtime.start.backfill`) ``backfill.start``,
``backfill.after_commit:<model>``, ``backfill.before_live`` and ``backfill.after_live`` (the
batch and sink points fire there too, with the original batch ids); on the Kafka Python
reader ``kafka.initial_offset`` (batch 0's resolved start recorded in the checkpoint, before
batch 0 is planned).
The variable is read once per process; production never sets it.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["FailpointError", "failpoint"]


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


def failpoint(point: str, *, batch_id: int | None = None) -> None:
    """Fail here if ``point`` is armed for ``batch_id``; otherwise do nothing (cheap)."""
    for fp in _armed():
        if fp.point == point and (fp.batch_id is None or fp.batch_id == batch_id):
            if fp.action == "exit":
                os._exit(137)
            if fp.action.startswith("sleep:"):
                print(f"failpoint {point} sleeping", file=sys.stderr, flush=True)
                time.sleep(float(fp.action.removeprefix("sleep:")))
                continue
            raise FailpointError(f"failpoint {point} hit at batch {batch_id}")
