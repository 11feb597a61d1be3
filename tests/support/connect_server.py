"""A standalone Spark Connect server for tests, from pyspark's own jars (docs/CONNECT.md).

One JVM: ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`` on
``local[2]``, loopback, a free port, with the set-up's jars (delta-spark among them) and
Delta's SQL extension and catalog. Its Python workers (the runner's batch function runs in
one) are this interpreter with this checkout first on ``PYTHONPATH``, so the server runs the
runner under test. It listens after 5 s on an idle machine, 10-25 s under load; ~1.1 GB.
``url`` is ``sc://127.0.0.1:PORT``.

Run by hand: ``python -m tests.support.connect_server [--port 15002]`` (Ctrl-C stops it).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from runner.runtime.client.session import spark_jars
from runner.sinks.conf import DELTA_SESSION_CONF, local_delta_conf
from tests.support.jvm_server import JvmServer

__all__ = ["ConnectServer", "REPO"]

REPO = Path(__file__).resolve().parents[2]
_MAIN_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class ConnectServer(JvmServer):
    """A Spark Connect server on a free loopback port; a context manager. ``log()`` is the
    tail of its output; :meth:`kill` ends it at once (SIGKILL), as a crash would."""

    what = "Spark Connect server"
    prefix = "spark-connect-"

    def __init__(self, *, port: int | None = None, startup_timeout: float = 120.0,
                 conf: Mapping[str, str] | None = None) -> None:
        super().__init__(port=port, startup_timeout=startup_timeout)
        self.extra_conf = dict(conf or {})  # the server's own settings (e.g. a Hive metastore)
        self.url = f"sc://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.url

    def command(self) -> list[str]:
        home = _spark_home()
        conf = {
            **DELTA_SESSION_CONF, **local_delta_conf(2),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.warehouse.dir": (self._dir / "warehouse").as_uri(),
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC",
            # A batch function's worker imports pyspark's Connect client (pandas, pyarrow,
            # gRPC) before it connects back: 15 s by default, too short on a loaded machine.
            "spark.python.authenticate.socketTimeout": "120s",
            **self.extra_conf,
        }
        args = [str(home / "bin" / "spark-submit"), "--class", _MAIN_CLASS,
                "--master", "local[2]", "--driver-memory", "1g"]
        jars = spark_jars()
        if jars:
            args += ["--jars", ",".join(jars)]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        connect_jar = next((home / "jars").glob("spark-connect_*.jar"))
        return [*args, str(connect_jar)]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in ("SPARK_REMOTE", "PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET",
                    "SPARK_DRIVER_MEMORY"):
            env.pop(key, None)
        path = env.get("PYTHONPATH")
        env.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                    "PYSPARK_DRIVER_PYTHON": sys.executable,
                    "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)})
        return env



def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of the server's (repeatable)")
    args = parser.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    with ConnectServer(port=args.port, conf=conf) as server:
        print(f"Spark Connect server at {server.url} after {server.start_seconds:.1f} s "
              "(Ctrl-C stops it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
