"""The java options the runner adds to the JVMs it starts: its log configuration, and the
garbage collector of a local master's driver.

Both are added to (never replace) what the user's settings say, and only where no other
source of java options made the same choice already.

**The collector.** On a local master (``local``, ``local[N]``, ``local[*]``) the driver's JVM
is also the only executor: it parses, caches and writes every batch. With at most
:data:`SERIAL_MAX_CORES` cores and a heap of at most :data:`SERIAL_MAX_HEAP_MIB`
(``spark.driver.memory``, 1 GB unless set) the runner starts it with the serial collector
(:data:`LOCAL_GC_OPTION`) instead of the JVM's default G1: the same work in about two thirds
of the resident memory, for the same CPU or less and a wall time within the machine's
run-to-run noise (measured on ``local[2]``; ``bench.stream_bench``, ``bench.sdp_bench`` and
``bench.kafka_bench`` run the JVM as the runner starts it, docs/PERFORMANCE.md). G1 is built
for large heaps and short pauses on many cores: its regions, remembered sets and concurrent
threads cost a small heap a large share, while the serial collector's pauses over a heap
this small stay short. More cores (whose task threads all wait while one thread collects)
or a bigger heap keep G1, and so do other masters: there the driver plans and commits, the
executors do the work, and their JVMs are the cluster's to configure.

A collector named anywhere else wins, because a JVM given two collectors refuses to start
("Multiple garbage collectors selected"): in the driver's ``extraJavaOptions`` or
``defaultJavaOptions`` (a deployment's opt-in, :mod:`runner.project.spark_conf`), or in the
environment the JVM reads (:data:`JAVA_OPTION_ENVS`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping
from pathlib import Path

__all__ = ["JAVA_OPTION_ENVS", "LOCAL_GC_OPTION", "SERIAL_MAX_CORES", "SERIAL_MAX_HEAP_MIB",
           "add_gc_default", "add_log_config", "driver_heap_mib", "names_collector"]

#: The local driver's collector (see the module docstring).
LOCAL_GC_OPTION = "-XX:+UseSerialGC"
#: The most cores (the local master's task threads) that get it: where it was measured.
SERIAL_MAX_CORES = 2
#: The largest driver heap that gets it, MiB (the test suite's 2 GB session included).
SERIAL_MAX_HEAP_MIB = 2048

#: Where else a JVM started through spark-submit takes java options from: the JVM's own
#: variables, and Spark's launch variables (``PYSPARK_SUBMIT_ARGS`` may hold
#: ``--driver-java-options``).
JAVA_OPTION_ENVS = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
                    "SPARK_SUBMIT_OPTS", "SPARK_DRIVER_OPTS", "PYSPARK_SUBMIT_ARGS")

_DRIVER_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions")

# -XX:+UseSerialGC, -XX:+UseG1GC, -XX:+UseZGC, -XX:-UseParallelGC, ... (any collector flag)
_COLLECTOR_FLAG = re.compile(r"-XX:[+-]Use\w*GC\b")
# Spark's size strings for spark.driver.memory: a number, MiB without a unit.
_SIZE = re.compile(r"(\d+)\s*([kmgtp]?)b?", re.IGNORECASE)
_MIB_PER_UNIT = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}


def names_collector(text: str) -> bool:
    """Whether java options ``text`` choose (or turn off) a garbage collector.

    >>> names_collector("-Xss4m -XX:+UseG1GC"), names_collector("-Xmx2g -XX:MaxGCPauseMillis=50")
    (True, False)
    """
    return _COLLECTOR_FLAG.search(text) is not None


def driver_heap_mib(settings: Mapping[str, str], environ: Mapping[str, str] = os.environ
                    ) -> float | None:
    """The driver's heap as spark-submit will size it, MiB: ``spark.driver.memory``, else
    ``SPARK_DRIVER_MEMORY`` / ``SPARK_MEM``, else Spark's 1 GB. None when it cannot be told
    (a size Spark would refuse, or ``--driver-memory`` in ``PYSPARK_SUBMIT_ARGS``).

    >>> driver_heap_mib({"spark.driver.memory": "512m"}, {}), driver_heap_mib({}, {})
    (512.0, 1024.0)
    """
    if "--driver-memory" in environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return None
    value = (settings.get("spark.driver.memory") or environ.get("SPARK_DRIVER_MEMORY")
             or environ.get("SPARK_MEM") or "1g")
    m = _SIZE.fullmatch(value.strip())
    return None if m is None else float(m.group(1)) * _MIB_PER_UNIT[m.group(2).lower()]


def add_gc_default(settings: MutableMapping[str, str], driver_cores: int | None,
                   environ: Mapping[str, str] = os.environ) -> None:
    """Add :data:`LOCAL_GC_OPTION` to the driver's java options when the driver is the only
    executor (``driver_cores``: a local master's cores; None for any other master) with at
    most :data:`SERIAL_MAX_CORES` cores and :data:`SERIAL_MAX_HEAP_MIB` of heap, unless
    ``settings`` or ``environ`` already name a collector (module docstring)."""
    heap = driver_heap_mib(settings, environ)
    if (driver_cores is None or driver_cores > SERIAL_MAX_CORES or heap is None
            or heap > SERIAL_MAX_HEAP_MIB):
        return
    elsewhere = [settings.get(k, "") for k in _DRIVER_OPTION_KEYS]
    elsewhere += [environ.get(name, "") for name in JAVA_OPTION_ENVS]
    if any(names_collector(text) for text in elsewhere):
        return
    key = _DRIVER_OPTION_KEYS[0]
    settings[key] = f"{settings.get(key, '')} {LOCAL_GC_OPTION}".strip()


def add_log_config(settings: MutableMapping[str, str], config_file: Path, *,
                   local: bool) -> None:
    """Point the JVMs' log4j2 at ``config_file``: added to (not replacing) a user's java
    options. Executors get it only where they run on this machine (local-cluster); a
    cluster's nodes lack the file."""
    log_opt = f"-Dlog4j2.configurationFile=file:{config_file.as_posix()}"
    java_option_keys = ["spark.driver.extraJavaOptions"]
    if local:
        java_option_keys.append("spark.executor.extraJavaOptions")
    for key in java_option_keys:
        user = settings.get(key, "")
        if "log4j2.configurationFile" not in user:
            settings[key] = f"{log_opt} {user}".strip()
