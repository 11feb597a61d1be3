"""Change data capture, SCD type 1 (:mod:`.cdc`) or 2 (:mod:`.scd2`): the one place that picks.

Both engines take :func:`prepare` as their ``DeltaWriter._changes`` step and
:func:`merge_clauses` for the MERGE of a CDC model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from runner.errors import SinkError
from runner.sinks import cdc, scd2
from runner.sinks.base import SinkSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from runner.sinks.base import DeltaWriter

__all__ = ["merge_clauses", "prepare"]


def prepare(writer: DeltaWriter, spec: SinkSpec, data: Any, batch_id: int,
            rows_hint: int | None) -> tuple[SinkSpec, DataFrame]:
    """The side table of ``spec``'s batch written, then the spec and rows to write."""
    if not type(data).__module__.startswith("pyspark."):
        raise SinkError(f"model {spec.model}: change data capture writes DataFrames only")
    step = scd2.prepare if spec.scd_type == 2 else cdc.prepare
    return step(writer, spec, data, batch_id, rows_hint)


def merge_clauses(spec: SinkSpec, columns: Sequence[str]) -> cdc.CdcMerge:
    """The MERGE clauses of a CDC model's source with ``columns``."""
    return scd2.history_merge(spec, columns) if spec.scd_type == 2 else \
        cdc.cdc_merge(spec, columns)
