"""An unreachable or misconfigured Kafka ends ``runner stream`` at start, within
``source.connect_timeout``, with exit 2 and a last line naming the broker and the problem, on
both readers (Spark's Kafka source with delta-spark, the production path; the runner's Python
reader with delta-rs, the embedded path) against a real Apache Kafka node.

The issue's hang is the first case: a checkpoint that already committed batches from a good
broker, then the address changed to a closed port (a typo in a deploy). Spark's source retried
its driver-side offset look-ups (3 attempts of the Java client's 60 s API timeout) and
``--available-now`` had not ended after 180 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from runner.build import compile_project
from runner.errors import ConfigError, ExecutionError
from runner.events import BatchDone
from runner.project.loader import Project, load_project
from runner.runtime.start.stream import run_stream
from tests.kafka.test_stream_kafka import EVENT_OFFSETS, Topic, _check_tables, _project, _run
from tests.kafka.test_stream_kafka import _unused_port as unused_port
from tests.support.brokers import SASL_PASSWORD, SASL_USER
from tests.support.projects import update_target

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: (reader, Delta engine): the production path and the embedded path.
PATHS = [("spark", "spark"), ("python", "rs")]
#: The closed-port case on the Python reader is `slow` (33 s): that reader already fails fast at
#: start in the default run (test_stream_kafka's bad bootstrap address); the hang this test was
#: written for was Spark's source, which stays in the default run.
# Both slow (~50 s each on the CI machine): a broker lost mid-stream is the default suite's case
# (test_broker_lost_mid_stream_stops_clearly_within_the_timeout).
CLOSED_PORT_PATHS = [pytest.param("spark", "spark", id="spark-spark", marks=pytest.mark.slow),
                     pytest.param("python", "rs", id="python-rs", marks=pytest.mark.slow)]


def _cli(project: Project, *args: str, timeout: float = 170) -> tuple[int, str, float]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "runner", "stream", "--project-dir", str(project.root),
             *args], capture_output=True, text=True, timeout=timeout,
            env={**os.environ, "NO_COLOR": "1"}, check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"runner stream {' '.join(args)} had not ended after {timeout:g} s: "
                    f"{(e.stdout or b'')[-2000:]!r} {(e.stderr or b'')[-2000:]!r}")
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def _set_bootstrap(project: Project, address: str) -> Project:
    """The deployment moves its brokers: the profile's target changes, project.yml does not."""
    update_target(project.root, {"source": {"bootstrap_servers": address}})
    return load_project(project.root)


@pytest.mark.parametrize(("reader", "engine"), CLOSED_PORT_PATHS)
def test_closed_port_after_committed_batches_ends_within_a_minute(
        apache_kafka: str, reader: str, engine: str, spark: Any, tmp_path: Path) -> None:
    """The issue's case with the default ``connect_timeout``. Spark's reader runs the CLI in
    its own process, as the issue did (exit code, last line, wall time with the JVM's start);
    the Python reader runs in this process (the same check, without a second JVM)."""
    topic = Topic.create(apache_kafka, partitions=2)
    topic.send(100, poison_every=25)
    project = _project(tmp_path / "p", topic, reader=reader, engine=engine,
                       models={"models/event_offsets.sql": EVENT_OFFSETS})
    _run(project)  # batches committed from the good broker
    _check_tables(project, topic)
    versions = {p.name: len(list((p / "_delta_log").glob("*.json")))
                for p in project.warehouse.iterdir()}

    address = f"127.0.0.1:{unused_port()}"
    moved = _set_bootstrap(project, address)
    if reader == "spark":
        code, out, seconds = _cli(moved, "--available-now")
        last = out.strip().splitlines()[-1]
        assert code == 2, out
        assert seconds < 60, f"took {seconds:.1f} s: {out}"
        assert "Traceback" not in out and "\tat " not in out
    else:
        started = time.monotonic()
        with pytest.raises(ConfigError) as e:
            _run(moved)
        assert time.monotonic() - started < 45
        last = str(e.value).splitlines()[-1]
    assert address in last and "connection refused" in last, last
    assert "check source.bootstrap_servers" in last
    # Nothing was written meanwhile; back on the good broker the stream goes on exactly.
    assert versions == {p.name: len(list((p / "_delta_log").glob("*.json")))
                        for p in project.warehouse.iterdir()}
    topic.send(40, poison_every=25)
    _run(_set_bootstrap(moved, apache_kafka))
    _check_tables(project, topic)


def _refused(project: Project) -> ConfigError:
    started = time.monotonic()
    with pytest.raises(ConfigError) as e:
        _run(project)
    assert time.monotonic() - started < 30, str(e.value)
    assert project.config.source.bootstrap_servers in str(e.value).splitlines()[-1]
    assert not (project.warehouse / "request_logs").exists()  # refused before any write
    return e.value


@pytest.mark.parametrize(("reader", "engine"), PATHS, ids=[f"{r}-{e}" for r, e in PATHS])
def test_unknown_topic_and_tls_mismatch_are_named_at_start(
        apache_kafka: str, reader: str, engine: str, spark: Any, tmp_path: Path) -> None:
    topic = Topic.create(apache_kafka, partitions=1)
    typo = Topic(apache_kafka, topic.name + "x", 1)
    unknown = _refused(_project(tmp_path / "topic", typo, reader=reader, engine=engine,
                                source_extra="  connect_timeout: 10 seconds\n"))
    assert f"Kafka topic '{typo.name}' does not exist at {apache_kafka}" in str(unknown)
    assert f"did you mean '{topic.name}'" in str(unknown)

    # A TLS client on the broker's plaintext listener.
    tls = _refused(_project(tmp_path / "tls", topic, reader=reader, engine=engine,
                            source_extra="  connect_timeout: 8 seconds\n  options:\n"
                                         "    security.protocol: SSL\n"))
    assert "security.protocol" in str(tls), str(tls)


def _sasl_options(reader: str, password: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """project.yml ``options:`` for the broker's SASL/PLAIN listener, in each client's names
    (the password through env_var, as a deployment writes it; read when the project loads)."""
    monkeypatch.setenv("RUNNER_TEST_KAFKA_PASSWORD", password)
    secret = "{{ env_var('RUNNER_TEST_KAFKA_PASSWORD') }}"
    common = "    security.protocol: SASL_PLAINTEXT\n    sasl.mechanism: PLAIN\n"
    if reader == "python":
        return (common + f"    sasl.username: {SASL_USER}\n"
                f"    sasl.password: \"{secret}\"\n")
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f"username='{SASL_USER}' password='{secret}';")
    return common + f"    sasl.jaas.config: \"{jaas}\"\n"


@pytest.mark.parametrize(("reader", "engine"), PATHS, ids=[f"{r}-{e}" for r, e in PATHS])
def test_sasl_authentication_failure_is_named_at_start_and_the_right_password_streams(
        apache_kafka_node: Any, reader: str, engine: str, spark: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On the broker's SASL/PLAIN listener: a wrong password ends the start at once, not at
    the end of connect_timeout (exit 2, the broker named, the password not, nothing written);
    the right one streams exactly."""
    topic = Topic.create(apache_kafka_node.bootstrap, partitions=1)
    topic.send(30, poison_every=0)
    sasl = Topic(apache_kafka_node.sasl_bootstrap, topic.name, 1, topic.records)
    wrong_project = _project(tmp_path / "wrong", sasl, reader=reader, engine=engine,
                             source_extra="  connect_timeout: 15 seconds\n  options:\n"
                                          + _sasl_options(reader, "not-the-password", monkeypatch))
    started = time.monotonic()
    wrong = _refused(wrong_project)
    assert time.monotonic() - started < 10  # the refusal does not wait out connect_timeout
    message = str(wrong)
    assert "authentication" in message.lower() or "sasl" in message.lower(), message
    assert "not-the-password" not in message
    project = _project(tmp_path / "right", sasl, reader=reader, engine=engine,
                       models={"models/event_offsets.sql": EVENT_OFFSETS},
                       source_extra="  connect_timeout: 15 seconds\n  options:\n"
                                    + _sasl_options(reader, SASL_PASSWORD, monkeypatch))
    _, batches = _run(project)
    assert sum(b.input_rows for b in batches) == 30
    _check_tables(project, sasl)


def test_broker_lost_mid_stream_stops_clearly_within_the_timeout(tmp_path: Path,
                                                                 spark: Any) -> None:
    """The production path (Spark's source, delta-spark) on a broker of its own, stopped after
    batch 0 committed while the stream waits for more (a 1 s processing-time trigger): the
    query stops after its bounded retries (three attempts of a third of connect_timeout), with
    a message naming the brokers; the tables hold exactly the committed batch. The Python
    reader's look-up is one call bounded by timeout_ms (5 s; measured 6.5 s to exit)."""
    import threading

    from tests.support.brokers import ApacheKafkaBroker, apache_kafka_jars, start_with_retries

    jars = apache_kafka_jars()
    if jars is None:
        pytest.skip("Apache Kafka broker jars not in .jars/kafka-broker (run scripts/setup.sh)")
    broker = start_with_retries(lambda: ApacheKafkaBroker(jars))
    try:
        topic = Topic.create(broker.bootstrap, partitions=2)
        topic.send(100, poison_every=25)
        project = _project(tmp_path / "p", topic, reader="spark", engine="spark",
                           source_extra="  connect_timeout: 6 seconds\n",
                           models={"models/event_offsets.sql": EVENT_OFFSETS})
        committed = threading.Event()
        failure: list[BaseException] = []

        def stream() -> None:
            try:
                run_stream(project, compile_project(project).plan, mode="processing_time",
                           trigger="1 second",
                           report=lambda e: committed.set() if isinstance(e, BatchDone) else None)
            except BaseException as e:  # noqa: BLE001 - handed to the test's thread
                failure.append(e)

        thread = threading.Thread(target=stream, daemon=True)
        thread.start()
        assert committed.wait(180), "batch 0 did not complete"
        time.sleep(1.0)  # Spark's commit-log entry of batch 0
        broker.stop()
        lost = time.monotonic()
        thread.join(60)
        assert not thread.is_alive(), "the stream did not stop within 60 s of the broker loss"
        assert time.monotonic() - lost < 30
    finally:
        broker.stop()
    assert len(failure) == 1 and isinstance(failure[0], ExecutionError), failure
    message = str(failure[0])
    assert f"cannot reach the Kafka brokers at {topic.bootstrap} within 6 s" in message, message
    _check_tables(project, topic)  # exactly the committed batch: nothing lost, nothing twice
