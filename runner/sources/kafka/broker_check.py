"""Before the query starts: can the brokers be reached, do the topics exist, may this client
read them? Bounded by ``source.connect_timeout``; every failure is a :class:`ConfigError`
(exit 2) whose one line names the brokers and the problem.

Three steps, each with the wait left of the one timeout:

1. a TCP connection to each bootstrap address (retried once a second until one answers): a
   closed port, a name that does not resolve or a host that does not answer is named as such;
2. the topics' metadata through the client the query will use, with its own security
   settings: Spark's Kafka source (the Java client, ``spark``) through the session's JVM, the
   runner's Python reader through confluent-kafka (:func:`watermarks`). Unknown topics, failed
   authentication (SASL, TLS) and missing authorisation are named; a client that gets no
   answer over an open port (a TLS or SASL client on a plaintext listener, or the reverse)
   is told to check its security settings.

Spark's own look-ups (3 attempts of the Java client's 60 s API timeout each) kept a
``--available-now`` run with a closed port going for minutes; this check ends it first.
"""

from __future__ import annotations

import difflib
import logging
import socket
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.sources.kafka.admin import list_watermarks, read_committed
from runner.sources.kafka.options import client_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.project.config import KafkaSource

__all__ = ["check_brokers", "reach_bootstrap", "watermarks"]


def _addresses(servers: str) -> list[tuple[str, int]]:
    out = []
    for item in (s.strip() for s in servers.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise ConfigError(f"source.bootstrap_servers: {item!r} is not host:port",
                              hint="write host:port[,host:port...], e.g. broker-1:9092")
        out.append((host.strip("[]") or "localhost", int(port)))
    if not out:
        raise ConfigError("source.bootstrap_servers is empty", hint="write host:port[,...]")
    return out


def _why(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(error, (TimeoutError, socket.timeout)):
        return "no answer (a wrong host, or a firewall)"
    return error.strerror or type(error).__name__


def reach_bootstrap(servers: str, *, timeout: float) -> None:
    """Return once one bootstrap address accepts a TCP connection; retry every second.

    Raises:
        ConfigError: none did within ``timeout`` seconds (names each address and why).
    """
    deadline = time.monotonic() + timeout
    addresses = _addresses(servers)
    while True:
        problems = []
        for host, port in addresses:
            left = deadline - time.monotonic()
            try:
                with socket.create_connection((host, port), timeout=max(0.2, min(left, 5.0))):
                    return
            except OSError as e:
                problems.append(f"{host}:{port}: {_why(e)}")
        if time.monotonic() + 1.0 >= deadline:
            raise ConfigError(
                f"cannot reach the Kafka brokers at {servers} within {timeout:g} s: "
                f"{'; '.join(problems)}; check source.bootstrap_servers in the profile's target "
                "(source.connect_timeout sets the wait)")
        time.sleep(1.0)


def watermarks(client_config: Mapping[str, Any], topics: Sequence[str], *,
               timeout: float) -> dict[tuple[str, int], tuple[int, int]]:
    """Low and high watermark of every partition of ``topics`` (confluent-kafka's admin).

    Args:
        client_config: librdkafka properties, ``bootstrap.servers`` among them.

    Raises:
        ConfigError: no metadata within ``timeout`` (with the client's own last error: TLS,
            SASL), a topic that does not exist (with "did you mean"), or one this client may
            not read.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    servers = str(client_config.get("bootstrap.servers", ""))
    errors: list[Any] = []
    config = {"logger": logging.getLogger("runner.kafka.client"), **client_config,
              "error_cb": errors.append,
              "socket.timeout.ms": max(1000, int(timeout * 1000))}
    admin = AdminClient(config)
    deadline = time.monotonic() + timeout
    while True:  # in slices of a second: a failed authentication ends it at once
        try:
            listing = list_watermarks(admin, topics,
                                      timeout=max(0.1, min(1.0, deadline - time.monotonic())),
                                      committed=read_committed(client_config))
            break
        except KafkaException as e:
            admin.poll(0)
            auth = KafkaError._AUTHENTICATION  # noqa: SLF001 - librdkafka's code, spelt so
            denied = any(err.code() == auth for err in errors)
            if not denied and time.monotonic() < deadline:
                continue
            within = "" if denied else f" within {timeout:.0f} s"
            raise ConfigError(
                f"no metadata or offsets from the Kafka brokers at {servers}{within}: "
                f"{errors[-1].str() if errors else e.args[0].str()}; check the client's "
                "security options (security.protocol, ssl.*, sasl.*) against the broker's "
                "listener") from e
    for topic in listing.missing:
        raise _unknown_topic(topic, servers, listing.existing)
    for topic, error in listing.refused.items():
        raise ConfigError(f"Kafka topic {topic!r} at {servers}: {error}")
    return {tp: (w.low, w.high) for tp, w in listing.marks.items()}


def _unknown_topic(topic: str, servers: str, existing: list[str]) -> ConfigError:
    close = difflib.get_close_matches(topic, existing, n=1)
    return ConfigError(
        f"Kafka topic {topic!r} does not exist at {servers}"
        + (f" (did you mean {close[0]!r}?)" if close else "")
        + "; check source.topic in project.yml")


_JAVA_PROBLEMS = {
    "SaslAuthenticationException": "authentication failed",
    "SslAuthenticationException": "the TLS handshake failed",
    "AuthenticationException": "authentication failed",
    "TopicAuthorizationException": "not authorised to read the topic",
    "TimeoutException": "no answer to a metadata request",
}


def _java_metadata(spark: SparkSession, servers: str, topics: Sequence[str],
                   client: Mapping[str, str], *, timeout: float) -> None:
    """The topics' metadata through the Java client Spark's Kafka source uses (same jars,
    same properties)."""
    from py4j.protocol import Py4JJavaError

    jvm: Any = spark._jvm  # noqa: SLF001 - the Java Kafka client lives in the session's JVM
    ms = max(1000, int(timeout * 1000))
    props = jvm.java.util.Properties()
    for key, value in {**client, "bootstrap.servers": servers, "request.timeout.ms": str(ms),
                       "default.api.timeout.ms": str(ms)}.items():
        props.setProperty(key, str(value))
    names = jvm.java.util.ArrayList()
    for topic in topics:
        names.add(topic)
    unit = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    admin = jvm.org.apache.kafka.clients.admin.AdminClient.create(props)
    try:
        admin.describeTopics(names).allTopicNames().get(ms + 1000, unit)
    except Py4JJavaError as e:
        cause = e.java_exception
        while cause.getCause() is not None and "ExecutionException" in cause.getClass().getName():
            cause = cause.getCause()
        kind = cause.getClass().getSimpleName()
        detail = str(cause.getMessage() or "").splitlines()[0] if cause.getMessage() else ""
        if kind == "UnknownTopicOrPartitionException":
            existing = sorted(admin.listTopics().names().get(ms, unit))
            missing = [t for t in topics if t not in existing] or list(topics)
            raise _unknown_topic(missing[0], servers, existing) from None
        problem = _JAVA_PROBLEMS.get(kind, kind)
        advice = ("check the client's security options (security.protocol, ssl.*, sasl.*) "
                  "against the broker's listener")
        if kind == "TimeoutException":
            problem += f" within {timeout:.0f} s"
        raise ConfigError(f"Kafka brokers at {servers} (Spark's Kafka source): {problem}"
                          + (f" ({detail})" if detail else "") + f"; {advice}") from None
    finally:
        admin.close(jvm.java.time.Duration.ofMillis(1000))


def check_brokers(spark: SparkSession | None, source: KafkaSource) -> None:
    """The whole pre-flight check (module docstring), within ``source.connect_timeout``.

    The client checked is the one the query will use: Spark's Kafka source (its Java client,
    through ``spark``'s JVM) for ``reader: spark`` and for ``auto`` when its classes load,
    else the runner's Python reader (confluent-kafka); both with ``source.options``' client
    properties (the keys with a dot).

    Raises:
        ConfigError: what the module docstring lists, in one line naming the brokers.
    """
    from runner.sources.kafka.reader import spark_kafka_available

    timeout = source.connect_timeout_seconds
    deadline = time.monotonic() + timeout
    servers = source.brokers
    client = client_properties(source)
    reach_bootstrap(servers, timeout=timeout)
    left = max(1.0, deadline - time.monotonic())
    with_spark = spark is not None and source.reader != "python" and (
        source.reader == "spark" or spark_kafka_available(spark))
    if with_spark and spark is not None and getattr(spark, "_jvm", None) is not None:
        _java_metadata(spark, servers, source.topics, client, timeout=left)
    else:  # the Python reader (or no JVM to ask: Spark Connect)
        watermarks({**client, "bootstrap.servers": servers}, source.topics, timeout=left)
