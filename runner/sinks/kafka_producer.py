"""One Kafka model's transactional producer, and its replacement when its brokers went away.

A producer that lost its brokers (a broker restart, a network cut) is not trusted with another
transaction: librdkafka can keep a stale group coordinator and then block in
``send_offsets_to_transaction`` far past the timeout it was given (a broker restart mid-batch
held a stream until it was killed). So:

- the producer's ``error_cb`` notes a lost connection (:attr:`ModelProducer.lost`); the writer
  replaces such a producer before its next transaction, and retries a failed transaction once on
  a fresh one (:func:`renewable`);
- a fresh producer has the **same** ``transactional.id``: its ``init_transactions()`` fences the
  old one and aborts the old one's open transaction, whose records never become visible; the
  marker is then read again, so a commit that reached the broker before the failure is
  recognised and not produced twice;
- every transactional call runs under a wall-clock bound (:func:`bounded`): a call still
  blocked after its timeout plus a grace raises :class:`StuckCall` and the producer is
  abandoned (never closed: its destructor would block too), so the batch ends with an error
  rather than a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from runner.errors import KafkaRecordError, SinkError
from runner.sinks.kafka_markers import marker_consumer
from runner.sinks.kafka_markers import reason_of as _reason

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer

    from runner.project.kafka_outputs import KafkaOutputs
    from runner.sinks.base import SinkSpec

__all__ = ["PARKING", "PARK_HINT", "ModelProducer", "StuckCall", "bounded", "renewable"]

T = TypeVar("T")

#: librdkafka's error names that are the model's own (its topic, its records, its
#: transactional id): the transaction is aborted and the model parked, not the pipeline.
PARKING = {"UNKNOWN_TOPIC_OR_PART": "the topic does not exist",
           "_UNKNOWN_TOPIC": "the topic does not exist",
           "TOPIC_AUTHORIZATION_FAILED": "this client may not write the topic",
           "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "this client may not use the model's "
                                                    "transactional id",
           "MSG_SIZE_TOO_LARGE": "a record is larger than the topic or client allows",
           "RECORD_LIST_TOO_LARGE": "a record is larger than the topic or client allows",
           "INVALID_RECORD": "the broker refused a record",
           "_UNKNOWN_PARTITION": "a partition column names a partition the topic has not"}

PARK_HINT = ("create the topic or grant the producer's principal write on it and on the "
             "model's transactional id (or fix the record), then restart: the model catches "
             "up from the retained history")

#: Delivery errors of records librdkafka purged when their transaction failed.
_PURGED = frozenset({"_PURGE_QUEUE", "_PURGE_INFLIGHT"})

#: Seconds a transactional call may run past its own timeout before it counts as stuck.
GRACE = 10.0

#: librdkafka's errors that say the connection to the brokers was lost.
_LOST = {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_TIMED_OUT"}

#: Producers abandoned with a call still blocked inside librdkafka: kept referenced so that
#: no destructor (which would block as well) runs before the process ends.
_ABANDONED: list[Any] = []


class StuckCall(Exception):
    """A transactional call did not return within its bound."""


def bounded(call: Callable[[], T], seconds: float, what: str) -> T:
    """``call()``'s result, or :class:`StuckCall` when it has not returned after ``seconds``
    (the call goes on in its daemon thread; the caller must abandon the producer)."""
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failure.append(e)

    thread = threading.Thread(target=run, name=f"kafka-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise StuckCall(f"{what} did not return within {seconds:g} s")
    if failure:
        raise failure[0]
    return result[0]


def renewable(e: BaseException) -> bool:
    """Whether a failed transaction may be tried again on a fresh producer: a stuck call, a
    lost connection, a timeout, or an error Kafka calls retriable or abortable. Not a fenced
    producer (another runner owns the id now), nor the runner's own errors."""
    if isinstance(e, StuckCall):
        return True
    err = e.args[0] if e.args and hasattr(e.args[0], "name") else None
    if err is None:
        return False
    if _fenced(err):
        return False
    return bool(err.name() in _LOST or err.retriable() or err.txn_requires_abort()
                or err.fatal())


class ModelProducer:
    """One model's producer, its marker consumer and its last committed batch.

    Raises:
        SinkError: the producer could not start its transactions (brokers unreachable within
            ``timeout``, not authorized).
    """

    def __init__(self, outputs: KafkaOutputs, spec: SinkSpec, config: dict[str, Any],
                 timeout: float) -> None:
        from confluent_kafka import Producer

        self.errors: list[Any] = []
        self.lost = False
        self.timeout = timeout
        self.producer: Producer = Producer({**config, "on_delivery": self._delivered,
                                            "error_cb": self._error})
        self.consumer: Consumer = marker_consumer(outputs, spec.app_id)
        try:  # fences a predecessor with the same id and aborts its open transaction
            self.call(lambda: self.producer.init_transactions(timeout), "init_transactions")
        except Exception as e:  # KafkaException: brokers unreachable, not authorized
            self.abandon()
            name = e.args[0].name() if e.args and hasattr(e.args[0], "name") else None
            if name in PARKING:
                raise KafkaRecordError(
                    f"model {spec.model}: {PARKING[name]} (transactional id {spec.app_id}; "
                    f"Kafka {name})", error_class=f"KAFKA_{name}", hint=PARK_HINT) from e
            raise SinkError(f"model {spec.model}: the Kafka producer could not start its "
                            f"transactions: {_reason(e)}",
                            hint="check kafka_outputs in the profile (brokers, security) and "
                                 "the transactional id's ACLs") from e
        self.committed: int | None = None
        self.topics_ok: set[str] = set()

    def call(self, fn: Callable[[], T], what: str) -> T:
        """``fn()`` under the bound (its timeout plus :data:`GRACE`); a stuck call abandons
        this producer."""
        try:
            return bounded(fn, self.timeout + GRACE, what)
        except StuckCall:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Stop using this producer: kept referenced, never flushed nor destroyed here."""
        _ABANDONED.append(self.producer)
        self.lost = True

    def close(self) -> None:
        self.consumer.close()

    def _delivered(self, err: Any, msg: Any) -> None:  # noqa: ARG002 - librdkafka's signature
        # a record purged from the queue failed because its transaction did: the cause is the
        # transaction's own error (TOPIC_AUTHORIZATION_FAILED...), which the call raises
        if err is not None and len(self.errors) < 1 and err.name() not in _PURGED:
            self.errors.append(err)

    def _error(self, err: Any) -> None:
        if _fenced(err):  # another producer owns the id now: never replaced by this runner
            return
        if err.name() in _LOST or err.fatal():
            self.lost = True


def _fenced(err: Any) -> bool:
    return "FENCED" in err.name() or err.name() == "INVALID_PRODUCER_EPOCH"
