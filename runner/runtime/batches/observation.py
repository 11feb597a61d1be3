"""Counting without an action of its own: ``DataFrame.observe`` metrics, read when ready.

An ``Observation`` is filled by the first action that computes its frame. When that action may
not have run (a sink skipped on a replay writes nothing), ``Observation.get`` would block for
good: :func:`ready_metrics` asks first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Observation

__all__ = ["ready_metrics"]


def ready_metrics(observation: Observation) -> dict[str, Any] | None:
    """The observation's metrics if an action has filled them, else None (never blocks)."""
    # pyspark has no public "is it filled?": ask the JVM-side Observation's future.
    if not hasattr(observation, "_jo"):  # no JVM-side handle (Spark Connect): ask directly
        return observation.get
    jo = observation._jo  # noqa: SLF001 - the observation's Java object (py4j)
    if jo is None:  # not attached to any frame yet
        return None
    try:
        done = bool(jo.future().isCompleted())
    except Exception:  # noqa: BLE001 - py4j could not ask: ask directly
        done = True
    return observation.get if done else None
