"""The runner over Spark Connect (docs/CONNECT.md): ``runner stream`` as a client process with
``SPARK_REMOTE`` set, against the test run's standalone Connect server, on both engines.

The project is the fault tests' shop-style one: a files source, the example's append models
(one joins the ``endpoint_owners`` seed), the ``endpoint_counts`` accumulating merge, poison
records for the dead-letter table. Every table is read back with delta-rs and compared with
the reference computed from the input files alone (``tests/support/reference.py``).

The runner always runs as a process here: a Connect client marks its process as one
(pyspark's functions then build Connect columns), which the suite's shared classic session
could not share.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runner.demo import write_demo_files
from tests.support.brokers import _free_port
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
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "SPARK_REMOTE": url, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                             str(root), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _java_in_tree(proc: subprocess.Popen[str]) -> list[str]:
    """The JVMs among ``proc``'s descendants (names and command lines)."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if "java" in child.name() or any("java" in a for a in child.cmdline()[:1]):
                found.append(" ".join(child.cmdline()[:3]))
        except psutil.NoSuchProcess:
            continue
    return found


def _wait(procs: list[subprocess.Popen[str]], timeout: float) -> list[str]:
    """Wait for ``procs``, watching their process trees for a JVM; returns the JVMs seen."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for p in procs:
            seen += _java_in_tree(p)
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return seen


def assert_exact(root: Path) -> None:
    expected = expected_tables(root / "incoming")
    actual = actual_tables(root / "wh")
    for name in expected:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (f"{name}: {sum(lost.values())} rows lost, "
                                        f"{sum(extra.values())} extra")


def test_stream_over_connect_both_engines_no_jvm(tmp_path, connect_server) -> None:
    """Both engines at once over the shared server, the seed joined, poison records
    dead-lettered; exact; and no JVM anywhere under the runner's processes. ``spark`` runs two
    batches (a create, then SQL MERGE into endpoint_counts, the Connect path of its own);
    ``rs`` one (its merge is the same delta-rs code as on the classic path, on the worker)."""
    roots = {e: _project(tmp_path / e, e, files=2 if e == "spark" else 1)
             for e in ("rs", "spark")}
    procs = {e: _client(root, connect_server.url, "--available-now")
             for e, root in roots.items()}
    jvms = _wait(list(procs.values()), timeout=240)
    outputs = {e: p.stdout.read() if p.stdout else "" for e, p in procs.items()}
    for engine, proc in procs.items():
        if proc.returncode != 0:
            pytest.fail(f"{engine}: exit {proc.returncode}\n{outputs[engine][-3000:]}\n"
                        f"server: {connect_server.log()}")
        assert f"engine {engine}" in outputs[engine], outputs[engine]
        assert ("batch 1:" in outputs[engine]) == (engine == "spark"), outputs[engine]
        assert_exact(roots[engine])
    assert jvms == [], jvms


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

@pytest.mark.slow  # ~60-90 s per engine: three batches, a kill, a restart
@pytest.mark.parametrize("engine", ["rs", "spark"])
def test_client_sigkill_then_restart_is_exact(tmp_path, connect_server, engine) -> None:
    root = _project(tmp_path / "p", engine, files=3)
    proc = _client(root, connect_server.url, "--available-now")
    deadline = time.monotonic() + 180
    while not (root / "cp" / "commits" / "0").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the client, mid-run: batch 1 in flight
    proc.wait()
    again = _client(root, connect_server.url, "--available-now")
    out, _ = again.communicate(timeout=240)
    assert again.returncode == 0, out
    assert_exact(root)


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
