"""The JVM jars: what set-up asks Maven for (``scripts/jars.py``) and what a session puts on
its classpath (``runner.runtime.client.session.spark_jars``). No Maven run, no JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.runtime.client import session
from scripts import jars


def test_coordinates_match_the_pinned_python_packages() -> None:
    assert jars.coordinates(jars.POMS["spark"]) == [
        "io.delta:delta-spark_4.2_2.13:4.4.0",
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
    ]
    assert jars.coordinates(jars.POMS["kafka-broker"])[0] == "org.apache.kafka:kafka_2.13:4.4.0"
    pyproject = (jars.ROOT / "pyproject.toml").read_text()
    props = jars.pom_properties(jars.POMS["spark"])
    assert f'"delta-spark=={props["delta.version"]}"' in pyproject
    assert f'"pyspark=={props["spark.version"]}"' in pyproject


def test_a_stamped_folder_needs_no_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jars, "JARS", tmp_path)
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)  # any mvn call would fail
    group = tmp_path / "kafka-broker"
    group.mkdir()
    (group / jars._stamp(jars.POMS["kafka-broker"])).touch()
    assert jars.fetch("kafka-broker") is False


def test_missing_maven_names_the_coordinates(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jars, "JARS", tmp_path)
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)
    (tmp_path / "kafka-broker").mkdir()
    (tmp_path / "kafka-broker" / ".stamp-of-another-pom").touch()
    with pytest.raises(jars.FetchError, match=r"mvn\) is not on PATH; it fetches the "
                                              r"kafka-broker jars \(org\.apache\.kafka:kafka_2"):
        jars.fetch("kafka-broker")


@pytest.mark.parametrize("name, artifact", [
    ("delta-spark_4.2_2.13-4.4.0.jar", "delta-spark_4.2_2.13"),
    ("zstd-jni-1.5.7-7.jar", "zstd-jni"),
    ("scala-parallel-collections_2.13-1.2.0.jar", "scala-parallel-collections_2.13"),
    ("RoaringBitmap-1.6.10.jar", "RoaringBitmap"),
    ("jackson-annotations-2.21.jar", "jackson-annotations"),
])
def test_artifact_id_of_a_jar_name(name: str, artifact: str) -> None:
    assert session._artifact_id(name) == artifact


def test_spark_jars_skip_what_spark_ships(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("delta-spark_4.2_2.13-4.4.0.jar", "jackson-databind-2.13.5.jar",
                 "kafka-clients-3.9.2.jar", "notes.txt"):
        (tmp_path / name).touch()
    monkeypatch.setenv(session.JARS_DIR_ENV, str(tmp_path))
    assert [Path(j).name for j in session.spark_jars()] == [
        "delta-spark_4.2_2.13-4.4.0.jar", "kafka-clients-3.9.2.jar"]  # Spark has jackson
    settings = session._jar_settings(session.spark_jars(), {"spark.jars": "/opt/mine.jar"})
    assert settings["spark.jars"].split(",")[0] == "/opt/mine.jar"
    assert settings["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def test_jars_dir_default_override_and_off(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.delenv(session.JARS_DIR_ENV, raising=False)
    assert session.spark_jars_dir() == jars.ROOT / ".jars" / "spark"  # not the cwd's
    monkeypatch.setenv(session.JARS_DIR_ENV, str(tmp_path))
    assert session.spark_jars_dir() == tmp_path
    assert "no delta-spark jar in" in session.missing_jars_note()
    monkeypatch.setenv(session.JARS_DIR_ENV, "")
    assert session.spark_jars_dir() is None and session.spark_jars() == []
    assert session._jar_settings([], {}) == {}
    assert "set empty" in session.missing_jars_note()


def test_cloud_group_matches_sparks_hadoop() -> None:
    """hadoop-aws and hadoop-azure call Hadoop's internals: their version is the Hadoop that
    pyspark ships; the AWS SDK bundle is excluded for the modules S3A uses."""
    import pyspark

    props = jars.pom_properties(jars.POMS["cloud"])
    shipped = Path(pyspark.__file__).parent / "jars"
    assert (shipped / f"hadoop-client-api-{props['hadoop.version']}.jar").is_file()
    wanted = jars.coordinates(jars.POMS["cloud"])
    assert f"org.apache.hadoop:hadoop-aws:{props['hadoop.version']}" in wanted
    assert "software.amazon.awssdk:s3:" in wanted  # version from the SDK's BOM
    assert "software.amazon.awssdk:bundle" not in " ".join(wanted)


def test_cloud_jars_join_the_default_folder_only(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(session.JARS_DIR_ENV, raising=False)
    cloud = session.cloud_jars_dir()
    if cloud is not None:
        assert cloud == jars.ROOT / ".jars" / "cloud"
        names = [Path(j).name for j in session.spark_jars()]
        assert any(n.startswith("hadoop-aws-") for n in names)
        assert not any(n.startswith("hadoop-client-") for n in names)  # Spark ships them
    monkeypatch.setenv(session.JARS_DIR_ENV, str(tmp_path))  # that folder alone
    assert session.cloud_jars_dir() is None
