"""Which Spark settings project.yml may set by itself: an allowlist.

project.yml comes with the pull request, and what it sets runs with the pipeline's credentials.
Spark's settings are an open namespace, and many of them load code or run programs:
``spark.jars`` plus ``spark.sql.extensions`` load outside classes into the driver,
``spark.driver.resource.gpu.discoveryScript`` runs a script with the pipeline's environment.
So a project may set only the settings listed in :data:`ALLOWED` (SQL and shuffle tuning,
memory and cores, Delta tuning, the catalog's kind): each takes a number, a flag, a size, a
duration or a fixed choice, and none names a class, a plugin, a listener, a script, a path, a
host or a credential (``tests/spark/test_spark_conf_allowlist.py`` holds the list against
Spark's own configuration registry; no ``spark.hadoop.*`` key is on it, so nothing of the
project reaches Hadoop's configuration). Connections (the metastore's URI, object-store
endpoints and keys) are the deployment's: the profile's target sets them in its own
``spark.conf``, any key (runner/project/profile.py). Every other project key needs an opt-in by
whoever deploys the runner, outside the project: the target's ``allow_spark_conf:`` list, the
command-line flag ``--allow-spark-conf KEY`` (repeatable; :func:`opted_in`) or the environment
variable :data:`ALLOW_ENV` (comma-separated) lists the keys, exact names, they accept::

    runner stream --allow-spark-conf spark.jars.packages --allow-spark-conf spark.sql.extensions
    RUNNER_ALLOW_SPARK_CONF=spark.jars.packages,spark.sql.extensions runner stream

The keys in :data:`FORCED` are the runner's and no opt-in sets them: Spark's variable
substitution stays off (``'${env:AWS_SECRET_ACCESS_KEY}'`` in SQL would read the environment).

The runner's own defaults (its jars, Delta's extension and catalog) are not project settings
and are not checked here. See docs/SECURITY.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from fnmatch import fnmatchcase

from runner.errors import ConfigError

__all__ = ["ALLOWED", "ALLOW_ENV", "ALLOW_FLAG", "FORCED", "GUARDED", "allowed",
           "check_spark_conf", "deployment_opt_ins", "guarded_reason", "opted_in"]

ALLOW_ENV = "RUNNER_ALLOW_SPARK_CONF"
ALLOW_FLAG = "--allow-spark-conf"

#: keys opted in on the command line (:func:`opted_in`), for the command being run
_FLAGGED: ContextVar[frozenset[str]] = ContextVar("allow_spark_conf", default=frozenset())

#: What a project may set without an opt-in, by group (docs/SECURITY.md lists them). Exact
#: keys; a ``*`` stands for one name of the user's own (an Azure storage account's host).
ALLOWED: Mapping[str, tuple[str, ...]] = {
    "SQL and shuffle tuning": (
        "spark.sql.shuffle.partitions",
        "spark.sql.adaptive.enabled",
        "spark.sql.adaptive.coalescePartitions.enabled",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes",
        "spark.sql.adaptive.skewJoin.enabled",
        "spark.sql.autoBroadcastJoinThreshold",
        "spark.sql.broadcastTimeout",
        "spark.sql.files.maxPartitionBytes",
        "spark.sql.files.openCostInBytes",
        "spark.sql.files.maxRecordsPerFile",
        "spark.sql.ansi.enabled",
        "spark.sql.caseSensitive",
        "spark.sql.parquet.compression.codec",
        "spark.sql.parquet.filterPushdown",
        "spark.sql.parquet.enableVectorizedReader",
        "spark.sql.inMemoryColumnarStorage.compressed",
        "spark.sql.inMemoryColumnarStorage.batchSize",
        "spark.sql.codegen.wholeStage",
        "spark.sql.optimizer.maxIterations",
        "spark.sql.execution.arrow.maxRecordsPerBatch",
        "spark.sql.streaming.minBatchesToRetain",
        "spark.sql.streaming.metricsEnabled",
        "spark.sql.streaming.numRecentProgressUpdates",
        "spark.sql.debug.maxToStringFields",
        "spark.shuffle.compress",
        "spark.shuffle.spill.compress",
        "spark.shuffle.file.buffer",
        "spark.reducer.maxSizeInFlight",
        "spark.default.parallelism",
        "spark.locality.wait",
        "spark.speculation",
        "spark.network.timeout",
        "spark.executor.heartbeatInterval",
        "spark.task.maxFailures",
    ),
    "memory and cores": (
        "spark.driver.memory",
        "spark.driver.memoryOverhead",
        "spark.driver.maxResultSize",
        "spark.driver.cores",
        "spark.executor.memory",
        "spark.executor.memoryOverhead",
        "spark.executor.cores",
        "spark.executor.instances",
        "spark.cores.max",
        "spark.task.cpus",
        "spark.memory.fraction",
        "spark.memory.storageFraction",
        "spark.memory.offHeap.enabled",
        "spark.memory.offHeap.size",
        "spark.dynamicAllocation.enabled",
        "spark.dynamicAllocation.minExecutors",
        "spark.dynamicAllocation.maxExecutors",
        "spark.dynamicAllocation.initialExecutors",
        "spark.dynamicAllocation.executorIdleTimeout",
    ),
    "Delta tuning": (
        "spark.databricks.delta.snapshotPartitions",
        "spark.databricks.delta.optimizeWrite.enabled",
        "spark.databricks.delta.stats.collect",
        "spark.databricks.delta.checkpoint.partSize",
    ),
    "the catalog": (
        "spark.sql.catalogImplementation",
    ),
}

#: The runner's own settings: no project and no opt-in sets them (key -> why).
FORCED: Mapping[str, str] = {
    "spark.sql.variable.substitute":
        "the runner keeps Spark's variable substitution off in every session: with it on, "
        "'${env:NAME}' or '${system:user.home}' in SQL reads the environment",
}

#: Keys known to load code, run programs or weaken isolation: (pattern, why), for a precise
#: message; every key not in :data:`ALLOWED` needs an opt-in, listed here or not.
GUARDED: tuple[tuple[str, str], ...] = (
    ("spark.jars*", "loads jars (code) into the driver and the executors"),
    ("spark.files", "ships files to every node"),
    ("spark.archives", "ships archives to every node"),
    ("spark.submit.*", "changes what is submitted (jars, Python files)"),
    ("spark.sql.extensions", "loads SQL extensions (code) into every session"),
    ("spark.sql.catalog.*", "plugs a catalog implementation (code) into SQL"),
    ("spark.sql.runSQLOnFiles", "lets SQL read any file by path"),
    ("spark.plugins*", "loads driver and executor plugins (code)"),
    ("spark.extraListeners", "loads listener classes (code)"),
    ("spark.sql.queryExecutionListeners", "loads listener classes (code)"),
    ("spark.sql.streaming.streamingQueryListeners", "loads listener classes (code)"),
    ("spark.*.resource.*", "names resources and the discovery scripts Spark runs to find them"),
    ("spark.resources.*", "loads a resource discovery plugin (code)"),
    ("spark.driver.extra*", "changes the driver's class path, library path or JVM options"),
    ("spark.executor.extra*", "changes the executors' class path, library path or JVM options"),
    ("spark.driver.defaultJavaOptions", "changes the driver's JVM options"),
    ("spark.executor.defaultJavaOptions", "changes the executors' JVM options"),
    ("spark.executorEnv.*", "sets the executors' environment (LD_PRELOAD, PATH...)"),
    ("spark.pyspark.*", "chooses the Python interpreter that runs"),
    ("spark.python.*", "chooses the Python program workers run"),
    ("spark.sql.hive.metastore.*", "loads a metastore client (jars)"),
    ("spark.hadoop.*", "is a Hadoop setting: a connection (a host, a credential, a credential "
                       "provider class); the deployment's profile sets it"),
    ("spark.redaction.*", "changes which secrets Spark hides in logs and the UI"),
    ("spark.sql.redaction.*", "changes which secrets Spark hides in logs and the UI"),
    ("spark.kubernetes.*", "changes the deployment (images, pod templates)"),
    ("spark.yarn.*", "changes the deployment (jars, archives, files)"),
    ("*class*", "names a class to load (code)"),
    ("*Class*", "names a class to load (code)"),
)

_NOT_LISTED = ("is not on the list of settings a project may set by itself (those that load "
               "no code and run nothing: docs/SECURITY.md)")


def allowed(key: str) -> bool:
    """Whether project.yml may set ``key`` without an opt-in (:data:`ALLOWED`)."""
    return any(fnmatchcase(key, pattern) if "*" in pattern else key == pattern
               for keys in ALLOWED.values() for pattern in keys)


def guarded_reason(key: str) -> str | None:
    """Why project.yml may not set ``key`` by itself, or None when it may (:func:`allowed`)."""
    if key in FORCED:
        return FORCED[key]
    if allowed(key):
        return None
    for pattern, why in GUARDED:
        if fnmatchcase(key, pattern):
            return why
    return _NOT_LISTED


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
                     opt_ins: Iterable[str] | None = None) -> None:
    """Refuse every key of project.yml's ``spark.conf`` that is neither :func:`allowed` nor
    opted in, and every :data:`FORCED` key.

    Args:
        conf: the ``spark: conf:`` map.
        path: the project file, for the message.
        lines: key -> its line in the file (None: unknown).
        opt_ins: keys opted in; default: :func:`deployment_opt_ins` (the environment's
            :data:`ALLOW_ENV` and the command line's ``--allow-spark-conf``).

    Raises:
        ConfigError: naming the first refused key (exit 2), the others in ``also``.
    """
    accepted = deployment_opt_ins() if opt_ins is None else set(opt_ins)
    errors = []
    for key in conf:
        why = guarded_reason(key)
        if why is None or (key in accepted and key not in FORCED):
            continue
        if key in FORCED:
            hint = "remove it from spark.conf: no opt-in sets it"
        else:
            hint = (f"set it in the profile's target (spark: conf:), or opt in there: "
                    f"allow_spark_conf: [{key}] ({ALLOW_FLAG} {key} and {ALLOW_ENV} too; "
                    "docs/PROFILES.md)")
        errors.append(ConfigError(f"spark.conf.{key}: {why}; a project cannot set it by itself",
                                  path=path, line=lines.get(key), hint=hint))
    if errors:
        first = errors[0]
        raise ConfigError(first.message, path=first.path, line=first.line, hint=first.hint,
                          also=errors[1:])
