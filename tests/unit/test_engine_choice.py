"""docs/ENGINES.md: which engine ``delta.engine`` means on which master, and the
reason ``runner stream`` prints. Pure: the master URL and whether the io.delta classes load
are inputs (tests/spark/test_engine_fallback.py runs the local case in a real process)."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.sinks import choose_engine, is_local_master

LOCAL = ("local", "local[2]", "local[*]", "local[4,3]", " local[2] ")
CLUSTER = ("local-cluster[2,1,1024]", "spark://h:7077", "yarn", "k8s://https://k:443")


@pytest.mark.parametrize("master", LOCAL)
@pytest.mark.parametrize("classes", [True, False])
def test_auto_on_a_local_master_is_rs_with_or_without_delta_spark(master, classes) -> None:
    choice = choose_engine("auto", master=master, delta_classes=classes)
    assert choice.engine == "rs" and not choice.classes_missing
    assert f"local master {master}" in choice.reason and "faster" in choice.reason


@pytest.mark.parametrize("master", CLUSTER)
def test_auto_on_a_cluster_master_is_spark_when_its_classes_load(master) -> None:
    assert not is_local_master(master)
    choice = choose_engine("auto", master=master, delta_classes=True)
    assert choice.engine == "spark" and f"cluster master {master}" in choice.reason
    fallback = choose_engine("auto", master=master, delta_classes=False)
    assert fallback.engine == "rs" and fallback.classes_missing
    assert "not on Spark's classpath" in fallback.reason


def test_auto_without_a_session_is_rs() -> None:
    assert choose_engine("auto", master=None, delta_classes=False).engine == "rs"


@pytest.mark.parametrize("master", [*LOCAL, *CLUSTER])
def test_explicit_engines_hold_on_every_master(master) -> None:
    assert choose_engine("rs", master=master, delta_classes=True).engine == "rs"
    spark = choose_engine("spark", master=master, delta_classes=True)
    assert spark.engine == "spark" and "project.yml" in spark.reason
    with pytest.raises(ConfigError, match="io.delta.tables.DeltaTable"):
        choose_engine("spark", master=master, delta_classes=False)
    with pytest.raises(ConfigError, match="unknown delta.engine"):
        choose_engine("duckdb", master=master, delta_classes=True)  # type: ignore[arg-type]
