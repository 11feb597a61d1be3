"""A real Hive metastore thrift server for tests (issue 31), from pyspark's own Hive 2.3 jars.

One JVM: ``org.apache.hadoop.hive.metastore.HiveMetaStore -p PORT`` on a free port, with an
embedded Derby database in its own temp folder (created on first use), ``-Xmx256m``; it
listens in about 5 s. ``hive.async.log.enabled=false``: without it the server dies on a
missing disruptor class (pyspark ships none). Tests get one through the ``hive_metastore``
fixture (``tests/catalog/conftest.py``); ``uri`` is ``thrift://127.0.0.1:PORT``.

Run by hand: ``python -m tests.support.metastore [--port 9083]`` (Ctrl-C stops it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.brokers import _die_with_parent, _free_port, _terminate

__all__ = ["HiveMetastore", "pyspark_jars"]


def pyspark_jars() -> Path:
    """pyspark's own jars folder (Spark, Hadoop and Hive 2.3's metastore among them)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


class HiveMetastore:
    """A Hive metastore thrift server on a free port with its own Derby folder; a context
    manager. ``log()`` is the tail of its output, kept until :meth:`stop`."""

    def __init__(self, *, port: int | None = None, startup_timeout: float = 60.0) -> None:
        java_home = os.environ.get("JAVA_HOME")
        self.java = str(Path(java_home) / "bin" / "java") if java_home else "java"
        self.port = port or _free_port()
        self.uri = f"thrift://127.0.0.1:{self.port}"
        self.startup_timeout = startup_timeout
        self.start_seconds: float | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="hive-metastore-"))
        self._log_file = self._dir / "metastore.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        derby = self._dir / "metastore_db"
        return [self.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Djavax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={derby};create=true",
                "-Ddatanucleus.schema.autoCreateAll=true",
                "-Dhive.metastore.schema.verification=false",
                "-Dhive.async.log.enabled=false",
                f"-Dhive.metastore.warehouse.dir={(self._dir / 'warehouse').as_uri()}",
                f"-Dderby.system.home={self._dir}",
                "-cp", f"{pyspark_jars().as_posix()}/*",
                "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", str(self.port)]

    def start(self) -> HiveMetastore:
        """Start the server and wait until its port takes connections.

        Raises:
            RuntimeError: the JVM exited or did not listen in time (with the log's tail).
        """
        started = time.monotonic()
        with open(self._log_file, "ab") as log:
            self._proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=self._dir,
                                          preexec_fn=_die_with_parent)
        deadline = started + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code, tail = self._proc.returncode, self.log()
                self.stop()
                raise RuntimeError(f"the Hive metastore exited with {code}: {tail}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                self.start_seconds = time.monotonic() - started
                return self
            time.sleep(0.2)
        tail = self.log()
        self.stop()
        raise RuntimeError(f"the Hive metastore did not listen on {self.uri} within "
                           f"{self.startup_timeout} s: {tail}")

    def log(self) -> str:
        """The last 3000 characters of the server's output."""
        try:
            return self._log_file.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the JVM (SIGTERM; killed after 10 s) and delete its folder."""
        _terminate(self._proc, grace=10)
        self._proc = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> HiveMetastore:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args()
    with HiveMetastore(port=args.port) as metastore:
        print(f"Hive metastore at {metastore.uri} (Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
