"""Spark settings a project may not set by itself: those that load code or weaken isolation.

project.yml comes with the pull request, and what it sets runs with the pipeline's credentials:
``spark.jars`` plus ``spark.sql.extensions`` would load outside code into the driver. Such a
setting needs an opt-in by whoever deploys the runner, outside the project: the command-line
flag ``--allow-spark-conf KEY`` (repeatable; :func:`opted_in`) or the environment variable
:data:`ALLOW_ENV` (comma-separated) lists the keys, exact names, they accept::

    runner stream --allow-spark-conf spark.jars.packages --allow-spark-conf spark.sql.extensions
    RUNNER_ALLOW_SPARK_CONF=spark.jars.packages,spark.sql.extensions runner stream

The runner's own defaults (its jars, Delta's extension and catalog) are not project settings
and are not checked here. See docs/SECURITY.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from runner.errors import ConfigError

__all__ = ["ALLOW_ENV", "ALLOW_FLAG", "GUARDED", "check_spark_conf", "deployment_opt_ins",
           "guarded_reason", "opted_in"]

ALLOW_ENV = "RUNNER_ALLOW_SPARK_CONF"
ALLOW_FLAG = "--allow-spark-conf"

#: keys opted in on the command line (:func:`opted_in`), for the command being run
_FLAGGED: ContextVar[frozenset[str]] = ContextVar("allow_spark_conf", default=frozenset())

#: (key or key prefix ending in '.' or '*', why it is guarded). A prefix matches every key
#: that starts with it.
GUARDED: tuple[tuple[str, str], ...] = (
    ("spark.jars*", "loads jars (code) into the driver and the executors"),
    ("spark.files", "ships files to every node"),
    ("spark.archives", "ships archives to every node"),
    ("spark.submit.", "changes what is submitted (jars, Python files)"),
    ("spark.sql.extensions", "loads SQL extensions (code) into every session"),
    ("spark.sql.catalog.", "plugs a catalog implementation (code) into SQL"),
    ("spark.sql.runSQLOnFiles", "lets SQL read any file by path"),
    ("spark.plugins", "loads driver and executor plugins (code)"),
    ("spark.extraListeners", "loads listener classes (code)"),
    ("spark.sql.queryExecutionListeners", "loads listener classes (code)"),
    ("spark.sql.streaming.streamingQueryListeners", "loads listener classes (code)"),
    ("spark.driver.extra*", "changes the driver's class path, library path or JVM options"),
    ("spark.executor.extra*", "changes the executors' class path, library path or JVM options"),
    ("spark.driver.defaultJavaOptions", "changes the driver's JVM options"),
    ("spark.executor.defaultJavaOptions", "changes the executors' JVM options"),
    ("spark.executorEnv.", "sets the executors' environment (LD_PRELOAD, PATH...)"),
    ("spark.pyspark.", "chooses the Python interpreter that runs"),
    ("spark.python.worker.module", "chooses the Python module workers run"),
    ("spark.python.daemon.module", "chooses the Python module workers run"),
    ("spark.sql.hive.metastore.", "loads a metastore client (jars)"),
    ("spark.redaction.", "changes which secrets Spark hides in logs and the UI"),
    ("spark.sql.redaction.", "changes which secrets Spark hides in logs and the UI"),
    ("spark.kubernetes.", "changes the deployment (images, pod templates)"),
    ("spark.yarn.", "changes the deployment (jars, archives, files)"),
)


def guarded_reason(key: str) -> str | None:
    """Why ``key`` needs an opt-in, or None when a project may set it."""
    for pattern, why in GUARDED:
        if pattern.endswith(("*", ".")):
            if key.startswith(pattern.rstrip("*")):
                return why
        elif key == pattern:
            return why
    return None


@contextmanager
def opted_in(keys: Iterable[str]) -> Iterator[None]:
    """Accept ``keys`` inside the block as if :data:`ALLOW_ENV` listed them: the command line's
    ``--allow-spark-conf KEY``, for the command it runs."""
    token = _FLAGGED.set(_FLAGGED.get() | {k.strip() for k in keys if k.strip()})
    try:
        yield
    finally:
        _FLAGGED.reset(token)


def deployment_opt_ins() -> set[str]:
    """The keys whoever deploys the runner accepts: :data:`ALLOW_ENV`'s and the command
    line's (:func:`opted_in`)."""
    from_env = {k.strip() for k in os.environ.get(ALLOW_ENV, "").split(",") if k.strip()}
    return from_env | _FLAGGED.get()


def check_spark_conf(conf: Mapping[str, str], *, path: str, lines: Mapping[str, int | None],
                     allowed: Iterable[str] | None = None) -> None:
    """Refuse every guarded key of project.yml's ``spark.conf`` that is not opted in.

    Args:
        conf: the ``spark: conf:`` map.
        path: the project file, for the message.
        lines: key -> its line in the file (None: unknown).
        allowed: keys opted in; default: :func:`deployment_opt_ins` (the environment's
            :data:`ALLOW_ENV` and the command line's ``--allow-spark-conf``).

    Raises:
        ConfigError: naming the first refused key (exit 2), the others in ``also``.
    """
    accepted = deployment_opt_ins() if allowed is None else set(allowed)
    errors = []
    for key in conf:
        why = guarded_reason(key)
        if why is not None and key not in accepted:
            errors.append(ConfigError(
                f"spark.conf.{key}: {why}; a project cannot set it by itself",
                path=path, line=lines.get(key),
                hint=f"whoever deploys the runner may opt in: {ALLOW_FLAG} {key} on the "
                     f"command line, or {ALLOW_ENV}={key} (comma-separated keys; "
                     "docs/SECURITY.md)"))
    if errors:
        first = errors[0]
        raise ConfigError(first.message, path=first.path, line=first.line, hint=first.hint,
                          also=errors[1:])
