"""``runner`` commands as Spark Connect clients, for the tests under ``tests/connect/``.

A Connect client marks its process as one (pyspark's functions then build Connect columns),
which the suite's shared classic session could not share: so every command runs as a process
of its own with ``SPARK_REMOTE`` set and this checkout first on ``PYTHONPATH`` (the server's
workers run the same checkout: :mod:`tests.support.connect_server`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.support.connect_server import REPO

__all__ = ["client_env", "java_in_tree", "run_client", "start_client", "wait_for", "wait_all"]


def client_env(url: str, **extra: str) -> dict[str, str]:
    """The environment of a runner process that is a client of the server at ``url``."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "SPARK_REMOTE": url, "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO), **extra}


def start_client(root: Path, url: str, *args: str, command: str = "stream"
                 ) -> subprocess.Popen[str]:
    """``runner <command> --project-dir root *args`` in its own process group; its output
    (stdout and stderr together) on ``stdout``."""
    return subprocess.Popen([sys.executable, "-m", "runner", command, "--project-dir",
                             str(root), *args], env=client_env(url), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def run_client(root: Path, url: str, *args: str, command: str = "stream",
               timeout: float = 300) -> tuple[int, str]:
    """:func:`start_client`, waited for: (exit code, output). Killed (with its process group)
    when it outlives ``timeout``."""
    proc = start_client(root, url, *args, command=command)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"runner {command} outlived {timeout} s:\n{out[-3000:]}") from None
    return proc.returncode, out


def java_in_tree(proc: subprocess.Popen[str]) -> list[str]:
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


def wait_all(procs: list[subprocess.Popen[str]], timeout: float) -> list[str]:
    """Wait for ``procs``, watching their process trees for a JVM; returns the JVMs seen.
    Whatever outlives ``timeout`` is killed with its process group."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for p in procs:
            seen += java_in_tree(p)
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return seen


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 180) -> None:
    """Wait until ``path`` exists (e.g. Spark's commit-log entry of a batch); fails with the
    process's output when it ended first or the time ran out."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"{path} never appeared (exit {proc.poll()}):\n{out[-3000:]}")
        time.sleep(0.1)
