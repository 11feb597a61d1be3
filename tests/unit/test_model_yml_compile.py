"""`runner compile` validates every models/**/*.yml: invalid YAML, unknown
keys, a documented column the model does not output; dbt's layout (a `models:` list in any yml
file, `tests:` as the older spelling of `data_tests:`) is accepted. A yml problem is a
configuration error (exit 2) in compile, test and docs alike. No Spark."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from runner.build import compile_project
from runner.cli import cli
from runner.docs_site import build_site
from runner.model_tests import load_specs
from runner.project.loader import load_project
from tests.support.projects import write_project

REQUESTS = """
SELECT eventId, request.endpoint AS endpoint, request.status_code AS status
FROM parsed_events
"""
SLOW = "SELECT eventId, request.latency_ms AS latency_ms FROM parsed_events\n"
MODELS = {"models/requests.sql": REQUESTS, "models/slow.sql": SLOW}


def _run(root: Path, *args: str):
    return CliRunner().invoke(cli, [*args, "--project-dir", str(root)])


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_project(tmp_path / "p", {**MODELS, **files})


# -- errors compile used to pass ------------------------------------------------------------

def test_invalid_yaml_is_a_config_error_at_compile(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/requests.yml": "description: x\ncolumns: [\n  - a\n"})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "models/requests.yml:" in result.output and "invalid YAML" in result.output


def test_unknown_key_is_a_config_error_at_compile(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/requests.yml": "columns:\n  - nam: eventId\n"})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert ("models/requests.yml:2: columns[0]: unknown key 'nam' (did you mean 'name'?)"
            in result.output)


def test_a_documented_column_the_model_does_not_output(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/requests.yml": """
        description: One row per request.
        columns:
          - name: eventId
            description: The event's id.
          - name: stauts
            description: The HTTP status.
        """})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert ("models/requests.yml:5: columns[1]: model requests has no output column 'stauts' "
            "(did you mean 'status'?); it outputs: eventId, endpoint, status") in result.output


def test_every_problem_of_every_file_is_reported(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "models/requests.yml": "descripton: x\ncolumns:\n  - name: eventId\n    tset: [a]\n",
        "models/slow.yml": "columns:\n  - name: latency\n"})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    out = result.output
    assert "models/requests.yml:1: unknown key 'descripton' (did you mean 'description'?)" in out
    assert "models/requests.yml:4: columns[0]: unknown key 'tset'" in out
    assert "models/slow.yml:2: columns[0]: model slow has no output column 'latency'" in out


def test_yml_errors_in_json_format_are_config_violations(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/slow.yml": "columns:\n  - name: latency\n"})
    result = _run(root, "compile", "--format", "json")
    assert result.exit_code == 2, result.output
    doc = json.loads(result.output)
    [v] = doc["violations"]
    assert (v["rule"], v["path"], v["line"]) == ("config", "models/slow.yml", 2)
    assert "did you mean 'latency_ms'" in v["message"]


def test_test_and_docs_agree_with_compile(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/slow.yml": "columns:\n  - name: latency\n"})
    for command in (("test", "--kind", "data"), ("docs",)):
        result = _run(root, *command)
        assert result.exit_code == 2, (command, result.output)
        assert "models/slow.yml:2: columns[0]: model slow has no output column 'latency'" \
            in result.output


def test_a_yml_named_after_no_model_says_how_to_write_a_models_list(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/schema.yml": "description: x\n"})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "models/schema.yml" in result.output and "models:" in result.output


# -- dbt's layout -----------------------------------------------------------------------------

SCHEMA_YML = """
version: 2
models:
  - name: requests
    description: One row per request.
    columns:
      - name: eventId
        description: The event's id.
        tests: [not_null, unique]
      - name: status
        description: The HTTP status.
        data_tests:
          - accepted_values: {values: [200, 404]}
  - name: slow
    description: Latency per event.
    tests:
      - unique: {columns: [eventId]}
    columns:
      - name: latency_ms
        description: Milliseconds.
"""


def test_dbt_schema_yml_with_a_models_list(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/schema.yml": SCHEMA_YML})
    result = _run(root, "compile")
    assert result.exit_code == 0, result.output
    specs = load_specs(load_project(root))
    assert sorted(specs) == ["requests", "slow"]
    assert specs["requests"].description == "One row per request."
    assert [(t.kind, t.column) for t in specs["requests"].all_data_tests()] == [
        ("not_null", "eventId"), ("unique", "eventId"), ("accepted_values", "status")]
    assert [(t.kind, t.column) for t in specs["slow"].all_data_tests()] == [("unique", None)]
    assert specs["slow"].path == "models/schema.yml"
    assert specs["slow"].line_of("columns", 0) == 18
    assert specs["requests"].line_of("columns", 0, "data_tests") == 8  # spelled tests:


def test_dbt_layout_descriptions_reach_the_docs(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/schema.yml": SCHEMA_YML})
    project = load_project(root)
    site = build_site(project, compile_project(project).plan)
    page = (site.index.parent / "models" / "slow.html").read_text()
    assert "Latency per event." in page and "Milliseconds." in page
    page = (site.index.parent / "models" / "requests.html").read_text()
    assert "The HTTP status." in page and "not_null" in page


def test_models_list_errors_name_the_entry_and_line(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/schema.yml": """
        models:
          - name: requests
            columns:
              - name: eventId
          - name: slwo
            description: x
          - name: slow
            columns:
              - name: latency_ms
                tests: [not_nul]
        """})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    out = result.output
    assert "models/schema.yml:5: models[1]: no model 'slwo' (did you mean 'slow'?)" in out
    assert ("models/schema.yml:10: models[2].columns[0].tests[0]: unknown data test 'not_nul' "
            "(did you mean 'not_null'?)") in out


def test_a_model_described_twice_is_an_error(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "models/requests.yml": "description: one\n",
        "models/schema.yml": "models:\n  - name: requests\n    description: two\n"})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "model 'requests' is described twice" in result.output
    assert "models/requests.yml" in result.output and "models/schema.yml:2" in result.output


def test_tests_and_data_tests_together_is_an_error(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/requests.yml": """
        columns:
          - name: eventId
            tests: [not_null]
            data_tests: [unique]
        """})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "models/requests.yml:2: columns[0]: " in result.output
    assert "tests" in result.output and "data_tests" in result.output


def test_a_models_list_next_to_sources_and_a_stray_top_level_key(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models/schema.yml": """
        version: 2
        models:
          - name: slow
        sources: []
        descripton: x
        """})
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "models/schema.yml:5: unknown key 'descripton'" in result.output


def test_a_models_list_in_a_sub_folder(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {
        "models/staging/requests.sql": REQUESTS, "models/slow.sql": SLOW,
        "models/staging/_models.yml": "models:\n  - name: requests\n    description: d\n"
                                      "  - name: slow\n    description: e\n"})
    assert _run(root, "compile").exit_code == 0
    specs = load_specs(load_project(root))
    assert (specs["requests"].description, specs["slow"].description) == ("d", "e")


# -- runner docs never drops a description silently ------------------------------------------

def test_docs_keep_documented_columns_lint_could_not_infer(tmp_path: Path) -> None:
    """A model whose output columns lint does not know is checked for shape only; its
    documented columns still reach its page."""
    import dataclasses

    root = _project(tmp_path, {"models/slow.yml": "columns:\n  - name: latency_ms\n"
                                                  "    description: Milliseconds.\n"})
    project = load_project(root)
    plan = compile_project(project).plan
    plan = dataclasses.replace(plan, steps=tuple(
        dataclasses.replace(s, columns=()) if s.name == "slow" else s for s in plan.steps))
    site = build_site(project, plan)
    page = (site.index.parent / "models" / "slow.html").read_text()
    assert "latency_ms" in page and "Milliseconds." in page


def test_docs_match_seed_column_descriptions_in_any_case(tmp_path: Path) -> None:
    root = _project(tmp_path, {
        "seeds/owners.csv": "endpoint,team\n/cart,shop\n",
        "seeds/seeds.yml": "seeds:\n  - name: owners\n    columns:\n"
                           "      - {name: TEAM, data_type: string, description: Owning team.}\n",
        "models/owned.sql": "SELECT e.eventId, o.team FROM parsed_events e "
                            "LEFT JOIN {{ ref('owners') }} o ON o.endpoint = e.request.endpoint\n"})
    project = load_project(root)
    site = build_site(project, compile_project(project).plan)
    assert "Owning team." in site.index.read_text()


def test_a_model_whose_columns_lint_knows_only_in_part_is_not_refused(tmp_path) -> None:
    """json_tuple's outputs (c0, c1) are Spark's names lint cannot see: the model's shape is
    open, so a documented column is never called missing (compile and `runner test` agree)."""
    from runner.build import compile_project
    from runner.model_tests.suite import collect_suite
    from runner.project.loader import load_project
    from tests.support.projects import write_project

    root = write_project(tmp_path, {
        "models/m.sql": "SELECT eventId, e.* FROM parsed_events "
                        "LATERAL VIEW json_tuple('{}', 'a', 'b') e",
        "models/m.yml": "columns:\n  - name: eventId\n    description: id\n"
                        "  - name: c0\n    description: first\n"})
    project = load_project(root)
    result = compile_project(project)
    assert result.ok, result.violations
    assert result.plan.partial == frozenset({"m"})
    collect_suite(project, result.plan, kind="unit")  # no SpecError
