"""Generic data tests as dbt writes them (issue 47, item 4), without Spark: the YAML shapes
(config:, arguments:, dbt_utils' prefix), test macros of tests/generic/ checked at compile,
their SQL rendered in the models' sandbox and refused by the guard like a model's."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.build import compile_project
from runner.errors import ConfigError
from runner.model_tests import generic
from runner.model_tests.spec import SpecError, load_specs, parse_model_spec
from runner.project.loader import load_project
from tests.support.projects import write_project

MODEL = "SELECT eventId, request.latency_ms AS ms, user.country AS country FROM parsed_events"


def _project(tmp_path: Path, yml: str, macro: str | None = None):
    files = {"models/m.sql": MODEL, "models/schema.yml": yml}
    if macro is not None:
        files["tests/generic/t.sql"] = macro
    return load_project(write_project(tmp_path / "p", files))


def test_dbt_shapes_parse_to_one_test() -> None:
    spec = parse_model_spec("""
columns:
  - name: ms
    tests:
      - unique: {config: {where: "ms > 0", severity: WARN}}
      - accepted_values: {arguments: {values: [1, 2]}, config: {severity: warn}}
      - dbt_utils.accepted_range: {min_value: 0, inclusive: false}
      - not_null: {config: {enabled: false}}
data_tests:
  - dbt_utils.expression_is_true: {expression: "ms >= 0", name: ms_positive}
""", model="m", path="models/m.yml")
    tests = spec.all_data_tests()
    assert [(t.kind, t.column, t.sql) for t in tests] == [
        ("expression_is_true", None, True), ("unique", "ms", True),
        ("accepted_values", "ms", False), ("accepted_range", "ms", True)]
    assert tests[1].args.where == "ms > 0" and tests[1].args.severity == "warn"
    assert tests[2].args.values == (1, 2) and tests[2].args.severity == "warn"


@pytest.mark.parametrize(("test", "message"), [
    ("- unique: {config: {sevrity: warn}}", "unique.config: unknown key 'sevrity' (did you "
                                            "mean 'severity'?)"),
    ("- accepted_values: {values: [1], arguments: {values: [2]}}", "'values' is given twice"),
    ("- dbt_utils.accepted_range: {inclusive: true}", "give min_value, max_value or both"),
    ("- positiv", "unknown data test 'positiv' (did you mean 'positive'?)"),
])
def test_wrong_shapes_name_the_line(tmp_path: Path, test: str, message: str) -> None:
    yml = f"models:\n  - name: m\n    columns:\n      - name: ms\n        data_tests:\n          {test}\n"
    project = _project(tmp_path, yml, "{% test positive(model, column_name) %}\nSELECT 1\n{% endtest %}")
    with pytest.raises(SpecError) as info:
        load_specs(project)
    assert "models/schema.yml:6" in str(info.value) and message in str(info.value)


def test_compile_checks_a_macros_arguments(tmp_path: Path) -> None:
    project = _project(tmp_path, """
models:
  - name: m
    columns:
      - name: ms
        data_tests:
          - positive: {allow_zro: true}
""", "{% test positive(model, column_name, allow_zero=false) %}\nSELECT 1\n{% endtest %}")
    with pytest.raises(SpecError) as info:
        compile_project(project)
    assert "models/schema.yml:6" in str(info.value)
    assert "takes no argument 'allow_zro' (did you mean 'allow_zero'?)" in str(info.value)


def test_a_macro_renders_with_where_and_its_arguments(tmp_path: Path) -> None:
    project = _project(tmp_path, """
models:
  - name: m
    columns:
      - name: ms
        data_tests:
          - positive: {allow_zero: true, config: {where: "country = 'IE'"}}
""", """{% test positive(model, column_name, allow_zero=false) %}
SELECT * FROM {{ model }} WHERE {{ column_name }} {{ '<' if allow_zero else '<=' }} 0
{% endtest %}""")
    test = load_specs(project)["m"].all_data_tests()[0]
    rendered = generic.test_sql(project, test, model="m", key=(), macros=generic.test_macros(project))
    assert " ".join(rendered.sql.split()) == (
        "SELECT * FROM (SELECT * FROM m WHERE country = 'IE') AS dbt_subquery WHERE ms < 0")
    assert rendered.models == ("m",)


@pytest.mark.parametrize(("body", "message"), [
    ("SELECT * FROM parquet.`/etc/passwd`", "refused"),
    ("SELECT reflect('java.lang.Runtime', 'getRuntime') FROM {{ model }}", "reflect"),
    ("SELECT * FROM other_table", "unknown table 'other_table'"),
    ("DROP TABLE {{ model }}", "one SELECT of the failing rows"),
    ("SELECT 1; SELECT 2", "one SELECT of the failing rows"),
    ("{{ ''.__class__.__mro__ }}", "sandbox"),
])
def test_a_hostile_macro_is_refused_before_spark(tmp_path: Path, body: str, message: str) -> None:
    project = _project(tmp_path, """
models:
  - name: m
    data_tests: [evil]
""", "{% test evil(model) %}\n" + body + "\n{% endtest %}")
    test = load_specs(project)["m"].all_data_tests()[0]
    with pytest.raises(generic.TestSqlError) as info:
        generic.test_sql(project, test, model="m", key=(), macros=generic.test_macros(project))
    assert message in str(info.value)


def test_a_macro_may_not_take_a_builtins_name(tmp_path: Path) -> None:
    project = _project(tmp_path, "models: []\n",
                       "{% test unique(model, column_name) %}\nSELECT 1\n{% endtest %}")
    with pytest.raises(ConfigError, match="tests/generic/t.sql:1: test macro 'unique' has the "
                                          "name of a built-in test"):
        generic.test_macros(project)


def test_dbt_unit_tests_join_their_models_spec(tmp_path: Path) -> None:
    project = _project(tmp_path, """
version: 2
unit_tests:
  - name: copies
    model: m
    given:
      - input: parsed_events
        rows: [{eventId: e1, timestamp: "2026-01-01T00:00:00Z"}]
    expect:
      format: csv
      rows: |
        eventId,ms
        e1,
""")
    case = load_specs(project)["m"].unit_tests[0]
    assert case.origin == "models/schema.yml:3"
    assert case.given.events == ({"eventId": "e1", "timestamp": "2026-01-01T00:00:00Z"},)
    assert case.expect.rows == ({"eventId": "e1", "ms": None},)


@pytest.mark.parametrize(("given", "message"), [
    ("- {input: \"ref('nope')\", rows: []}", "given[0]: input is parsed_events, this"),
    ("- {input: parsed_events, format: sql, rows: 'select 1'}", "format: sql is dbt's"),
    ("- {input: parsed_events, rowz: []}", "unknown key 'rowz'"),
])
def test_dbt_unit_test_errors_name_the_entry(tmp_path: Path, given: str, message: str) -> None:
    project = _project(tmp_path, f"""
unit_tests:
  - name: t
    model: m
    given:
      {given}
    expect: {{rows: []}}
""")
    with pytest.raises(SpecError) as info:
        load_specs(project)
    assert "models/schema.yml:2: unit_tests[0]" in str(info.value)
    assert message in str(info.value)
