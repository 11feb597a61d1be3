"""A test server in a JVM of its own on a free loopback port (the Hive metastore, the Spark
Connect server): started, waited for until its port takes connections, its output kept in a
folder of its own, stopped, used as a context manager. A subclass gives its command, and its
environment where it needs one."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

from tests.support.brokers import _die_with_parent, _free_port

__all__ = ["JvmServer"]


class JvmServer:
    """One server process (its own process group) and its folder; :attr:`what` names it in
    errors, :attr:`address` is what clients connect to."""

    what = "server"
    prefix = "jvm-server-"

    def __init__(self, *, port: int | None = None, startup_timeout: float = 60.0) -> None:
        self.port = port or _free_port()
        self.startup_timeout = startup_timeout
        self.start_seconds: float | None = None
        self._dir = Path(tempfile.mkdtemp(prefix=self.prefix))
        self._log_file = self._dir / "server.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str] | None:
        return None  # the test process's own

    def start(self) -> Self:
        """Start the server and wait until its port takes connections.

        Raises:
            RuntimeError: the JVM exited or did not listen in time (with the log's tail).
        """
        started = time.monotonic()
        with open(self._log_file, "ab") as log:
            self._proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=self._dir,
                                          env=self.environment(), start_new_session=True,
                                          preexec_fn=_die_with_parent)
        deadline = started + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code, tail = self._proc.returncode, self.log()
                self.stop()
                raise RuntimeError(f"the {self.what} exited with {code}: {tail}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                self.start_seconds = time.monotonic() - started
                return self
            time.sleep(0.2)
        tail = self.log()
        self.stop()
        raise RuntimeError(f"the {self.what} did not listen on {self.address} within "
                           f"{self.startup_timeout} s: {tail}")

    def log(self) -> str:
        """The last 3000 characters of the server's output."""
        try:
            return self._log_file.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL the server and its children (its own process group) at once."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group; SIGKILL after 10 s), delete its
        folder."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._proc = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
