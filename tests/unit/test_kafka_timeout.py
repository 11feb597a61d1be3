"""Spark's Kafka source reports an unreachable broker as the Java client's TimeoutException;
the stream turns it into the same one-line message as the Python reader (no JVM needed here:
a streaming query's error carries its Java cause as ``Throwable.toString()`` text)."""

from __future__ import annotations

from runner.spark_errors import is_kafka_timeout


def test_the_java_clients_timeout_is_recognised_by_its_class_name() -> None:
    error = RuntimeError("org.apache.kafka.common.errors.TimeoutException: Timed out waiting "
                         "for a node assignment. Call: listNodes\n\tat ...")
    assert is_kafka_timeout(error)


def test_other_errors_and_look_alikes_are_not() -> None:
    assert not is_kafka_timeout(RuntimeError("java.util.concurrent.TimeoutException: x"))
    assert not is_kafka_timeout(RuntimeError("the word org.apache.kafka.common.errors."
                                             "TimeoutException later in a line"))
    assert not is_kafka_timeout(ValueError("boom"))
