"""A broker restart while a Kafka model's transaction is open: the runner neither hangs nor
loses or duplicates a record.

``runner stream --available-now`` (the real CLI, a subprocess) holds batch 1 of the Kafka model
in flight (the ``sink.before_commit`` failpoint sleeps with the transaction open: records
produced, marker sent, not committed); meanwhile the broker is stopped and started again on the
same ports and storage. The run then either finishes or ends with a clear error within bounded
time (the producer that lost its broker is replaced: same transactional id, so the new one
fences the old and aborts its transaction), and a second run completes the topic. A
``read_committed`` consumer counts every valid event exactly once and the Delta table is exact.

Each test starts a broker of its own (restarting the shared one would break the tests around
it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest

from runner.demo import POISON, event_lines
from runner.project.loader import load_project
from runner.sinks.tables import read_table
from tests.kafka.test_kafka_outputs_stream import _project, _stream
from tests.support.brokers import ApacheKafkaBroker, create_topic, produce, start_with_retries
from tests.support.kafka_out import read_committed

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.fixture
def own_broker(apache_kafka_node: ApacheKafkaBroker) -> Iterator[ApacheKafkaBroker]:
    """An Apache Kafka node for this test alone (it gets restarted)."""
    broker = start_with_retries(lambda: ApacheKafkaBroker(apache_kafka_node.jars))
    try:
        yield broker
    finally:
        broker.stop()


def _stream_with_restart(root: object, broker: ApacheKafkaBroker, *, hold: float,
                         down: float, timeout: float = 150) -> tuple[int, str, float, float]:
    """Run the stream with batch 1's transaction held open ``hold`` seconds; restart the broker
    (``down`` seconds stopped) as soon as the hold starts. Returns (exit code, output, seconds
    from the restart's start to the run's end, the broker's restart seconds)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--available-now"],
        env={**os.environ, "PYTHONFAULTHANDLER": "1", "RUNNER_FAILPOINTS": f"sink.before_commit:events_out@1=sleep:{hold}"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    held = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "failpoint sink.before_commit:events_out sleeping" in line:
                held.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        assert held.wait(timeout), "".join(lines)
        restarted_at = time.monotonic()
        restart = broker.restart(down=down)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # where it hangs: every thread's stack (faulthandler)
            os.kill(proc.pid, signal.SIGABRT)
            proc.wait(10)
            reader.join(10)
            raise AssertionError("".join(lines)[-20000:]) from None
        ended = time.monotonic() - restarted_at
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    reader.join(10)
    return code, "".join(lines), ended, restart


# Slow (nightly): a broker of its own (about 15 s to start), a broker restart, two CLI runs:
# 60-90 s per engine on the 2-core machine.
@pytest.mark.slow
@pytest.mark.parametrize("delta_engine", ["spark", "rs"])
def test_a_broker_restart_mid_transaction_ends_exactly_once(tmp_path, own_broker,
                                                            delta_engine) -> None:
    bootstrap = own_broker.bootstrap
    source, out = f"events_{uuid.uuid4().hex[:8]}", f"out_{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, out, 3)
    lines = list(event_lines(160, poison_every=25))
    produce(bootstrap, source, [(i % 2, line, None) for i, line in enumerate(lines)])
    valid = sorted({json.loads(v)["eventId"] for v in lines if v not in POISON})
    reader = "python" if delta_engine == "rs" else "spark"
    root = _project(tmp_path, bootstrap, source, out, engine=delta_engine, reader=reader)

    code, log, ended, restart = _stream_with_restart(root, own_broker, hold=5, down=3)
    print(f"restart mid-transaction ({delta_engine}): exit {code}, run ended {ended:.1f} s "
          f"after the restart began (broker back in {restart:.1f} s)")
    assert ended < 120, log  # bounded: not the 600 s of a producer that never recovers
    if code != 0:
        assert "Traceback" not in log and "error:" in log, log
        code, log = _stream(root)
    assert code == 0, log

    counts = Counter(r["eventId"] for r in read_committed(bootstrap, out))
    assert sorted(counts) == valid and set(counts.values()) == {1}, counts
    project = load_project(root)
    logs = read_table(project.table_path("request_logs"))
    assert sorted(logs.column("eventId").to_pylist()) == valid
