"""The runner over Spark Connect (docs/CONNECT.md): ``runner stream`` as a client process with
``SPARK_REMOTE`` set, against the test run's standalone Connect server, on both engines.

The project is the fault tests' shop-style one: a files source, the example's append models
(one joins the ``endpoint_owners`` seed), the ``endpoint_counts`` accumulating merge, poison
records for the dead-letter table. Every table is read back with delta-rs and compared with
the reference computed from the input files alone (``tests/support/reference.py``).

The runner always runs as a process here (tests/support/connect_runs.py).

Cost (default suite): the stream-and-kill test runs both engines at once, two batches each and
a restart; the other default tests start no stream. The server's kill (its own server) is
nightly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.runtime.batches.remote_batch import RESULTS_FOLDER
from tests.support.brokers import _free_port
from tests.support.connect_runs import java_in_tree, start_client, wait_all
from tests.support.connect_server import REPO, ConnectServer
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.connect]

MODELS = {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS}
YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))


def _project(root: Path, engine: str, *, files: int = 2, events: int = 300) -> Path:
    write_project(root, MODELS, project_yml=YML, engine=engine)
    for i in range(files):  # one batch each (max_files_per_trigger: 1): batch 1 merges
        write_demo_files(root / "incoming" / f"part{i}", events=events, files=1,
                         poison_every=40)
        (root / "incoming" / f"part{i}" / "events-00000.json").rename(
            root / "incoming" / f"events-{i:05d}.json")
        (root / "incoming" / f"part{i}").rmdir()
    return root


def _client(root: Path, url: str, *args: str) -> subprocess.Popen[str]:
    return start_client(root, url, *args)


def assert_exact(root: Path) -> None:
    expected = expected_tables(root / "incoming")
    actual = actual_tables(root / "wh")
    for name in expected:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (f"{name}: {sum(lost.values())} rows lost, "
                                        f"{sum(extra.values())} extra")


def test_stream_and_client_sigkill_over_connect_both_engines_no_jvm(
        tmp_path, connect_server) -> None:
    """Both engines at once over the shared server (the seed joined, poison records
    dead-lettered, the ``endpoint_counts`` merge: on ``spark`` the Connect path's SQL MERGE, on
    ``rs`` the classic path's delta-rs code on the server's worker), two batches each:

    1. each client is SIGKILLed as soon as Spark has logged batch 0 as committed (batch 1 is
       starting on the server: the query outlives its client);
    2. the killed client's query is refused by its worker's permit (the client's lock is gone
       with it): its batch 1 fails with LeaseLostError before committing, in that run's own
       results folder;
    3. the next start of each takes the checkpoint, replays batch 1, and ends well;

    every table exact (read back with delta-rs against the reference computed from the input
    files alone), and no JVM anywhere under the runner's processes."""
    with ThreadPoolExecutor(2) as pool:  # the engines side by side, each its own sequence
        runs = list(pool.map(lambda e: _kill_then_restart(tmp_path / e, e, connect_server.url),
                             ("rs", "spark")))
    for engine, (root, code, out, jvms) in zip(("rs", "spark"), runs, strict=True):
        if code != 0:
            pytest.fail(f"{engine}: exit {code}\n{out[-3000:]}\nserver: {connect_server.log()}")
        assert f"engine {engine}" in out, out
        assert_exact(root)
        assert jvms == [], jvms


def _kill_then_restart(root: Path, engine: str, url: str) -> tuple[Path, int, str, list[str]]:
    """The test's sequence for one engine: (project, the restart's exit code and output, the
    JVMs seen under either client)."""
    _project(root, engine, files=2)
    proc = _client(root, url, "--available-now")
    jvms: list[str] = []
    while not (root / "cp" / "commits" / "0").exists() and proc.poll() is None:
        jvms += java_in_tree(proc)
        time.sleep(0.05)
    if proc.poll() is not None:
        return root, -1, f"ended before the kill: exit {proc.returncode}\n" + (
            proc.stdout.read() if proc.stdout else ""), jvms
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    refused = _orphan_failure(root / "cp", timeout=120)
    if not refused.startswith("LeaseLostError: stopped writing"):
        return root, -1, f"the killed client's query was not refused: {refused}", jvms
    again = _client(root, url, "--available-now")
    jvms += wait_all([again], timeout=300)
    return root, again.returncode, again.stdout.read() if again.stdout else "", jvms


def _orphan_failure(checkpoint: Path, timeout: float) -> str:
    """The error (``Class: message``) a batch of a killed client's query left in its run's
    results folder (runner.runtime.batches.remote_batch), waited for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for failed in (checkpoint / RESULTS_FOLDER).glob("*/*.failed"):
            try:
                doc = json.loads(failed.read_text())
            except ValueError:  # being written
                continue
            return f"{doc['class']}: {doc['message']}"
        time.sleep(0.1)
    raise AssertionError(f"no batch of the killed client's query failed within {timeout} s")


def test_unreachable_server_is_a_clear_error_at_once(tmp_path) -> None:
    """No server at the address: exit 69 within seconds, one message, no traceback."""
    root = _project(tmp_path / "p", "rs", files=1, events=10)
    started = time.monotonic()
    proc = _client(root, f"sc://127.0.0.1:{_free_port()}", "--available-now")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 69, out
    assert "cannot reach the Spark Connect server" in out and "Traceback" not in out, out
    assert time.monotonic() - started < 20


def test_static_server_setting_is_named(tmp_path, connect_server) -> None:
    """A setting the server holds as static, asked with another value: named, exit 2."""
    root = _project(tmp_path / "p", "rs", files=1, events=10)
    yml = (root / "project.yml").read_text()
    (root / "project.yml").write_text(
        yml + "spark:\n  conf:\n    spark.sql.extensions: com.example.Other\n")
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "SPARK_REMOTE": connect_server.url,
           "RUNNER_ALLOW_SPARK_CONF": "spark.sql.extensions",
           "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "runner", "stream", "--project-dir",
                           str(root), "--available-now"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "static on the Spark Connect server" in proc.stderr
    assert "spark.sql.extensions" in proc.stderr


def test_a_kafka_model_is_refused_before_anything_is_written(tmp_path, connect_server) -> None:
    """The server's worker writes Delta tables only: a materialized='kafka' model over Connect
    is exit 2, named, before the query or any table (docs/CONNECT.md)."""
    root = write_project(tmp_path / "p", {**MODELS, "models/events_out.sql": (
        "{{ config(materialized='kafka', topic='events_out') }}\n"
        "SELECT eventId AS key, eventId FROM parsed_events\n")}, project_yml=YML, engine="rs",
        target={"kafka_outputs": {"bootstrap_servers": f"127.0.0.1:{_free_port()}"}})
    write_demo_files(root / "incoming", events=10, files=1)
    proc = _client(root, connect_server.url, "--available-now")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out
    assert "Kafka models cannot run over Spark Connect yet: events_out" in out, out
    assert "Traceback" not in out and not (root / "wh" / "events_out").exists(), out
    assert not (root / "cp" / "commits").exists(), out


GUARD_SCRIPT = """
import sys
from runner.runtime.client.session import build_session
from runner.runtime.batches.sql_guard import checked_query
spark = build_session(remote=sys.argv[1])
print(spark.conf.get("spark.sql.variable.substitute"))
for sql in sys.argv[2:]:
    try:
        print("ok", checked_query(spark, sql))
    except Exception as e:
        print("refused", str(e).splitlines()[0])
"""


def test_guard_over_connect(connect_server) -> None:
    """The run-time guard asks Spark through the client: commands, scripts and refused
    functions are refused; a query passes; substitution is off in the session."""
    sqls = ["SELECT upper('a') AS a FROM range(3);", "INSERT INTO t SELECT 1",
            "SELECT 1; DROP TABLE t", "SELECT TRANSFORM(a) USING 'cat' FROM (SELECT 1 a)",
            "SELECT reflect('java.lang.System', 'exit', 1)",
            # past spark.sql.debug.maxToStringFields (25) the plan's list is cut short: a
            # call in its tail would not show, so a cut plan is refused, not read
            "SELECT " + ", ".join([f"{i} AS c{i}" for i in range(30)]
                                  + ["reflect('java.lang.System', 'exit', 1) AS r"])]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, "-c", GUARD_SCRIPT, connect_server.url, *sqls],
                          env=env, capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0] == "false", proc.stdout + proc.stderr
    assert lines[1] == "ok SELECT upper('a') AS a FROM range(3)", lines
    assert [line.split()[0] for line in lines[2:]] == ["refused"] * 5, lines
    assert "truncated" in lines[-1], lines


# -- crashes (slow: each starts streams and kills a process; a server kill starts its own) ---

@pytest.mark.slow  # ~60 s: a server of its own (its start alone is 5-25 s), killed mid-stream
def test_server_kill_ends_the_client_clearly_then_restart_is_exact(tmp_path) -> None:
    root = _project(tmp_path / "p", "rs", files=3)
    server = ConnectServer().start()
    try:
        proc = _client(root, server.url, "--trigger", "1 second")
        deadline = time.monotonic() + 180
        while not (root / "cp" / "commits" / "0").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        killed = time.monotonic()
        server.kill()
        out, _ = proc.communicate(timeout=120)
        lost_after = time.monotonic() - killed
        assert proc.returncode == 69, out
        assert "lost the Spark Connect server" in out and "Traceback" not in out, out
        assert lost_after < 30, lost_after
    finally:
        server.stop()
    with ConnectServer() as fresh:
        again = _client(root, fresh.url, "--available-now")
        out, _ = again.communicate(timeout=240)
    assert again.returncode == 0, out
    assert_exact(root)
