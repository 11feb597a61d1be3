"""The fault catalogue (docs/RELIABILITY.md): each fault injected, then a restart, then every
table compared with a reference computed here in plain Python from the input files.

In-process tests run the pipeline on the shared ``spark`` fixture; a crash (a process that
dies with no cleanup) needs a real process, so those run ``python -m runner stream`` in its own
process group with a failpoint whose action is ``exit`` (``os._exit(137)``), and restart in
process. Failpoints (:mod:`runner.failpoints`) name the exact moment of each fault.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.query_id import read_query_id
from runner.demo import write_demo_files
from runner.errors import ConfigError, ExecutionError
from runner.events import Event, PipelineStarted
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks import app_id
from runner.sinks.tables import read_table
from tests.support.events import results_into
from tests.support.projects import (
    BASE_YML,
    ENDPOINT_COUNTS,
    EXAMPLE_FILES,
    REPO_ROOT,
    write_project,
)
from tests.support.reference import DEAD, actual_tables, expected_tables

pytestmark = pytest.mark.spark

MODELS = {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS}
SINKS = ("request_logs", "error_events", "performance_metrics", "endpoint_counts")
YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))
PYTHON = sys.executable


def _project(tmp_path: Path, extra: dict[str, str] | None = None, *, yml: str = YML,
             engine: str):
    root = write_project(tmp_path / "proj", {**MODELS, **(extra or {})}, project_yml=yml,
                         engine=engine)
    (root / "incoming").mkdir(exist_ok=True)
    return load_project(root)


def _feed(project, events: int = 400) -> None:
    write_demo_files(project.root / "incoming", events=events, files=1, poison_every=60)


def _run(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def assert_exactly_once(project) -> None:
    expected = expected_tables(project.root / "incoming")
    actual = actual_tables(project.warehouse)
    for name in expected:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (f"{name}: {sum(lost.values())} rows lost, "
                                        f"{sum(extra.values())} extra, e.g. "
                                        f"{list((lost or extra).items())[:3]}")


def committed(project, batch_id: int) -> set[str]:
    """The sinks whose table records batch ``batch_id`` (or later) for this checkpoint."""
    from deltalake import DeltaTable

    query_id = read_query_id(project.checkpoint)
    done = set()
    for name in (*SINKS, DEAD):
        path = str(project.table_path(name))
        if DeltaTable.is_deltatable(path):
            version = DeltaTable(path).transaction_version(
                app_id(project.config.name, name, query_id))
            if version is not None and version >= batch_id:
                done.add(name)
    return done


def _commit_log(project) -> set[int]:
    commits = project.checkpoint / "commits"
    return {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.exists() \
        else set()


# -- subprocesses, for crashes -------------------------------------------------------------

def _spawn(project, *args: str, failpoint: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "RUNNER_FAILPOINTS": failpoint or ""}
    return subprocess.Popen(
        [PYTHON, "-m", "runner", "stream", "--project-dir", str(project.root), *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


def _reap(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str]:
    """Wait for the process, then kill whatever is left of its group (the JVM)."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.returncode, out


# -- the catalogue ----------------------------------------------------------------------------

def test_exception_between_two_sink_commits(tmp_path, armed, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _feed(project)
    # Batch 1: performance_metrics fails just before its commit; the other sinks run on.
    armed("sink.before_commit:performance_metrics@1=raise")
    with pytest.raises(ExecutionError, match="failpoint sink.before_commit:performance_metrics"):
        _run(project)
    armed("")
    partial = committed(project, 1)
    assert "performance_metrics" not in partial
    assert partial, "the other sinks of batch 1 committed: tables are not atomic together"
    assert _commit_log(project) == {0}
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1]
    assert set(replay[0].skipped) == partial - {DEAD}
    assert_exactly_once(project)


# The spark engine's run is nightly (29 s on the CI machine; the suite's 25-minute budget).
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_kill_after_a_delta_commit_before_the_commit_log(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _feed(project)
    # The process dies (no cleanup) right after request_logs committed batch 1; the other
    # sinks of batch 1, running in parallel, may or may not have committed by then.
    code, out = _reap(_spawn(project, "--available-now",
                             failpoint="sink.after_commit:request_logs@1=exit"))
    assert code == 137, out
    assert _commit_log(project) == {0}, out  # batch 1 never reached Spark's commit log
    partial = committed(project, 1)
    assert "request_logs" in partial
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1]  # batch 0 is not replayed; batch 1 is, once
    assert set(replay[0].skipped) == partial - {DEAD}
    assert_exactly_once(project)


def test_failure_after_all_sinks_before_the_commit_log(tmp_path, armed, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _feed(project)
    armed("batch.after_sinks@1=raise")
    with pytest.raises(ExecutionError, match="failpoint batch.after_sinks"):
        _run(project)
    armed("")
    assert committed(project, 1) == {*SINKS, DEAD} and _commit_log(project) == {0}
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1] and set(replay[0].skipped) == set(SINKS)
    assert_exactly_once(project)


@pytest.mark.parametrize("sink", ["error_events", DEAD])
def test_sink_commit_succeeds_but_reports_failure(tmp_path, armed, sink, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _feed(project)
    armed(f"sink.after_commit:{sink}@1=raise")
    with pytest.raises(ExecutionError, match=f"failpoint sink.after_commit:{sink}"):
        _run(project)
    armed("")
    assert sink in committed(project, 1)  # committed, though the write "failed"
    assert _commit_log(project) == {0}
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1]
    if sink != DEAD:  # (the dead-letter write is not listed among the model writes)
        assert sink in replay[0].skipped
    assert_exactly_once(project)


RATIO = """
SELECT eventId, 1000 DIV {latency} AS per_second FROM parsed_events
"""


def test_model_failing_at_runtime_then_fixed(tmp_path, delta_engine) -> None:
    # on_model_error: halt, the way it was before parking (tests/faults/test_parking.py)
    yml = YML + "spark:\n  conf:\n    spark.sql.ansi.enabled: true\n" + "on_model_error: halt\n"
    project = _project(tmp_path, {"models/latency_ratio.sql":
                                  RATIO.format(latency="request.latency_ms")}, yml=yml, engine=delta_engine)
    _feed(project)
    _run(project)
    # Batch 1 holds an event with latency 0: 1000 DIV 0 raises under ANSI mode.
    zero = {"eventId": "evt_zero_latency", "timestamp": "2026-03-12T10:00:00Z",
            "request": {"endpoint": "/cart", "latency_ms": 0, "status_code": 200}, "errors": []}
    path = project.root / "incoming" / "events-zero.json"
    tmp = path.with_name(".events-zero.json.tmp")
    tmp.write_text(json.dumps(zero) + "\n")
    tmp.replace(path)
    with pytest.raises(ExecutionError) as failed:
        _run(project)
    message = str(failed.value)
    assert "model latency_ratio failed in batch 1" in message and "DIVIDE_BY_ZERO" in message
    assert "models/latency_ratio.sql" in message  # the hint says which file to fix
    assert _commit_log(project) == {0}
    assert "latency_ratio" not in committed_models(project, 1)

    # The fix: same columns and types, so the replay of batch 1 runs straight on.
    (project.root / "models" / "latency_ratio.sql").write_text(
        RATIO.format(latency="NULLIF(request.latency_ms, 0)"))
    project = load_project(project.root)
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1] and "latency_ratio" not in replay[0].skipped
    assert_exactly_once(project)
    ratios = Counter(r["eventId"] for r in
                     read_table(str(project.table_path("latency_ratio"))).to_pylist())
    expected = expected_tables(project.root / "incoming")["request_logs"]
    assert ratios == Counter(event_id for event_id, *_ in expected.elements())


def committed_models(project, batch_id: int) -> set[str]:
    """Like :func:`committed`, for any model name (reads the table's app transaction)."""
    from deltalake import DeltaTable

    query_id = read_query_id(project.checkpoint)
    out = set()
    for path in project.warehouse.iterdir():
        if DeltaTable.is_deltatable(str(path)):
            v = DeltaTable(str(path)).transaction_version(
                app_id(project.config.name, path.name, query_id))
            if v is not None and v >= batch_id:
                out.add(path.name)
    return out


def test_second_instance_refused_then_kill_after_the_commit_log(tmp_path) -> None:
    # One engine (rs): what this proves, the checkpoint lock and a kill after Spark's commit
    # log (nothing of batch 1 written yet), involves no Delta write; the kills around Delta
    # commits run on both engines above and below.
    project = _project(tmp_path, engine="rs")
    _feed(project)
    # A running pipeline (processing-time trigger) that will die as batch 1 starts, i.e.
    # after Spark wrote batch 0's commit log entry and before any sink of batch 1.
    proc = _spawn(project, "--trigger", "1 second", failpoint="batch.start@1=exit")
    try:
        lock = project.checkpoint / "runner.lock"
        deadline = time.monotonic() + 120
        while not (lock.exists() and lock.read_text().startswith(f"pid {proc.pid} ")):
            assert proc.poll() is None and time.monotonic() < deadline, "runner did not start"
            time.sleep(0.2)
        # A second instance on the same checkpoint is refused up front, naming the holder.
        with pytest.raises(ExecutionError, match=f"in use by pid {proc.pid} on .* since "):
            _run(project)
        while _commit_log(project) != {0}:  # the first instance goes on undisturbed
            assert proc.poll() is None and time.monotonic() < deadline, "no batch 0"
            time.sleep(0.3)
        _feed(project)  # batch 1
        code, out = _reap(proc, timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 137, out
    assert _commit_log(project) == {0} and committed(project, 1) == set()
    replay = []
    _run(project, report=results_into(replay))  # the dead holder's lock went with it
    assert [r.batch_id for r in replay] == [1] and not replay[0].skipped
    assert_exactly_once(project)


def test_fresh_checkpoint_over_existing_tables_is_refused(tmp_path, delta_engine) -> None:
    import shutil

    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _run(project)
    shutil.rmtree(project.checkpoint)  # lost (or mistyped) checkpoint directory
    with pytest.raises(ConfigError, match="(?s)already holds batches of another checkpoint"
                                          ".*--full-refresh"):
        _run(project)
    assert read_query_id(project.checkpoint) is None  # nothing started
    assert_exactly_once(project)
    _run(project, full_refresh=True)
    assert_exactly_once(project)


def test_warehouse_is_a_file(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    project.warehouse.write_text("not a directory")
    _feed(project)
    with pytest.raises(ExecutionError, match="warehouse .* is not a writable directory: it is "
                                             "not a directory"):
        _run(project)
    assert read_query_id(project.checkpoint) is None and not _commit_log(project)


def _mount_tmpfs(path: Path, *options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=64m", *options)),
                             "tmpfs", str(path)], capture_output=True, text=True)
    return result.returncode == 0


def _remount(path: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(path)], check=True)


def test_warehouse_read_only(tmp_path, delta_engine) -> None:
    """A read-only file system (tmpfs): refused at start; and made read-only mid-run."""
    project = _project(tmp_path, engine=delta_engine)
    if not _mount_tmpfs(project.warehouse, "ro"):
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN); chmod does "
                    "not stop root, so there is no other read-only fault to inject")
    try:
        _feed(project)
        with pytest.raises(ExecutionError, match="warehouse .* not a writable directory: "
                                                 "Read-only file system"):
            _run(project)
        assert read_query_id(project.checkpoint) is None

        _remount(project.warehouse, "rw")
        _run(project)
        _feed(project)
        # Passes the start-up check, then the file system turns read-only before batch 1.
        def turn_read_only(event: Event) -> None:
            if isinstance(event, PipelineStarted):
                _remount(project.warehouse, "ro")

        with pytest.raises(ExecutionError) as failed:
            _run(project, report=turn_read_only)
        message = str(failed.value)
        assert "batch 1" in message and "wh/" in message, message
        # delta-rs says "Read-only file system"; Spark's Parquet writer (staged appends) says
        # "Mkdirs failed to create file:<path>": either way the root cause, not py4j's wrapper
        assert "Read-only file system" in message or "Mkdirs failed" in message, message
        assert committed(project, 1) == set() and _commit_log(project) == {0}

        _remount(project.warehouse, "rw")
        replay = []
        _run(project, report=results_into(replay))
        assert [r.batch_id for r in replay] == [1] and not replay[0].skipped
        assert_exactly_once(project)
    finally:
        subprocess.run(["umount", "-l", str(project.warehouse)], capture_output=True)


@pytest.mark.slow
def test_crash_loop_short(tmp_path) -> None:
    """``python -m bench.crash_loop`` with 3 kills (the published record uses 20:
    docs/RELIABILITY.md). Run as a command, not imported: tests import nothing from bench/."""
    result = subprocess.run(
        [PYTHON, "-m", "bench.crash_loop", "--kills", "3", "--max-run", "8",
         "--keep", str(tmp_path / "loop"), "--json", str(tmp_path / "record.json")],
        capture_output=True, text=True, timeout=1800, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["ok"] and record["kills"] == 3
