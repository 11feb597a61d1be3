"""Kafka topics as outputs, exactly once per batch: Kafka transactions keyed by batch id.

Spark's own Kafka sink is at-least-once: a replayed batch produces its records again. Here each
``materialized='kafka'`` model has one transactional producer whose ``transactional.id`` is the
model's application id (:func:`runner.sinks.base.app_id`: pipeline, model and the checkpoint's
query id, so a new checkpoint gets a new one and a restart keeps it). Per batch:

1. ``init_transactions()`` (once per process and model): fences a dead predecessor with the
   same id, aborting its open transaction, so none of its records ever becomes visible;
2. the model's last committed batch is read: the committed offset of the consumer group named
   by the transactional id on partition 0 of the runner-owned control topic, fetched with
   ``isolation.level=read_committed`` (the broker answers only once no transaction holds a
   pending offset for that group; :mod:`runner.sinks.kafka_markers`, which ``runner status``
   reads it with too); a batch at or below it is skipped, as Delta's
   ``txnVersion`` check skips a table's;
3. ``begin_transaction()``, every row produced as one record, then the batch id committed as
   that group's offset (``offset = batch id + 1``) with ``send_offsets_to_transaction``, then
   ``commit_transaction()``: the records and the batch marker become visible together, or not
   at all. A consumer reading with ``isolation.level=read_committed`` sees every row once.

The rows reach the driver once (``toArrow()`` of the record columns, built in Spark:
``value`` is the model's ``value`` column or ``to_json(struct(<other columns>))``) and are
produced from there: one producer per model, no executor holds a producer, so a batch is one
transaction whatever its partitions. A topic that does not exist, a topic or transactional id
the client may not use, and a record over the size limit abort the transaction and park the
model (:class:`~runner.errors.KafkaRecordError`). A transaction that failed because the brokers
went away is tried once more on a fresh producer (:mod:`runner.sinks.kafka_producer`: same
transactional id, the marker read again first); any other failure (fenced, or the retry failed
too) fails the batch, whose replay finds the marker or not and produces accordingly.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runner.errors import KafkaRecordError, SinkError
from runner.failpoints import failpoint
from runner.sinks.kafka_markers import brokers_of as _brokers
from runner.sinks.kafka_markers import marker_of
from runner.sinks.kafka_markers import reason_of as _reason
from runner.sinks.kafka_producer import PARK_HINT as _PARK_HINT
from runner.sinks.kafka_producer import PARKING as _PARKING
from runner.sinks.kafka_producer import ModelProducer, renewable

if TYPE_CHECKING:
    from collections.abc import Collection

    import pyarrow as pa
    from confluent_kafka import Producer
    from pyspark.sql import DataFrame

    from runner.compile.plan import Plan
    from runner.project.kafka_outputs import KafkaOutputs
    from runner.sinks.base import SinkSpec, WriteResult

__all__ = ["PRODUCER_DEFAULTS", "KafkaWriter", "producer_config", "refuse_kafka_refresh"]

#: The producer's settings for throughput, under the operator's options (docs/KAFKA.md):
#: acks=all and idempotence are what transactions need anyway; large batches with a short
#: linger and lz4 keep a batch's records in few requests; a queue that holds a large batch whole.
PRODUCER_DEFAULTS: Mapping[str, str] = {
    "acks": "all",
    "linger.ms": "20",
    "batch.size": "1000000",
    "batch.num.messages": "100000",
    "compression.type": "lz4",
    "queue.buffering.max.messages": "1000000",
    "queue.buffering.max.kbytes": "1048576",
    "transaction.timeout.ms": "120000",
    "allow.auto.create.topics": "false",  # an unknown topic parks the model, not created
}

#: Set by the runner whatever the options say: what exactly-once rests on.
_FORCED = ("transactional.id", "enable.idempotence")


def refuse_kafka_refresh(plan: Plan, *, full_refresh: bool, rebuild: Collection[str]) -> None:
    """Refuse, before anything changes, a refresh that would produce a Kafka model's batches
    again: a topic cannot be emptied and its consumers have read it, so a rebuild would
    deliver every record twice (docs/KAFKA.md "Rebuilds").

    Raises:
        ConfigError: names the model and the ways out (exit 2).
    """
    from runner.errors import ConfigError

    kafka = [s.name for s in plan.steps if s.config.materialized == "kafka"]
    hit = [m for m in kafka if full_refresh or m in set(rebuild)]
    if not hit:
        return
    what = ("--full-refresh starts a new checkpoint" if full_refresh
            else f"--full-refresh --select {hit[0]} rebuilds it from the retained history")
    raise ConfigError(
        f"{what}: Kafka model {hit[0]} would produce its batches to its topic again (a topic "
        "cannot be emptied; its consumers have read those records)",
        hint="to produce the history again, add the model under a new name writing to a new "
             "topic (a model new to the checkpoint is backfilled, exactly once); for a "
             "--full-refresh of the tables, set enabled=false on the Kafka models first "
             "(re-enabled with backfill=false they continue from the next batch)")


def producer_config(outputs: KafkaOutputs, transactional_id: str) -> dict[str, str]:
    """The producer's configuration: the runner's defaults, the operator's options (the profile
    target's, never the project's), then the transactional settings, always the runner's."""
    options = {k: v.get_secret_value() for k, v in outputs.options.items()}
    forced = {"transactional.id": transactional_id, "enable.idempotence": "true"}
    return {**PRODUCER_DEFAULTS, **{k: v for k, v in options.items() if k not in _FORCED},
            **forced, "bootstrap.servers": _brokers(outputs)}


class KafkaWriter:
    """Produces each Kafka model's batches, once per (transactional id, batch id).

    Args:
        outputs: the profile target's brokers, client options and control topic.
        timeout: seconds for one transactional call (init, commit, the marker's fetch).
    """

    engine = "kafka"

    def __init__(self, outputs: KafkaOutputs, *, timeout: float = 60.0) -> None:
        self.outputs, self.timeout = outputs, timeout
        self._models: dict[str, ModelProducer] = {}
        self._lock = threading.Lock()
        self._control_ready = False

    def _model(self, spec: SinkSpec, *, renew: bool = False) -> ModelProducer:
        """The model's producer; a fresh one (same transactional id: it fences the old one and
        aborts its open transaction; the marker read again) when ``renew`` or when the old one
        lost its brokers."""
        with self._lock:
            if not self._control_ready:
                self._ensure_control_topic()
            model = self._models.get(spec.app_id)
            if model is not None and (renew or model.lost):
                del self._models[spec.app_id]
                model.close()
                model = None
            if model is None:
                config = producer_config(self.outputs, spec.app_id)
                model = ModelProducer(self.outputs, spec, config, self.timeout)
                self._models[spec.app_id] = model
                model.committed = self._fetch_marker(spec, model)
            return model

    def _ensure_control_topic(self) -> None:
        """Create the control topic (one partition) when absent: its partition 0 anchors the
        batch markers (offsets of a group on a topic that does not exist are refused)."""
        from confluent_kafka.admin import AdminClient, NewTopic

        options = {k: v.get_secret_value() for k, v in self.outputs.options.items()}
        admin = AdminClient({**options, "bootstrap.servers": _brokers(self.outputs)})
        name = self.outputs.control_topic
        try:
            if name not in admin.list_topics(timeout=self.timeout).topics:
                future = admin.create_topics([NewTopic(name, 1, -1)])[name]
                try:
                    future.result(self.timeout)
                except Exception as e:
                    if "TOPIC_ALREADY_EXISTS" not in str(e):
                        raise
        except Exception as e:
            raise SinkError(f"the Kafka control topic {name} could not be made ready: "
                            f"{_reason(e)}", hint="create it (one partition) or let this "
                            "client create topics; name another with kafka_outputs."
                            "control_topic in the profile") from e
        self._control_ready = True

    def _fetch_marker(self, spec: SinkSpec, model: ModelProducer) -> int | None:
        try:
            return model.call(lambda: marker_of(model.consumer, self.outputs.control_topic,
                                                timeout=self.timeout), "the marker's fetch")
        except Exception as e:
            raise SinkError(f"model {spec.model}: its last committed batch could not be read "
                            f"from Kafka: {_reason(e)}") from e

    def last_batches(self) -> dict[str, int | None]:
        """Transactional id -> last committed batch, of the models this writer has opened
        (what it knows: no broker is asked; the batch ledger records it after each batch)."""
        with self._lock:
            return {app: m.committed for app, m in self._models.items()}

    def committed_version(self, spec: SinkSpec) -> int | None:
        """The last batch committed to ``spec``'s topic(s) under its transactional id."""
        return self._model(spec).committed

    def write(self, spec: SinkSpec, data: DataFrame | pa.Table, batch_id: int, *,
              permit: Any = None) -> WriteResult:
        """Produce ``data``'s rows as batch ``batch_id`` in one transaction, or skip it.

        Raises:
            KafkaRecordError: the model's own topic or records failed (parked; aborted).
            SinkError: any other failure (the batch fails; its replay decides again).
        """
        from runner.sinks.base import WriteResult

        started = time.perf_counter()
        model = self._model(spec)
        if model.committed is not None and model.committed >= batch_id:
            return WriteResult(spec.model, 0, True, None, time.perf_counter() - started)
        table = records_of(data)
        self._check_topics(spec, model, table, batch_id)
        try:
            rows = self._transaction(spec, model, table, batch_id, permit)
        except _Renew:  # once more on a fresh producer, which reads the marker again first
            model = self._model(spec, renew=True)
            if model.committed is not None and model.committed >= batch_id:  # it did commit
                return WriteResult(spec.model, 0, True, None, time.perf_counter() - started)
            try:
                rows = self._transaction(spec, model, table, batch_id, permit)
            except _Renew as again:
                raise again.error from again.__cause__
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        return WriteResult(spec.model, rows, False, None, time.perf_counter() - started)

    def _transaction(self, spec: SinkSpec, model: ModelProducer, table: pa.Table,
                     batch_id: int, permit: Any) -> int:
        """One transaction: the rows and the marker, committed; returns the rows produced.

        Raises:
            _Renew: it failed in a way a fresh producer may not (lost brokers, a stuck or
                abortable call), carrying the error to raise if the retry fails too.
            KafkaRecordError: the model's own topic or records failed (aborted).
            SinkError: any other failure (aborted).
        """
        producer = model.producer
        model.errors.clear()
        try:
            model.call(producer.begin_transaction, "begin_transaction")
            rows = _produce(producer, table, spec.topic, model.errors)
            self._mark(model, batch_id)
            failpoint(f"sink.before_commit:{spec.model}", batch_id=batch_id)
            if permit is not None:
                permit()
            model.call(lambda: producer.commit_transaction(self.timeout), "commit_transaction")
        except BaseException as e:  # judged before the abort, whose purge reports every
            error = _error(spec, batch_id, list(model.errors), e)  # queued record as failed
            if not model.lost:
                _abort(model, self.timeout)
            if not isinstance(error, KafkaRecordError) and renewable(e):
                raise _Renew(error) from e
            raise error from e
        model.committed = batch_id
        return rows

    def _check_topics(self, spec: SinkSpec, model: ModelProducer, table: pa.Table,
                      batch_id: int) -> None:
        """Every topic the batch goes to exists and this client may write it (asked of the
        brokers' metadata before the transaction: librdkafka would otherwise hold the records
        of an unknown topic until the transaction times out)."""
        from runner.errors import KafkaRecordError

        if "topic" in table.column_names:
            wanted = {t for t in table.column("topic").unique().to_pylist() if t is not None}
        else:
            wanted = {spec.topic} if spec.topic and table.num_rows else set()
        for topic in sorted(wanted - model.topics_ok):
            try:
                meta = model.producer.list_topics(topic=topic, timeout=self.timeout)
            except Exception as e:
                raise SinkError(f"model {spec.model}: Kafka's metadata for topic {topic} could "
                                f"not be read: {_reason(e)}") from e
            found = meta.topics.get(topic)
            code = found.error.name() if found is not None and found.error else None
            if found is None or code in _PARKING:
                name = code or "UNKNOWN_TOPIC_OR_PART"
                raise KafkaRecordError(
                    f"model {spec.model}: {_PARKING[name]} (topic {topic}; Kafka {name}) in "
                    f"batch {batch_id}", error_class=f"KAFKA_{name.lstrip('_')}",
                    hint=_PARK_HINT)
            model.topics_ok.add(topic)

    def _mark(self, model: ModelProducer, batch_id: int) -> None:
        from confluent_kafka import TopicPartition

        anchor = TopicPartition(self.outputs.control_topic, 0, batch_id + 1, f"batch {batch_id}")
        group = model.consumer.consumer_group_metadata()
        model.call(lambda: model.producer.send_offsets_to_transaction([anchor], group,
                                                                      self.timeout),
                   "send_offsets_to_transaction")

    def close(self) -> None:
        """Release every producer and consumer. Nothing is left to flush: between batches
        every transaction is committed or aborted, and a fenced producer (its fatal error
        raised by the write that met it) must not be flushed: its delivery callbacks would
        raise again inside librdkafka's poll."""
        with self._lock:
            for model in self._models.values():
                model.close()
            self._models.clear()


def records_of(data: DataFrame | pa.Table) -> pa.Table:
    """The record columns of a model's rows, on the driver: ``key``, ``value`` (the model's, or
    the other columns as JSON), and ``headers``, ``partition``, ``topic`` when present."""
    from runner.lint.checks.kafka import RECORD_COLUMNS

    if not type(data).__module__.startswith("pyspark."):
        return _arrow_records(data)  # an Arrow table (tests, tools): JSON made here
    from pyspark.sql import functions as F

    df: DataFrame = data
    names = {c.lower(): c for c in df.columns}
    cols = [F.col(f"`{names[c]}`").alias(c) for c in ("key", "headers", "partition", "topic")
            if c in names]
    if "value" in names:
        value = F.col(f"`{names['value']}`")
    else:
        rest = [F.col(f"`{c}`") for c in df.columns if c.lower() not in RECORD_COLUMNS]
        value = F.to_json(F.struct(*rest))
    return df.select(value.alias("value"), *cols).toArrow()


def _arrow_records(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    from runner.lint.checks.kafka import RECORD_COLUMNS

    if "value" in table.column_names:
        return table
    rest = [c for c in table.column_names if c.lower() not in RECORD_COLUMNS]
    values = [json.dumps(row, default=str, separators=(",", ":"))
              for row in table.select(rest).to_pylist()]
    return table.append_column("value", pa.array(values, pa.string()))


def _produce(producer: Producer, table: pa.Table, topic: str | None, errors: list[Any]) -> int:
    """Produce every row; returns how many. Waits for queue room when it is full."""
    n = int(table.num_rows)
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    values = cols["value"]
    keys = cols.get("key") or [None] * n
    topics = cols.get("topic") or [topic] * n
    parts = cols.get("partition")
    heads = cols.get("headers")
    for i in range(n):
        kwargs: dict[str, Any] = {}
        if parts is not None and parts[i] is not None:
            kwargs["partition"] = parts[i]
        if heads is not None and heads[i]:
            kwargs["headers"] = [(h["key"], h["value"]) for h in heads[i]]
        while True:
            try:
                producer.produce(topics[i], values[i], keys[i], **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
        if errors:
            raise _DeliveryFailed(errors[0])
        if i % 50_000 == 49_999:
            producer.poll(0)
    return n


class _Renew(Exception):
    """A failed transaction worth one more try on a fresh producer (``error``: what to raise
    if that fails too)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _DeliveryFailed(Exception):
    def __init__(self, err: Any) -> None:
        super().__init__(str(err))
        self.err = err


def _abort(model: ModelProducer, timeout: float) -> None:
    try:
        model.call(lambda: model.producer.abort_transaction(timeout), "abort_transaction")
    except Exception:  # noqa: BLE001 - fenced, fatal or stuck: a fresh producer aborts it
        model.lost = True


def _code_name(e: BaseException, delivered: list[Any]) -> str | None:
    err = delivered[0] if delivered else getattr(e, "err", None)
    if err is None and e.args and hasattr(e.args[0], "name"):
        err = e.args[0]
    return err.name() if err is not None and hasattr(err, "name") else None


def _error(spec: SinkSpec, batch_id: int, delivered: list[Any], e: BaseException) -> Exception:
    """The project's error for a failed transaction: parked when the topic or a record is the
    model's fault, else a sink failure."""
    if isinstance(e, (SinkError, KeyboardInterrupt, SystemExit)) or not isinstance(e, Exception):
        return e if isinstance(e, Exception) else SinkError(str(e))
    name = _code_name(e, delivered)
    where = spec.topic or "its topics"
    if name in _PARKING:
        return KafkaRecordError(
            f"model {spec.model}: {_PARKING[name]} ({where}; Kafka {name}) in batch {batch_id}",
            error_class=f"KAFKA_{name.lstrip('_')}", hint=_PARK_HINT)
    if type(e).__module__.startswith("runner."):
        return e
    err = delivered[0] if delivered else None  # librdkafka's own error, when it reported one
    reason = str(err.str()) if err is not None and hasattr(err, "str") else _reason(e)
    return SinkError(f"model {spec.model}: Kafka transaction of batch {batch_id} to {where} "
                     f"failed: {reason}",
                     hint="check the brokers, then restart: the batch is replayed, a committed "
                          "transaction is skipped")
