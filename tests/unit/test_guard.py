"""compile as a security boundary: every attack found on main, and every category of
the function allowlist, is refused with its rule, file and line; the guard cannot be turned off.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlglot
from click.testing import CliRunner
from sqlglot import exp

from runner.cli import cli
from runner.errors import ConfigError
from runner.lint import check_lint_config
from runner.lint.guard import GUARD_RULES
from runner.project.config import LintConfig
from tests.support.projects import BASE_YML, write_project
from tests.unit.test_lint import found, lint_files

FUNCTIONS = Path(__file__).resolve().parents[2] / "runner" / "lint" / "spark_types" / "functions.json"


def one(tmp_path: Path, sql: str, rule: str, line: int | None, **more: str) -> str:
    """Lint model ``m`` (plus ``more``); assert ``rule`` is reported in models/m.sql at ``line``
    and return its message."""
    result = lint_files(tmp_path, {"m": sql, **more})
    hits = [v for v in result.violations if v.rule == rule and v.path == "models/m.sql"]
    assert (rule, "models/m.sql", line) in found(result), result.violations
    assert all(v.severity == "error" for v in hits)
    return hits[0].message


# -- attacks of the issue -------------------------------------------------------------------

def test_script_transformation_is_refused(tmp_path: Path) -> None:
    # Spark's grammar takes TRANSFORM as the whole SELECT list (beside another column it is a
    # syntax error, refused as such)
    sql = "SELECT\n  TRANSFORM(eventId) USING 'sh -c \"id\"' AS (x)\nFROM parsed_events"
    assert "shell command" in one(tmp_path, sql, "unsafe-function", 2)


@pytest.mark.parametrize("call", ["reflect('java.lang.System', 'getenv', 'AWS_SECRET')",
                                  "java_method('java.lang.System', 'getenv', 'X')",
                                  "try_reflect('java.lang.Runtime', 'getRuntime')"])
def test_java_calls_are_refused(tmp_path: Path, call: str) -> None:
    message = one(tmp_path, f"SELECT eventId,\n       {call} AS v\nFROM parsed_events",
                  "unsafe-function", 2)
    assert message.endswith("calls Java methods")


@pytest.mark.parametrize("config", [
    "expectations=[{'name': 'x', 'expr': \"reflect('java.lang.System', 'getenv', 'K') IS NULL\"}]",
    "materialized='merge', unique_key='eventId', "
    "merge_update={'n': \"java_method('java.lang.System', 'getenv', 'K')\"}",
    "materialized='merge', unique_key='eventId', "
    "merge_condition=\"reflect('java.lang.System', 'getenv', 'K') IS NULL\"",
])
def test_java_calls_in_config_fragments_are_refused(tmp_path: Path, config: str) -> None:
    sql = f"-- a model\n{{{{ config({config}) }}}}\nSELECT eventId, 1 AS n FROM parsed_events"
    assert "calls Java methods" in one(tmp_path, sql, "unsafe-function", 2)


@pytest.mark.parametrize("sql, line", [
    ("SELECT * FROM IDENTIFIER('text.`/etc/passwd`')", 1),
    ("SELECT eventId FROM parsed_events\nWHERE eventId IN (\n  SELECT value FROM "
     "IDENTIFIER('text.`/etc/passwd`'))", 3),
    ("SELECT e.eventId FROM parsed_events e\nJOIN IDENTIFIER('text.`/etc/passwd`') p ON true",
     2),
    ("SELECT IDENTIFIER('eventId') FROM parsed_events", 1),
])
def test_identifier_is_refused(tmp_path: Path, sql: str, line: int) -> None:
    assert "IDENTIFIER" in one(tmp_path, sql, "unsafe-table", line)


@pytest.mark.parametrize("table", ["text.`/etc/passwd`", "parquet.`/data/x`",
                                   "delta.`s3://bucket/t`", "json.`/tmp/x.json`",
                                   "prod.customers", "spark_catalog.default.t"])
def test_tables_by_path_or_catalog_name_are_refused(tmp_path: Path, table: str) -> None:
    sql = f"SELECT e.eventId\nFROM parsed_events e\nJOIN {table} p ON true"
    assert "never by path" in one(tmp_path, sql, "unsafe-table", 3)


def test_read_files_is_refused(tmp_path: Path) -> None:
    assert one(tmp_path, "SELECT *\nFROM read_files('/etc/hostname')", "unsafe-function", 2) \
        == "read_files reads files by path"


@pytest.mark.parametrize("sql", ["SELECT * FROM range(1000000000000)",
                                 "SELECT * FROM range({{ 10 ** 12 }})",
                                 "SELECT * FROM range(0, (SELECT count(*) FROM parsed_events))",
                                 "SELECT id FROM range(0, 10, 0)"])
def test_unbounded_range_is_refused(tmp_path: Path, sql: str) -> None:
    assert "literal integer bounds" in one(tmp_path, sql, "unsafe-function", 1)


def test_bounded_range_and_generators_over_data_are_allowed(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "hours": "SELECT id AS hour FROM range(0, 24)",
        "ex": "SELECT eventId, e.errorCode FROM parsed_events LATERAL VIEW explode(errors) t AS e",
        "hint": "SELECT /*+ REPARTITION(4) */ eventId FROM parsed_events"})
    assert [v for v in result.violations if v.rule in GUARD_RULES] == []


@pytest.mark.parametrize("sql", [
    "DROP TABLE request_logs",
    "INSERT OVERWRITE DIRECTORY '/tmp/out' SELECT eventId FROM parsed_events",
    "CREATE TEMPORARY FUNCTION f AS 'x.Y' USING JAR 'https://example.org/x.jar'",
    "SET spark.sql.runSQLOnFiles=true",
    "ADD JAR '/tmp/x.jar'",
    "CACHE TABLE t AS SELECT eventId FROM parsed_events",
])
def test_commands_are_refused(tmp_path: Path, sql: str) -> None:
    assert "not" in one(tmp_path, sql, "not-a-query", 1)


@pytest.mark.parametrize("rule", sorted(GUARD_RULES))
@pytest.mark.parametrize("level", ["off", "warn"])
def test_guard_rules_cannot_be_switched_off(rule: str, level: str) -> None:
    with pytest.raises(ConfigError) as e:
        check_lint_config(LintConfig.model_validate({"rules": {rule: level}}))
    assert e.value.exit_code == 2 and f"lint.rules.{rule}" in e.value.message


# -- the allowlist's categories -------------------------------------------------------------

@pytest.mark.parametrize("call, why", [
    ("from_protobuf(CAST(eventId AS BINARY), 'M', '/etc/x.desc')", "descriptor file by path"),
    ("python_worker_logs()", "log files"),
    ("my_catalog_udf(eventId)", "not a Spark SQL built-in"),
    ("evil_db.upper(eventId)", "names a function in a catalog"),
    ("`reflect`('java.lang.System', 'getenv', 'K')", "calls Java methods"),
])
def test_each_denied_category(tmp_path: Path, call: str, why: str) -> None:
    assert why in one(tmp_path, f"SELECT eventId,\n  {call} AS v\nFROM parsed_events",
                      "unsafe-function", 2)


@pytest.mark.parametrize("value", ["(-30)", "(eventId + 1)"])
def test_interval_of_a_parenthesised_value_is_a_call_the_guard_refuses(tmp_path: Path,
                                                                       value: str) -> None:
    # Spark's grammar reads INTERVAL (v) DAY as the call interval(v) aliased DAY (an interval
    # literal's value is a signed number or string), which its run-time guard refuses
    message = one(tmp_path, f"SELECT eventId,\n  INTERVAL {value} DAY\nFROM parsed_events",
                  "unsafe-function", 2)
    assert "not a Spark SQL built-in" in message
    literal = lint_files(tmp_path, {"m": "SELECT INTERVAL -30 DAY AS d, INTERVAL '1' YEAR "
                                         "-2 MONTHS AS i FROM parsed_events"})
    assert [v for v in literal.violations if v.severity == "error"] == []


def test_current_functions_and_input_file_name_are_allowed(tmp_path: Path) -> None:
    sql = ("SELECT eventId, current_user() AS u, current_timestamp() AS t, "
           "input_file_name() AS f, current_database() AS d FROM parsed_events")
    result = lint_files(tmp_path, {"m": sql})
    assert [v for v in result.violations if v.rule in GUARD_RULES] == []


def test_a_cte_of_another_subquery_does_not_hide_a_catalog_table(tmp_path: Path) -> None:
    sql = ("SELECT * FROM (WITH secrets AS (SELECT eventId FROM parsed_events)\n"
           "               SELECT * FROM secrets) a,\n"
           "     secrets")
    assert one(tmp_path, sql, "unknown-table", 3) == "unknown table 'secrets'"
    self_ref = "WITH t AS (SELECT * FROM t)\nSELECT * FROM t"
    assert one(tmp_path / "b", self_ref, "unknown-table", 1) == "unknown table 't'"


@pytest.mark.parametrize("fragment", ["'1; DROP TABLE x'", "'SELECT 1'",
                                      "'(SELECT max(n) FROM parsed_events) > 0'"])
def test_config_fragments_are_one_expression_reading_no_table(tmp_path: Path,
                                                              fragment: str) -> None:
    sql = ("{{ config(materialized='merge', unique_key='eventId', merge_condition="
           f"{fragment}) }}}}\nSELECT eventId, 1 AS n FROM parsed_events")
    result = lint_files(tmp_path, {"m": sql})
    assert found(result) & {("not-a-query", "models/m.sql", 1),
                            ("unsafe-table", "models/m.sql", 1)}, result.violations


def test_the_registry_is_this_sparks_and_sqlglot_parses_denied_names_as_calls() -> None:
    import pyspark

    data = json.loads(FUNCTIONS.read_text())
    assert data["spark_version"] == pyspark.__version__, \
        "regenerate runner/lint/spark_types/functions.json: python scripts/spark_functions.py"
    denied = [n for n, f in data["functions"].items() if f["category"] != "allowed"]
    assert {"reflect", "java_method", "try_reflect", "read_files", "range"} <= set(denied)
    for name in denied:  # a typed node would bypass the name check (allowlist.py)
        node = sqlglot.parse_one(f"SELECT {name}(1)", read="spark").expressions[0]
        assert isinstance(node, exp.Anonymous), name


# -- through the CLI ------------------------------------------------------------------------

def test_compile_exits_1_naming_rule_file_and_line(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId,\n"
                                    "  reflect('java.lang.System', 'getenv', 'HOME') AS h\n"
                                    "FROM parsed_events\n"})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 1, result.output
    assert "models/m.sql:2:" in result.output
    assert "[unsafe-function] reflect calls Java methods" in result.output


def test_compile_exits_2_when_project_yml_turns_a_guard_off(tmp_path: Path) -> None:
    yml = BASE_YML + "lint:\n  rules:\n    syntax: off\n    single-select: off\n"
    root = write_project(tmp_path, {"models/m.sql": "DROP TABLE x"}, project_yml=yml)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 2, result.output
    assert "lint.rules.syntax" in result.output


# -- Spark settings that load code need a deployment's opt-in ------------------------------

@pytest.mark.parametrize("key", ["spark.jars", "spark.jars.packages", "spark.sql.extensions",
                                 "spark.driver.extraClassPath", "spark.executor.extraJavaOptions",
                                 "spark.submit.pyFiles", "spark.sql.runSQLOnFiles",
                                 "spark.plugins", "spark.executorEnv.LD_PRELOAD",
                                 "spark.pyspark.python", "spark.sql.catalog.evil"])
def test_spark_settings_that_load_code_exit_2(tmp_path: Path, key: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    yml = BASE_YML + f"spark:\n  conf:\n    {key}: 'x'\n"
    assert yml != BASE_YML
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId FROM parsed_events"},
                         project_yml=yml)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 2, result.output
    line = yml.splitlines().index(f"    {key}: 'x'") + 1
    assert f"project.yml:{line}: spark.conf.{key}:" in result.output
    assert "RUNNER_ALLOW_SPARK_CONF" in result.output

    monkeypatch.setenv("RUNNER_ALLOW_SPARK_CONF", f"spark.ui.port,{key}")
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output


def test_ordinary_spark_settings_need_no_opt_in(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    yml = BASE_YML + ("spark:\n  conf:\n"
                           "    spark.sql.shuffle.partitions: 4\n"
                           "    spark.sql.ansi.enabled: true\n")
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId FROM parsed_events"},
                         project_yml=yml)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output


# -- secrets: env_var() in models reads only public names -----------------------------------

def test_env_var_of_a_name_without_a_public_prefix_is_a_model_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("PUBLIC_REGION", "eu")
    yml = BASE_YML + "env_var_prefixes: [PUBLIC_]\n"
    root = write_project(tmp_path, {
        "models/m.sql": "SELECT eventId,\n  '{{ env_var('SOME_TOKEN') }}' AS t FROM parsed_events",
        "models/r.sql": "SELECT * FROM {{ ref(env_var('SOME_TOKEN')) }}",
        "models/ok.sql": "SELECT eventId, '{{ env_var('PUBLIC_REGION') }}' AS region "
                         "FROM parsed_events"}, project_yml=yml)
    for fmt in ("text", "json", "github"):
        result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root), "--format", fmt])
        assert result.exit_code == 1, result.output
        assert "s3cr3t-value" not in result.output
        assert "SOME_TOKEN" in result.output
    assert "models/m.sql:2:" in CliRunner().invoke(
        cli, ["compile", "--project-dir", str(root)]).output
    assert "'eu' AS region" in (root / "target" / "compiled" / "ok.sql").read_text()
    leaked = [p for p in (root / "target").rglob("*") if p.is_file()
              and "s3cr3t-value" in p.read_text(errors="replace")]
    assert leaked == []


def test_without_declared_prefixes_models_read_no_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGION", "eu")
    result = lint_or_error(tmp_path, "SELECT '{{ env_var('REGION', 'x') }}' AS r")
    assert "env_var('REGION')" in result and "none declared" in result


def lint_or_error(tmp_path: Path, sql: str) -> str:
    root = write_project(tmp_path, {"models/m.sql": sql})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 1, result.output
    return result.output


@pytest.mark.parametrize("prefix", ["", "SECRET_", "API_TOKEN_"])
def test_a_public_prefix_may_not_name_a_secret(tmp_path: Path, prefix: str) -> None:
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId FROM parsed_events"},
                         project_yml=BASE_YML + f"env_var_prefixes: ['{prefix}']\n")
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 2 and "env_var_prefixes" in result.output, result.output


@pytest.mark.parametrize("key", ["sasl.password", "sasl.jaas.config", "api_secret", "auth_token",
                                 "ssl.key.password", "fs.s3a.access.key", "aws_credentials",
                                 "ssl.keystore.location", "PGPASSWD"])
def test_masking_covers_every_key_naming_a_secret(key: str) -> None:
    from runner.project.secrets import is_secret_name

    assert is_secret_name(key)
    assert not is_secret_name("bootstrap_servers") and not is_secret_name("topic")
