"""One writer for a plan whose models go to Delta tables and to Kafka topics.

The batch, the backfill and the start-up's checks talk to one :class:`~runner.sinks.base.
DeltaWriter`; :class:`Outputs` is that writer when some models are ``materialized='kafka'``:
a Kafka model's spec goes to the :class:`~runner.sinks.kafka_out.KafkaWriter` (its "committed
version" is its last committed batch), every other to the Delta engine. The Delta engine's
choice (``spark`` | ``rs``) does not change how records are produced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runner.sinks.base import DeltaWriter, SinkSpec, WriteResult

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from runner.sinks.kafka_out import KafkaWriter

__all__ = ["Outputs", "is_kafka"]


def is_kafka(spec: SinkSpec) -> bool:
    """Whether ``spec`` is a Kafka model's (no Delta table)."""
    return spec.materialized == "kafka"


class Outputs(DeltaWriter):
    """Routes each spec to its writer: Kafka models to ``kafka``, tables to ``delta``."""

    def __init__(self, delta: DeltaWriter, kafka: KafkaWriter) -> None:
        self.delta, self.kafka = delta, kafka
        self.engine = delta.engine  # type: ignore[misc]  # the Delta engine's name, as shown
        self.permit = delta.permit

    def write(self, spec: SinkSpec, data: DataFrame | pa.Table, batch_id: int, *,
              rows_hint: int | None = None) -> WriteResult:
        if is_kafka(spec):
            return self.kafka.write(spec, data, batch_id, permit=self.permit)
        return self.delta.write(spec, data, batch_id, rows_hint=rows_hint)

    def committed_version(self, spec: SinkSpec) -> int | None:
        """A table's transaction version; a Kafka model's last committed batch."""
        if is_kafka(spec):
            return self.kafka.committed_version(spec)
        return self.delta.committed_version(spec)

    def foreign_app_ids(self, spec: SinkSpec) -> set[str]:
        return set() if is_kafka(spec) else self.delta.foreign_app_ids(spec)

    def drop(self, spec: SinkSpec) -> None:
        """A topic is not dropped (the start-up refuses a refresh that would produce a Kafka
        model's batches again: :func:`runner.runtime.start.startup.refuse_kafka_refresh`)."""
        if not is_kafka(spec):
            self.delta.drop(spec)

    def close(self) -> None:
        self.kafka.close()

    def _changes(self, spec: SinkSpec, data: Any, batch_id: int,
                 rows_hint: int | None) -> tuple[SinkSpec, DataFrame]:
        return self.delta._changes(spec, data, batch_id, rows_hint)  # noqa: SLF001 - delegated

    def _append(self, spec: SinkSpec, data: Any, batch_id: int) -> tuple[int, int | None]:
        return self.delta._append(spec, data, batch_id)  # noqa: SLF001 - delegated

    def _merge(self, spec: SinkSpec, data: Any, batch_id: int) -> tuple[int, int | None]:
        return self.delta._merge(spec, data, batch_id)  # noqa: SLF001 - delegated
