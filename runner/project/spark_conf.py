"""Spark settings a project may not set by itself: those that load code or weaken isolation.

project.yml comes with the pull request, and what it sets runs with the pipeline's credentials:
``spark.jars`` plus ``spark.sql.extensions`` would load outside code into the driver. Such a
setting needs an opt-in by whoever deploys the runner, outside the project: the environment
variable :data:`ALLOW_ENV` lists the keys (comma-separated, exact names) they accept::

    RUNNER_ALLOW_SPARK_CONF=spark.jars.packages,spark.sql.extensions runner stream

The runner's own defaults (its jars, Delta's extension and catalog) are not project settings
and are not checked here. See docs/SECURITY.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from runner.errors import ConfigError

__all__ = ["ALLOW_ENV", "GUARDED", "check_spark_conf", "guarded_reason"]

ALLOW_ENV = "RUNNER_ALLOW_SPARK_CONF"

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


def _allowed_from_env() -> set[str]:
    return {k.strip() for k in os.environ.get(ALLOW_ENV, "").split(",") if k.strip()}


def check_spark_conf(conf: Mapping[str, str], *, path: str, lines: Mapping[str, int | None],
                     allowed: Iterable[str] | None = None) -> None:
    """Refuse every guarded key of project.yml's ``spark.conf`` that is not opted in.

    Args:
        conf: the ``spark: conf:`` map.
        path: the project file, for the message.
        lines: key -> its line in the file (None: unknown).
        allowed: keys opted in; default: :data:`ALLOW_ENV` from the environment.

    Raises:
        ConfigError: naming the first refused key (exit 2), the others in ``also``.
    """
    accepted = _allowed_from_env() if allowed is None else set(allowed)
    errors = []
    for key in conf:
        why = guarded_reason(key)
        if why is not None and key not in accepted:
            errors.append(ConfigError(
                f"spark.conf.{key}: {why}; a project cannot set it by itself",
                path=path, line=lines.get(key),
                hint=f"whoever deploys the runner may opt in: {ALLOW_ENV}={key} "
                     "(comma-separated keys; docs/SECURITY.md)"))
    if errors:
        first = errors[0]
        raise ConfigError(first.message, path=first.path, line=first.line, hint=first.hint,
                          also=errors[1:])
