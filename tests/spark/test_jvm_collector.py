"""The driver JVM the runner starts on a local master runs the serial collector (the shared
session is the runner's own ``build_session`` on ``local[2]``). One engine is enough: the
session is the same whichever engine writes."""

from __future__ import annotations

import os

import pytest

from runner.runtime.client.jvm_options import JAVA_OPTION_ENVS, names_collector


def test_the_local_driver_runs_the_serial_collector(spark) -> None:  # type: ignore[no-untyped-def]
    if any(names_collector(os.environ.get(name, "")) for name in JAVA_OPTION_ENVS):
        pytest.skip("this environment names a collector for every JVM, and it wins")
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    names = {bean.getName() for bean in beans.getGarbageCollectorMXBeans()}
    # HotSpot's serial collector: "Copy" (young) and "MarkSweepCompact" (old); G1 would be
    # "G1 Young Generation" / "G1 Old Generation".
    assert names == {"Copy", "MarkSweepCompact"}
    arguments = list(beans.getRuntimeMXBean().getInputArguments())
    assert "-XX:+UseSerialGC" in arguments
