"""Stopping ``runner stream`` with Ctrl-C, as a user does: a real process, signalled with
``kill -INT`` and through a pseudo-terminal (the terminal's line discipline turns ``^C`` into
SIGINT for the whole foreground process group, the JVM included), both between batches and
with a batch in flight (held there by a ``sleep`` failpoint).

The README promises: the batch in flight finishes, exit 0, no traceback; a second Ctrl-C stops
at once with a clear message (exit 130) and the unfinished batch replays on the next start.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark

EVENTS = 300
HOLD = "batch.after_sinks@0=sleep:{seconds}"  # batch 0 written, Spark's commit entry not yet
NOT_CLEAN = ("Traceback", "Aborted", "Fatal Python error", "KeyboardInterrupt", "Py4J")


def _project(tmp_path: Path) -> Path:
    yml = BASE_YML.replace("slow_ms: 1000", "slow_request_ms: 1000")
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml)
    write_demo_files(root / "incoming", events=EVENTS, files=1, poison_every=0)
    return root


def _argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
            "--trigger", "2 seconds"]


def _env(failpoints: str = "") -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RUNNER_FAILPOINTS", None)
    if failpoints:
        env["RUNNER_FAILPOINTS"] = failpoints
    return env


class _Terminal:
    """``runner stream`` on a pseudo-terminal: stdout and stderr both go to it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the terminal's session leader, in the foreground
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.text = ""

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal (it exited)
            return False
        self.text += data.decode(errors="replace").replace("\r\n", "\n")
        return bool(data)

    def expect(self, pattern: str, timeout: float = 150) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            assert time.monotonic() < deadline, f"no {pattern!r} in:\n{self.text}"
            assert self._read(0.5), f"exited before {pattern!r}:\n{self.text}"

    def ctrl_c(self) -> None:
        os.write(self.fd, b"\x03")

    def wait(self, timeout: float = 90) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                while self._read(0.1):
                    pass
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            self._read(0.2)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"still running after {timeout}s:\n{self.text}")


def _assert_clean(text: str) -> None:
    for word in NOT_CLEAN:
        assert word not in text, f"{word!r} in the output:\n{text}"


def _assert_stopped_after_batch_0(root: Path, text: str) -> None:
    assert re.search(r"done \(stopped by signal\): 1 batch, 300 records in", text), text
    assert read_table(str(root / "wh/request_logs")).num_rows == EVENTS
    assert (root / "cp/commits/0").exists(), "batch 0 was not committed by Spark"


@pytest.mark.slow  # (suite budget) the mid-batch case below covers the idle one's path, and more
def test_sigint_between_batches_exits_0(tmp_path) -> None:
    root = _project(tmp_path)
    proc = subprocess.Popen(_argv(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("batch 0:"):
            break
    time.sleep(1)  # idle: waiting for the next trigger, no new input
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + err
    _assert_clean(out + err)
    _assert_stopped_after_batch_0(root, out)
    assert "Two-parameter TRIM" not in (root / "logs/spark.log").read_text()  # runner's own SQL


def test_sigint_mid_batch_finishes_the_batch(tmp_path) -> None:
    root = _project(tmp_path)
    proc = subprocess.Popen(_argv(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(HOLD.format(seconds=6)))
    assert proc.stderr is not None
    for line in proc.stderr:
        if "failpoint batch.after_sinks sleeping" in line:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + err
    _assert_clean(out + err)
    _assert_stopped_after_batch_0(root, out)
    assert "Two-parameter TRIM" not in (root / "logs/spark.log").read_text()  # runner's own SQL


@pytest.mark.slow  # (suite budget) the terminal's mid-batch case below covers the idle one's path
def test_ctrl_c_on_a_terminal_between_batches(tmp_path) -> None:
    root = _project(tmp_path)
    term = _Terminal(_argv(root), _env())
    term.expect(r"batch 0:")
    time.sleep(1)
    term.ctrl_c()
    assert term.wait() == 0, term.text
    _assert_clean(term.text)
    _assert_stopped_after_batch_0(root, term.text)


# Nightly (22 s on the CI machine): SIGINT mid-batch stays in the default suite
# (test_sigint_mid_batch_finishes_the_batch); this is the terminal's process-group variant.
@pytest.mark.slow
def test_ctrl_c_on_a_terminal_mid_batch(tmp_path) -> None:
    root = _project(tmp_path)
    term = _Terminal(_argv(root), _env(HOLD.format(seconds=6)))
    term.expect(r"failpoint batch.after_sinks sleeping")
    term.ctrl_c()
    term.expect(r"stop requested")
    assert term.wait() == 0, term.text
    _assert_clean(term.text)
    _assert_stopped_after_batch_0(root, term.text)


def test_second_ctrl_c_stops_at_once(tmp_path) -> None:
    root = _project(tmp_path)
    term = _Terminal(_argv(root), _env(HOLD.format(seconds=300)))
    term.expect(r"failpoint batch.after_sinks sleeping")
    term.ctrl_c()
    term.expect(r"Ctrl-C again to stop at once")
    started = time.monotonic()
    term.ctrl_c()
    assert term.wait(timeout=30) == 130, term.text
    assert time.monotonic() - started < 30
    _assert_clean(term.text)
    assert "stopping now" in term.text and "replays on the next start" in term.text, term.text
    assert not (root / "cp/commits/0").exists()  # batch 0 was cut short: it replays
