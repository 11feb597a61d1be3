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
import time
from pathlib import Path

from tests.support.jvm_server import JvmServer

__all__ = ["HiveMetastore", "pyspark_jars"]


def pyspark_jars() -> Path:
    """pyspark's own jars folder (Spark, Hadoop and Hive 2.3's metastore among them)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


class HiveMetastore(JvmServer):
    """A Hive metastore thrift server on a free port with its own Derby folder; a context
    manager. ``log()`` is the tail of its output, kept until :meth:`stop`."""

    what = "Hive metastore"
    prefix = "hive-metastore-"

    def __init__(self, *, port: int | None = None, startup_timeout: float = 60.0) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout)
        java_home = os.environ.get("JAVA_HOME")
        self.java = str(Path(java_home) / "bin" / "java") if java_home else "java"
        self.uri = f"thrift://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.uri

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
