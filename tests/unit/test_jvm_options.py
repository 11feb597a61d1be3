"""The java options the runner adds: the local driver's collector, never a second one."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.runtime.client.jvm_options import (
    JAVA_OPTION_ENVS,
    LOCAL_GC_OPTION,
    add_gc_default,
    add_log_config,
)

DRIVER = "spark.driver.extraJavaOptions"


@pytest.mark.parametrize("cores", [1, 2])
def test_a_small_local_driver_gets_the_serial_collector(cores: int) -> None:
    settings: dict[str, str] = {}
    add_gc_default(settings, cores, environ={})
    assert settings == {DRIVER: LOCAL_GC_OPTION}


@pytest.mark.parametrize("cores", [None, 3, 16])  # None: the driver is not the executor
def test_other_drivers_keep_their_jvm_defaults(cores: int | None) -> None:
    settings = {DRIVER: "-Xss4m"}
    add_gc_default(settings, cores, environ={})
    assert settings == {DRIVER: "-Xss4m"}


def test_added_after_the_users_own_options() -> None:
    settings = {DRIVER: "-Dlog4j2.configurationFile=file:/x -Xss4m"}
    add_gc_default(settings, 2, environ={})
    assert settings[DRIVER] == f"-Dlog4j2.configurationFile=file:/x -Xss4m {LOCAL_GC_OPTION}"


@pytest.mark.parametrize("key", [DRIVER, "spark.driver.defaultJavaOptions"])
@pytest.mark.parametrize("flag", ["-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:+UseZGC",
                                  "-XX:-UseSerialGC", "-XX:+UseShenandoahGC"])
def test_a_collector_in_the_settings_wins(key: str, flag: str) -> None:
    settings = {key: f"-Xss4m {flag}"}
    add_gc_default(settings, 2, environ={})
    assert settings == {key: f"-Xss4m {flag}"}  # two collectors: the JVM would not start


@pytest.mark.parametrize("env", JAVA_OPTION_ENVS)
def test_a_collector_in_the_environment_wins(env: str) -> None:
    settings: dict[str, str] = {}
    value = ("--driver-java-options -XX:+UseG1GC pyspark-shell" if env == "PYSPARK_SUBMIT_ARGS"
             else "-XX:+UseG1GC")
    add_gc_default(settings, 2, environ={env: value})
    assert settings == {}


def test_other_gc_tuning_is_not_a_collector_choice() -> None:
    settings = {DRIVER: "-XX:MaxGCPauseMillis=50 -XX:+PrintGCDetails -Xlog:gc"}
    add_gc_default(settings, 2, environ={"JAVA_TOOL_OPTIONS": "-XX:GCTimeRatio=9"})
    assert settings[DRIVER].endswith(LOCAL_GC_OPTION)


def test_the_log_configuration_goes_first_and_once(tmp_path: Path) -> None:
    config = tmp_path / "log4j2.properties"
    settings = {DRIVER: "-Xss4m"}
    add_log_config(settings, config, local=False)
    add_log_config(settings, config, local=False)
    assert settings == {DRIVER: f"-Dlog4j2.configurationFile=file:{config.as_posix()} -Xss4m"}
    add_log_config(settings, config, local=True)
    assert "spark.executor.extraJavaOptions" in settings


@pytest.mark.parametrize(("settings", "environ", "serial"), [
    ({"spark.driver.memory": "2g"}, {}, True),
    ({"spark.driver.memory": "2048"}, {}, True),  # no unit: MiB, as Spark reads it
    ({"spark.driver.memory": "512m"}, {}, True),
    ({"spark.driver.memory": "3g"}, {}, False),  # a big heap keeps G1
    ({"spark.driver.memory": "4096mb"}, {}, False),
    ({}, {"SPARK_DRIVER_MEMORY": "8g"}, False),
    ({"spark.driver.memory": "1g"}, {"SPARK_DRIVER_MEMORY": "8g"}, True),  # the setting wins
    ({}, {"SPARK_MEM": "16G"}, False),
    ({"spark.driver.memory": "lots"}, {}, False),  # Spark refuses it; add nothing
    ({}, {"PYSPARK_SUBMIT_ARGS": "--driver-memory 1g pyspark-shell"}, False),  # not told
])
def test_only_a_small_heap_gets_the_serial_collector(
        settings: dict[str, str], environ: dict[str, str], serial: bool) -> None:
    add_gc_default(settings, 2, environ=environ)
    assert (LOCAL_GC_OPTION in settings.get(DRIVER, "")) is serial
