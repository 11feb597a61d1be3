"""project.yml loading: strict keys, clear errors with file and line, env_var, schema tree."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.project.event_schema import EventSchema
from runner.project.loader import load_project
from tests.support.projects import BASE_YML, write_project


def test_example_project_loads() -> None:
    from tests.support.projects import REPO_ROOT

    project = load_project(REPO_ROOT)
    assert project.config.name == "app_events"
    assert [m.name for m in project.models] == ["error_events", "performance_metrics",
                                                "request_logs"]
    assert project.schema.not_null_paths == ("eventId", "timestamp")
    assert project.table_path("request_logs") == REPO_ROOT / "_warehouse" / "request_logs"


def test_unknown_key_names_key_file_line_and_suggestion(tmp_path) -> None:
    write_project(tmp_path, {}, project_yml=BASE_YML + "paralelism: 3\n")
    with pytest.raises(ConfigError) as err:
        load_project(tmp_path)
    text = str(err.value)
    assert "unknown key 'paralelism'" in text and "did you mean 'parallelism'" in text
    assert err.value.path == "project.yml" and err.value.line == BASE_YML.count("\n") + 1
    assert err.value.exit_code == 2


def test_unknown_nested_key_in_source(tmp_path) -> None:
    yml = BASE_YML.replace("  path: incoming\n", "  path: incoming\n  max_file_per_trigger: 3\n")
    write_project(tmp_path, {}, project_yml=yml)
    with pytest.raises(ConfigError, match="unknown key 'max_file_per_trigger'.*"
                                          "did you mean 'max_files_per_trigger'"):
        load_project(tmp_path)


def test_bad_value_and_missing_key(tmp_path) -> None:
    write_project(tmp_path, {}, project_yml=BASE_YML.replace("engine: rs", "engine: jvm"))
    with pytest.raises(ConfigError, match="delta.engine"):
        load_project(tmp_path)
    write_project(tmp_path, {}, project_yml=BASE_YML.replace("name: test_pipeline\n", ""))
    with pytest.raises(ConfigError, match="missing required key 'name'"):
        load_project(tmp_path)


def test_env_var_in_project_yml_reads_public_names_only(tmp_path, monkeypatch) -> None:
    public = "env_var_prefixes: [PUBLIC_]\n"
    yml = BASE_YML.replace("warehouse: wh", "warehouse: \"{{ env_var('PUBLIC_WH', 'wh2') }}\"")
    write_project(tmp_path, {}, project_yml=yml + public)
    assert load_project(tmp_path).config.warehouse == "wh2"
    monkeypatch.setenv("PUBLIC_WH", "elsewhere")
    assert load_project(tmp_path).config.warehouse == "elsewhere"
    write_project(tmp_path, {}, project_yml=BASE_YML.replace(
        "warehouse: wh", "warehouse: \"{{ env_var('PUBLIC_NOPE_UNSET') }}\"") + public)
    with pytest.raises(ConfigError, match="PUBLIC_NOPE_UNSET"):
        load_project(tmp_path)
    # a name without a public prefix is refused whether it is set or has a default: secrets
    # and connections are the profile's
    monkeypatch.setenv("WH_DIR", "x")
    for call in ("env_var('WH_DIR')", "env_var('WH_DIR', 'wh2')"):
        write_project(tmp_path, {}, project_yml=BASE_YML.replace(
            "warehouse: wh", f"warehouse: \"{{{{ {call} }}}}\"") + public)
        with pytest.raises(ConfigError, match=r"env_var\('WH_DIR'\): project.yml reads only "
                                              "public variables"):
            load_project(tmp_path)


def test_kafka_options_are_secret(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KAFKA_PASSWORD", "hunter2")
    yml = BASE_YML.replace("  type: files\n  path: incoming\n", """\
  type: kafka
  bootstrap_servers: localhost:9092
  topic: [a, b]
  options:
    sasl.password: "{{ env_var('KAFKA_PASSWORD') }}"
    timeout_ms: 2000
    enable.ssl.certificate.verification: false
""")
    write_project(tmp_path, {}, project_yml=yml)
    config = load_project(tmp_path).config
    assert config.source.topics == ("a", "b")
    assert config.source.options["sasl.password"].get_secret_value() == "hunter2"
    assert config.source.options["timeout_ms"].get_secret_value() == "2000"
    assert config.source.options["enable.ssl.certificate.verification"].get_secret_value() == "false"
    assert "hunter2" not in repr(config) and "hunter2" not in str(config)


def test_missing_project_and_duplicate_model_names(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no project.yml"):
        load_project(tmp_path)
    write_project(tmp_path, {"models/a.sql": "SELECT eventId FROM parsed_events",
                             "models/sub/a.sql": "SELECT eventId FROM parsed_events"})
    with pytest.raises(ConfigError, match="two models are named 'a'.*models/a.sql.*models/sub/a.sql"):
        load_project(tmp_path)


def test_reserved_and_invalid_model_names(tmp_path) -> None:
    write_project(tmp_path, {"models/parsed_events.sql": "SELECT 1"})
    with pytest.raises(ConfigError, match="reserved"):
        load_project(tmp_path)
    write_project(tmp_path / "b", {"models/my-table.sql": "SELECT 1"})
    with pytest.raises(ConfigError, match="not a valid table name"):
        load_project(tmp_path / "b")


def test_schema_tree_nested_and_not_null() -> None:
    s = EventSchema.parse("a STRING NOT NULL, s STRUCT<x: INT NOT NULL, y: ARRAY<STRUCT<z: "
                          "DOUBLE>>>, m MAP<STRING, BIGINT>")
    assert s.not_null_paths == ("a", "s.x")
    assert s.field("S").child("y").child("z").type_sql == "DOUBLE"
    assert "s.y.z" in s.paths()
    with pytest.raises(ConfigError, match="not valid Spark DDL"):
        EventSchema.parse("a STRING,, b")
    with pytest.raises(ConfigError, match="declared twice"):
        EventSchema.parse("a STRING, A INT")
