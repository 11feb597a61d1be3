"""The session over Spark Connect: no JVM in the runner's process (docs/CONNECT.md).

The deployment chooses it, never project.yml: the target's ``spark.remote`` or pyspark's own
``SPARK_REMOTE`` (the target's wins when both are set), an ``sc://host:port`` URL. Then
:func:`build_remote_session` gives a Spark Connect client session:

- the server is asked first, with a TCP connection (``CONNECT_SECONDS``): one that does not
  answer is :class:`~runner.errors.SparkServerLostError` (exit 69) at once, not after
  pyspark's retries (minutes by default); the client's own retries are bounded the same way
  (:data:`RETRY`), so a server lost mid-stream ends the runner within seconds.
- the runner's session defaults that are runtime settings (time zone, timestamps, no table by
  path in SQL, duplicate variant keys) and the project's and target's ``spark.conf`` are set
  in the client's session. A key the server holds as static (``spark.sql.extensions``,
  ``spark.jars``...) cannot be set from a client: when the server's value differs, the key is
  named in a :class:`~runner.errors.ConfigError`, never silently dropped.
- Spark's variable substitution is set off in the session, and read back: a server that keeps
  it on is refused (docs/SECURITY.md).
- every client session it makes (and every clone :func:`new_session` makes) has its gRPC
  channel closed when the interpreter begins to exit, while gRPC's threads still run: left to
  the sessions' finalizers, a channel's close waited forever for those threads (measured: a
  runner that had finished a rebuild never exited).
"""

from __future__ import annotations

import atexit
import os
import socket
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from runner.errors import ConfigError, SparkServerLostError
from runner.spark_client import is_remote

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CONNECT_SECONDS", "REMOTE_ENV", "RUNTIME_DEFAULTS", "build_remote_session",
           "is_remote", "remote_address", "remote_url"]

REMOTE_ENV = "SPARK_REMOTE"
#: How long the first TCP connection to the server may take.
CONNECT_SECONDS = 5.0

#: The runner's session defaults that a client may set (runner.runtime.client.session's list,
#: without the static ones: UI, jars, warehouse, driver addresses).
RUNTIME_DEFAULTS: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.variant.allowDuplicateKeys": "true",
    "spark.sql.runSQLOnFiles": "false",
}
_SUBSTITUTE = "spark.sql.variable.substitute"


def remote_url(configured: str | None) -> str | None:
    """The Connect server to use: the target's ``spark.remote``, else ``$SPARK_REMOTE``.

    >>> remote_url("sc://h:1"), remote_url(None) is None or remote_url(None).startswith("sc:")
    ('sc://h:1', True)
    """
    url = configured or os.environ.get(REMOTE_ENV) or None
    if url is not None and not url.startswith("sc://"):
        raise ConfigError(f"spark.remote {url!r} is not a Spark Connect URL",
                          hint="sc://host:port (Spark Connect's default port is 15002)")
    return url


def remote_address(url: str) -> tuple[str, int]:
    """Host and port of an ``sc://`` URL (parameters after ``/;`` ignored).

    >>> remote_address("sc://127.0.0.1:15099/;use_ssl=true")
    ('127.0.0.1', 15099)
    >>> remote_address("sc://cluster")
    ('cluster', 15002)
    """
    parts = urlsplit(url.split("/;", 1)[0])
    return parts.hostname or "localhost", parts.port or 15002


def _reachable(url: str) -> None:
    host, port = remote_address(url)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
            pass
    except OSError as e:
        raise SparkServerLostError(
            f"cannot reach the Spark Connect server at {host}:{port}: {e.strerror or e}",
            hint="check spark.remote (or SPARK_REMOTE) and that the server runs") from e


#: The client sessions this process made (weakly: a session dropped earlier is closed by its
#: finalizer while the interpreter still runs normally).
_SESSIONS: weakref.WeakSet[SparkSession] = weakref.WeakSet()


@atexit.register
def _close_sessions() -> None:
    """Close every client session's channel before the interpreter's finalization."""
    for spark in list(_SESSIONS):
        try:
            spark.client.close()
        except Exception:  # noqa: BLE001 - best effort at exit, as pyspark's own
            pass


def bound_retries(spark: SparkSession) -> None:
    """pyspark's default retries last minutes; a lost server must end the runner within
    seconds: three tries per call, 0.25 s to 1 s apart (under 2 s of waiting). pyspark's own
    warning when they run out is dropped: the runner says it in its own words."""
    import warnings

    from pyspark.sql.connect.client.retries import DefaultPolicy

    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    client = spark.client
    client.set_retry_policies([DefaultPolicy(max_retries=3, initial_backoff=250,
                                             max_backoff=1000, backoff_multiplier=2.0)])


def run_time_hadoop(conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` as a live session takes it: each ``spark.hadoop.<key>`` also as the bare
    Hadoop key. Spark reads the prefixed spelling only when its SparkContext starts, which
    a client's session does not do; every operation builds its Hadoop configuration from the
    session's settings, bare keys included (tests/storage/test_spark_s3.py), so a bucket's
    S3A settings from the deployment's profile reach the server's reads, writes and streaming
    checkpoint this way.

    >>> run_time_hadoop({"spark.hadoop.fs.s3.impl": "S3A", "spark.sql.x": "1"})
    {'spark.hadoop.fs.s3.impl': 'S3A', 'spark.sql.x': '1', 'fs.s3.impl': 'S3A'}
    """
    out = {k: str(v) for k, v in conf.items()}
    out.update({k.removeprefix("spark.hadoop."): str(v) for k, v in conf.items()
                if k.startswith("spark.hadoop.") and k not in SERVER_START_KEYS})
    return out


def build_remote_session(url: str, *, conf: Mapping[str, str] = {}) -> SparkSession:
    """A Spark Connect session on ``url`` with the runner's runtime defaults and ``conf``.

    Raises:
        SparkServerLostError: the server does not answer (exit 69).
        ConfigError: a key of ``conf`` is static on the server with another value, or the
            server keeps variable substitution on.
    """
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    _reachable(url)
    # pyspark's functions (F.col...) build Connect columns only in a process marked so, as
    # SparkSession.builder.remote() marks it: the runner's process is a client from here on.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    spark: SparkSession = ConnectSession.builder.remote(url).getOrCreate()  # type: ignore[assignment]
    bound_retries(spark)
    _SESSIONS.add(spark)
    static = _apply(spark, {**RUNTIME_DEFAULTS, **run_time_hadoop(conf)})
    if static:
        names = ", ".join(f"{k} (server: {'not set' if v is None else repr(v)})"
                          for k, v in static.items())
        raise ConfigError(f"spark.conf: static on the Spark Connect server, cannot be set from "
                          f"the runner: {names}",
                          hint="set them in the server's configuration, or drop them from "
                          "spark.conf")
    spark.conf.set(_SUBSTITUTE, "false")
    if (spark.conf.get(_SUBSTITUTE, "true") or "true").lower() != "false":
        raise ConfigError("the Spark Connect server keeps spark.sql.variable.substitute on",
                          hint="the runner needs it off (docs/SECURITY.md): start the server "
                          "with spark.sql.variable.substitute=false")
    return spark


#: Settings a session accepts but the server reads only when it starts: its Hive metastore
#: client is made once for all its sessions, so a client's value would be silently ignored
#: (the names would go to the server's metastore, not the one the profile names).
SERVER_START_KEYS = frozenset({"spark.hadoop.hive.metastore.uris"})


def _apply(spark: SparkSession, settings: Mapping[str, str]) -> dict[str, str | None]:
    """Set ``settings`` in the session; returns the static ones whose server value differs
    (:data:`SERVER_START_KEYS` count as static)."""
    from pyspark.errors import PySparkException

    static: dict[str, str | None] = {}
    for key, value in settings.items():
        if key in SERVER_START_KEYS:
            current = spark.conf.get(key, None)
            if current != value:
                static[key] = current
            continue
        try:
            spark.conf.set(key, value)
        except PySparkException as e:
            if (e.getCondition() or "") != "CANNOT_MODIFY_STATIC_CONFIG":
                raise
            current = spark.conf.get(key, None)
            if current != value:
                static[key] = current
    return static


def describe_jobs(spark: SparkSession, text: str) -> None:
    """Name the thread's next Spark jobs (UI, event log); over Connect jobs are tagged by the
    server with the operation, and a client cannot name them (no ``SparkContext``)."""
    if not is_remote(spark):
        spark.sparkContext.setJobDescription(text)


def conf_set_by_user(spark: SparkSession, key: str) -> bool:
    """Whether ``key`` was set explicitly (the session's start-up conf, or over Connect in
    the session or on the server), not merely at its default."""
    if is_remote(spark):
        return spark.conf.get(key, None) is not None
    return bool(spark.sparkContext.getConf().contains(key))


#: gRPC's words for a server that is gone (refused, reset, shut down, unreachable).
_LOST = ("UNAVAILABLE", "Connection refused", "Socket closed", "failed to connect",
         "Connection reset", "RetriesExceeded", "RETRIES_EXCEEDED")


def is_server_lost(error: BaseException) -> bool:
    """Whether ``error`` (or its cause) says the Connect server cannot be reached."""
    import grpc

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, grpc.RpcError) and seen.code() == grpc.StatusCode.UNAVAILABLE:
            return True
        if type(seen).__name__ == "RetriesExceeded" or any(w in str(seen) for w in _LOST):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@contextmanager
def server_lost_as_error(spark: SparkSession) -> Iterator[None]:
    """Over Connect: a lost server ends the block as :class:`SparkServerLostError` (exit 69)."""
    from runner.errors import RunnerError

    try:
        yield
    except RunnerError:
        raise
    except Exception as e:
        if is_remote(spark) and is_server_lost(e):
            raise SparkServerLostError(
                "lost the Spark Connect server: the batch in flight was not committed and "
                "replays on the next start",
                hint="check the server (its log, its memory), then start the runner again") from e
        raise


def new_session(spark: SparkSession) -> SparkSession:
    """A session of its own for private temp views: ``newSession()``; over Connect (which has
    none) a clone of the server-side session, its settings kept (substitution stays off)."""
    if is_remote(spark):
        clone: SparkSession = spark.cloneSession()  # type: ignore[attr-defined]
        bound_retries(clone)
        _SESSIONS.add(clone)
        return clone
    return spark.newSession()
