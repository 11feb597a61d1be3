"""`runner compile` is the gate: what `runner stream` would refuse in a project (no models, a
bad trigger, Kafka offsets for another topic, a schema field named like a metadata column) is
refused by compile too, exit 2; and configuration errors go through --format, one per key,
each with its own line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import BASE_YML, write_project

MODEL = {"models/a.sql": "SELECT eventId FROM parsed_events"}
KAFKA = BASE_YML.replace("  type: files\n  path: incoming\n",
                         "  type: kafka\n  bootstrap_servers: localhost:9092\n  topic: events\n")


def _compile(root, *args: str):
    return CliRunner().invoke(cli, ["compile", "--project-dir", str(root), *args],
                              catch_exceptions=False)


def test_no_models_directory_is_an_error(tmp_path) -> None:
    root = write_project(tmp_path, {})
    result = _compile(root)
    assert result.exit_code == 2, result.output
    assert "no models" in result.output and "models/" in result.output
    (root / "models").mkdir()
    assert _compile(root).exit_code == 2


def test_every_model_disabled_is_an_error(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": "{{ config(enabled=false) }}\n"
                                                    "SELECT eventId FROM parsed_events"})
    result = _compile(root)
    assert result.exit_code == 2 and "no models to run" in result.output


@pytest.mark.parametrize("yml, expected", [
    (BASE_YML + "trigger: banana\n", "trigger: not an interval; write '<number> <unit>'"),
    (KAFKA.replace("topic: events\n", "topic: events\n  starting_offsets: {other: {'0': 5}}\n"),
     "starting_offsets must name exactly the subscribed topics"),
    (KAFKA.replace("topic: events", "topic: []"), "at least one topic"),
    (KAFKA.replace("topic: events\n", "topic: events\n  options:\n    min_partitions: 0\n"),
     "min_partitions must be a positive integer"),
    (BASE_YML.replace("eventId STRING NOT NULL,", "eventId STRING NOT NULL, _batch_id STRING,"),
     "clash with the runner's metadata columns"),
])
def test_compile_refuses_what_stream_refuses(tmp_path, yml: str, expected: str) -> None:
    root = write_project(tmp_path, MODEL, project_yml=yml)
    result = _compile(root)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "Traceback" not in result.output


def test_trigger_error_names_its_line(tmp_path) -> None:
    yml = BASE_YML + "trigger: banana\n"
    root = write_project(tmp_path, MODEL, project_yml=yml)
    assert f"project.yml:{yml.count(chr(10))}: " in _compile(root).output


TWO_TYPOS = BASE_YML.replace("warehouse: wh", "warehose: wh") + "paralelism: 3\n"


def test_each_config_error_has_its_own_line(tmp_path) -> None:
    root = write_project(tmp_path, MODEL, project_yml=TWO_TYPOS)
    result = _compile(root)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if "unknown key" in line]
    warehouse = TWO_TYPOS.splitlines().index("warehose: wh") + 1
    parallelism = TWO_TYPOS.splitlines().index("paralelism: 3") + 1
    assert len(lines) == 2, result.output
    assert f"project.yml:{warehouse}: unknown key 'warehose' (did you mean 'warehouse'?)" \
        in lines[0]
    assert f"project.yml:{parallelism}: unknown key 'paralelism'" in lines[1]


def test_config_errors_as_json(tmp_path) -> None:
    root = write_project(tmp_path, MODEL, project_yml=TWO_TYPOS)
    result = _compile(root, "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["errors"] == 2
    assert [(v["rule"], v["path"], v["severity"]) for v in doc["violations"]] == [
        ("config", "project.yml", "error")] * 2
    assert [v["line"] for v in doc["violations"]] == [
        TWO_TYPOS.splitlines().index("warehose: wh") + 1,
        TWO_TYPOS.splitlines().index("paralelism: 3") + 1]


def test_config_errors_as_github_annotations(tmp_path) -> None:
    root = write_project(tmp_path, MODEL, project_yml=TWO_TYPOS)
    result = _compile(root, "--format", "github")
    assert result.exit_code == 2
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(annotations) == 2
    assert annotations[0].startswith("::error file=project.yml,line=")
    assert "title=config::unknown key 'warehose'" in annotations[0]
    missing = _compile(tmp_path / "nowhere", "--format", "github")
    assert missing.exit_code == 2
    assert missing.stdout.startswith("::error title=config::no project.yml in ")


def test_compiling_a_kafka_project_does_not_import_pyspark(tmp_path) -> None:
    import subprocess
    import sys

    root = write_project(tmp_path, MODEL, project_yml=KAFKA)
    code = ("import sys; from runner.build import compile_project; "
            "from runner.project.loader import load_project; "
            f"assert compile_project(load_project({str(root)!r})).ok; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- --allow-spark-conf: a deployment's opt-in to guarded Spark settings, on the command line --

GUARDED_YML = BASE_YML + ("spark:\n  conf:\n"
                               "    spark.jars: extra.jar\n"
                               "    spark.sql.extensions: com.example.Ext\n")


def test_allow_spark_conf_flag_opts_in_each_key(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    assert GUARDED_YML != BASE_YML
    root = write_project(tmp_path, MODEL, project_yml=GUARDED_YML)
    refused = _compile(root)
    assert refused.exit_code == 2, refused.output
    assert "spark.conf.spark.jars:" in refused.output
    assert "--allow-spark-conf spark.jars" in refused.output  # the hint names the flag

    one = _compile(root, "--allow-spark-conf", "spark.jars")  # the other key is still refused
    assert one.exit_code == 2, one.output
    assert "spark.conf.spark.sql.extensions:" in one.output
    assert "spark.conf.spark.jars:" not in one.output

    both = _compile(root, "--allow-spark-conf", "spark.jars",
                    "--allow-spark-conf", "spark.sql.extensions")
    assert both.exit_code == 0, both.output

    # the opt-in is the command's own: the next command without the flag is refused again
    assert _compile(root).exit_code == 2


def test_allow_spark_conf_flag_and_environment_add_up(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RUNNER_ALLOW_SPARK_CONF", "spark.sql.extensions")
    root = write_project(tmp_path, MODEL, project_yml=GUARDED_YML)
    assert _compile(root).exit_code == 2
    result = _compile(root, "--allow-spark-conf", "spark.jars")
    assert result.exit_code == 0, result.output


def test_stream_takes_allow_spark_conf(tmp_path, monkeypatch) -> None:
    """`runner stream` loads project.yml with the flag's keys accepted (the bad --trigger then
    stops it before any Spark session: the run gets past the guarded settings)."""
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    root = write_project(tmp_path, MODEL, project_yml=GUARDED_YML)
    args = ["stream", "--project-dir", str(root), "--trigger", "every tuesday"]
    refused = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert refused.exit_code == 2 and "spark.conf.spark.jars:" in refused.output
    allowed = CliRunner().invoke(cli, [*args, "--allow-spark-conf", "spark.jars",
                                       "--allow-spark-conf", "spark.sql.extensions"],
                                 catch_exceptions=False)
    assert allowed.exit_code == 2, allowed.output
    assert "spark.conf" not in allowed.output and "every tuesday" in allowed.output


# -- --vars: dbt's command-line values for {{ var() }} -------------------------------------

def test_vars_on_the_command_line_override_project_yml(tmp_path) -> None:
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId, {{ var('slow_ms') }} AS ms, "
                                    "'{{ var('label', 'none') }}' AS label FROM parsed_events"})
    assert _compile(root).exit_code == 0
    assert "1000 AS ms" in (root / "target/compiled/m.sql").read_text()
    result = _compile(root, "--vars", '{"slow_ms": 250, "label": "canary"}')
    assert result.exit_code == 0, result.output
    compiled = (root / "target/compiled/m.sql").read_text()
    assert "250 AS ms" in compiled and "'canary' AS label" in compiled
    assert _compile(root, "--vars", "slow_ms: 7").exit_code == 0  # YAML too
    assert "7 AS ms" in (root / "target/compiled/m.sql").read_text()
    # the values are the command's own: the next command without them has project.yml's
    assert _compile(root).exit_code == 0
    assert "1000 AS ms" in (root / "target/compiled/m.sql").read_text()


@pytest.mark.parametrize("text", ["[1, 2]", "{unclosed", "just text"])
def test_vars_that_are_not_a_mapping_exit_2(tmp_path, text: str) -> None:
    root = write_project(tmp_path, MODEL)
    result = _compile(root, "--vars", text)
    assert result.exit_code == 2, result.output
    assert "--vars:" in result.output and "Traceback" not in result.output
