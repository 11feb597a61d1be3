"""Shared pytest fixtures.

``spark``: one local SparkSession (``local[2]``) for the whole test run, built with the
runner's own :func:`runner.runtime.client.session.build_session` and stopped at the end. Tests that
use it carry ``@pytest.mark.spark`` (added here when a test reaches it through a fixture, so
``-m "not spark and not kafka"`` starts no JVM: the Apache Kafka broker is a JVM too). Spark's log goes to a file under the run's base temp dir.
The session gets the JVM jars ``scripts/setup.sh`` fetched (delta-spark, Spark's Kafka source)
the way every runner session does; with ``RUNNER_REQUIRE_JARS=1`` (CI) a session without
delta-spark or Spark's Kafka source is an error, so no test is skipped for missing jars.

Object storage on loopback (``tests/support/object_store.py``), one server per test run:
``moto_server`` (S3, PyPI moto) and ``azurite`` (Azure Blob, npm, installed by set-up); each
test gets its own empty bucket from ``s3_bucket`` / ``azure_container`` (a ``Bucket``: ``uri``,
``name``, and ``env``, the standard variables that reach it).

``connect_server``: one standalone Spark Connect server (``tests/support/connect_server.py``)
for the test run, started on first use; tests that use it carry ``@pytest.mark.connect`` (and
``spark``: it is a JVM) and run the runner as a process with ``SPARK_REMOTE`` set.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.connect_server import ConnectServer
    from tests.support.object_store import AzuriteServer, Bucket, MotoServer

#: Fixtures that start a JVM, by the marker their tests must carry.
_JVM_FIXTURES = {"spark": {"spark", "delta_spark", "delta_engine", "connect_server"},
                 "kafka": {"kafka_broker", "apache_kafka", "apache_kafka_node", "bootstrap"},
                 "connect": {"connect_server"}}

# The suite's one driver JVM is launched by whichever test builds a session first (often a
# test running run_stream in process, with its project's settings, not the `spark` fixture's),
# and its heap is fixed at launch. Spark's launcher takes SPARK_DRIVER_MEMORY when the session's
# settings name none, so every JVM of the run gets 2 GB: a CI run lost the shared JVM to an
# OutOfMemoryError (the hostile records' parse) after a test had launched it with the 1 GB
# default. Runner processes the tests start inherit it too.
os.environ.setdefault("SPARK_DRIVER_MEMORY", "2g")

# The deployment's profiles of the test run (runner/project/profile.py): projects the tests write
# with deployment keys (a master, storage options, brokers, locations outside the project) get
# a target of their own here (tests/support/projects.py: with_profile); runner processes the
# tests start inherit it. Never ~/.runner: a developer's own profile must not change a test.
if "RUNNER_PROFILES_DIR" not in os.environ:
    _profiles = tempfile.mkdtemp(prefix="runner-profiles-")
    (Path(_profiles) / "profiles.yml").write_text("{}\n")
    os.environ["RUNNER_PROFILES_DIR"] = _profiles
os.environ.pop("RUNNER_TARGET", None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that reaches a Spark session or a broker through its fixtures, so the
    markers tell the truth whatever the test file says."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in _JVM_FIXTURES.items():
            if names & fixtures and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """The test run's shared SparkSession (``local[2]``, UTC, loopback, quiet)."""
    from runner.runtime.client.session import build_session, stop_session

    log_dir = tmp_path_factory.mktemp("spark-logs")
    # One session serves the whole suite (hundreds of streams, the 10 MB hostile records):
    # 2 GB of heap (SPARK_DRIVER_MEMORY above, for a JVM a test launched first), not 1 GB:
    # an OutOfMemoryError in a task ends a local-mode JVM (the executor is the driver).
    session = build_session(master="local[2]", app_name="runner-tests", log_dir=str(log_dir),
                            conf={"spark.driver.memory": "2g"})
    if os.environ.get("RUNNER_REQUIRE_JARS") == "1":
        _require_jars(session)
    try:
        yield session
    finally:
        stop_session(session)


def _require_jars(session: SparkSession) -> None:
    from runner.runtime.client.session import missing_jars_note, stop_session
    from runner.sinks import delta_spark_available
    from runner.sources.kafka import spark_kafka_available

    missing = [name for name, ok in (("delta-spark", delta_spark_available(session)),
                                     ("spark-sql-kafka", spark_kafka_available(session)))
               if not ok]
    if missing:
        stop_session(session)
        pytest.fail(f"RUNNER_REQUIRE_JARS=1 but {', '.join(missing)} did not load: "
                    f"{missing_jars_note()}", pytrace=False)


#: The Delta engines every exactly-once test runs on (docs/ENGINES.md).
ENGINES = ("rs", "spark")


@pytest.fixture
def delta_spark(request: pytest.FixtureRequest) -> None:
    """Needs delta-spark's jars (``scripts/setup.sh`` fetches them): skipped with the reason
    without them, a failure under ``RUNNER_REQUIRE_JARS=1`` (CI: the ``spark`` fixture)."""
    from runner.sinks import delta_spark_available

    session = request.getfixturevalue("spark")
    if not delta_spark_available(session):
        from runner.runtime.client.session import missing_jars_note

        pytest.skip(f"delta-spark did not load: {missing_jars_note()}")


@pytest.fixture(params=ENGINES)
def delta_engine(request: pytest.FixtureRequest) -> str:
    """The ``delta.engine`` a test's project uses: each test that takes it runs once per engine
    (the ``spark`` run needs delta-spark: :func:`delta_spark`)."""
    if request.param == "spark":
        request.getfixturevalue("delta_spark")
    return str(request.param)


@pytest.fixture
def armed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Arm failpoints for one test: ``armed("sink.after_commit:m@1")`` (see runner/failpoints.py;
    the variable is read once per process, so the cache is cleared on arming and after)."""
    from runner import failpoints

    def arm(value: str) -> None:
        monkeypatch.setenv("RUNNER_FAILPOINTS", value)
        failpoints._armed.cache_clear()

    yield arm
    monkeypatch.delenv("RUNNER_FAILPOINTS", raising=False)
    failpoints._armed.cache_clear()


@pytest.fixture(scope="session")
def connect_server() -> Iterator[ConnectServer]:
    """A Spark Connect server on a loopback port, shared by the test run (~1.1 GB; listens in
    5-25 s); its workers run this interpreter and this checkout."""
    from tests.support.connect_server import ConnectServer

    with ConnectServer() as server:
        yield server


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto's S3 server on a loopback port, shared by the test run (its log stays in the
    run's temp folder)."""
    import importlib.util

    from tests.support.object_store import MotoServer, start_server

    if importlib.util.find_spec("moto") is None:
        pytest.skip("moto is not installed (pip install 'moto[server]'; scripts/setup.sh does)")
    log_dir = tmp_path_factory.mktemp("moto")
    server = start_server(lambda: MotoServer(log_dir=log_dir))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(moto_server: MotoServer) -> Bucket:
    """A new empty bucket on the shared moto server: ``uri`` (``s3://name``), ``name``, and
    ``env`` (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
    AWS_ALLOW_HTTP=true)."""
    return moto_server.bucket()


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteServer]:
    """Azurite's Blob service on a loopback port, shared by the test run. Skipped when set-up
    did not install it (no npm), an error under ``RUNNER_REQUIRE_JARS=1`` (CI)."""
    from tests.support.object_store import AzuriteServer, azurite_binary, start_server

    binary = azurite_binary()
    if binary is None:
        reason = "Azurite is not in .tools/azurite (run scripts/setup.sh; it needs npm)"
        if os.environ.get("RUNNER_REQUIRE_JARS") == "1":
            pytest.fail(f"RUNNER_REQUIRE_JARS=1: {reason}", pytrace=False)
        pytest.skip(reason)
    log_dir = tmp_path_factory.mktemp("azurite")
    server = start_server(lambda: AzuriteServer(binary, log_dir=log_dir))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def azure_container(azurite: AzuriteServer) -> Bucket:
    """A new empty container on the shared Azurite: ``uri`` (``az://name``), ``name``, and
    ``env`` (AZURE_STORAGE_ACCOUNT_NAME/KEY, AZURE_STORAGE_ENDPOINT, AZURE_ALLOW_HTTP=true)."""
    return azurite.bucket()
