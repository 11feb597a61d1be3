"""Model unit tests (`runner test`): YAML schema and collection without Spark; the real batch
path on the shared SparkSession for running them (few cases, one run each)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.build import compile_project
from runner.cli import cli
from runner.model_tests import SpecError, collect_suite, result_lines, run_suite
from runner.model_tests.spec import parse_model_spec
from runner.project.loader import load_project

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ae" / "shop"


def _shop(tmp_path: Path, files: dict[str, str] | None = None, *, engine: str = "rs"):
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("target", "wh", "cp", "logs"))
    yml = root / "project.yml"
    yml.write_text(yml.read_text().replace("  engine: rs\n", f"  engine: {engine}\n"))
    for rel, text in (files or {}).items():
        (root / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    project = load_project(root)
    return project, compile_project(project).plan


# -- the YAML schema (no Spark) -----------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("unit_tests:\n  - name: t\n    givn: {}\n    expect: {rows: []}\n",
     "models/m.yml:3: unit_tests[0]: unknown key 'givn' (did you mean 'given'?)"),
    ("columns:\n  - name: a\n    data_tests: [not_null, uniqe]\n",
     "models/m.yml:3: columns[0].data_tests[1]: unknown data test 'uniqe' "
     "(did you mean 'unique'?)"),
    ("columns:\n  - name: a\n    data_tests:\n      - accepted_values: {vals: [1]}\n",
     "models/m.yml:4: columns[0].data_tests[0]: accepted_values: missing required key 'values'"),
    ("unit_tests:\n  - name: t\n    given: {events: [3]}\n    expect: {rows: []}\n",
     "models/m.yml:3: unit_tests[0].given.events[0]: an event is a JSON object (a mapping) or a "
     "raw line (a string); got int 3"),
    ("descripton: x\n", "models/m.yml:1: unknown key 'descripton' (did you mean 'description'?)"),
    ("data_tests: [not_null]\n", "models/m.yml:1: data_tests: model-level data_tests may hold "
                                  "expression_is_true, unique, unique_combination_of_columns and "
                                  "test macros (got 'not_null')"),
    ("unit_tests:\n  - name: t\n    given: {}\n    expect: {rows: [], dead_letter: []}\n",
     "unit_tests[0].expect: unknown key 'dead_letter' (did you mean 'dead_letters'?)"),
])
def test_yaml_errors_name_file_line_and_key(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_model_spec(text, model="m", path="models/m.yml")
    assert message in str(info.value)


def test_collect_selects_like_compile_and_checks_names(tmp_path: Path) -> None:
    project, plan = _shop(tmp_path)
    names = lambda suite: [f"{s.model}.{t.name}" for s, t in suite.unit_cases]  # noqa: E731
    assert names(collect_suite(project, plan)) == [
        "requests.copies_fields", "requests.expectations_quarantine_and_drop",
        "requests.dead_letters_in_input_order", "endpoint_stats.accumulates_onto_prior_rows"]
    assert names(collect_suite(project, plan, select=["endpoint_stats"])) == [
        "endpoint_stats.accumulates_onto_prior_rows"]
    assert len(names(collect_suite(project, plan, select=["+endpoint_stats"]))) == 4
    assert len(names(collect_suite(project, plan, select=["requests+"]))) == 4
    assert names(collect_suite(project, plan, select=["tag:stats"], kind="data")) == []
    data = collect_suite(project, plan, select=["tag:stats"], kind="data").data_cases
    assert [(t.kind, t.column) for _, t in data] == [
        ("unique", None), ("not_null", "endpoint"), ("relationships", "endpoint")]

    bad = {"models/endpoint_stats.yml": """
        unit_tests:
          - name: t
            given: {events: []}
            expect:
              rows: [{endpoint: /x, request: 1}]
        """}
    with pytest.raises(SpecError) as info:  # compile checks the yml (test and docs too)
        _shop(tmp_path / "bad", bad)
    assert str(info.value).startswith("models/endpoint_stats.yml:5: unit_tests[0].expect.rows[0]: "
                                      "model endpoint_stats has no output column 'request' "
                                      "(did you mean 'requests'?)")
    with pytest.raises(SpecError) as info:
        collect_suite(load_project(tmp_path / "bad" / "shop"), plan)
    assert "model endpoint_stats has no output column 'request'" in str(info.value)
    (tmp_path / "bad" / "shop" / "models" / "orphan.yml").write_text("description: x\n")
    with pytest.raises(SpecError, match="no model 'orphan' for this file"):
        collect_suite(load_project(tmp_path / "bad" / "shop"), plan)


def test_cli_exit_codes_without_spark(tmp_path: Path) -> None:
    project, _ = _shop(tmp_path)
    run = CliRunner().invoke
    result = run(cli, ["test", "--project-dir", str(project.root), "--select", "nope"])
    assert result.exit_code == 2 and "no model named 'nope'" in result.output
    (project.root / "models" / "requests.yml").write_text("columns:\n  - nam: x\n")
    result = run(cli, ["test", "--project-dir", str(project.root), "--kind", "data"])
    assert result.exit_code == 2  # a yml problem: configuration (COMMANDS.md)
    assert ("models/requests.yml:2: columns[0]: unknown key 'nam' (did you mean 'name'?)"
            in result.output)


# -- running them through the batch path (shared SparkSession) ----------------------------

@pytest.mark.spark
def test_fixture_unit_tests_pass(tmp_path: Path, spark, delta_engine) -> None:
    """Offsets to UTC, blank lines skipped, unquoted YAML timestamps, dead letters in input
    order, expectations (quarantine, drop), a ref chain, and an accumulating merge onto prior
    rows; through each engine's writers (scratch tables)."""
    project, plan = _shop(tmp_path, engine=delta_engine)
    summary = run_suite(collect_suite(project, plan, kind="unit"), spark=spark)
    report = "\n".join(line for r in summary.results for line in result_lines(r))
    assert summary.ok and summary.count("pass") == 4, report


FAILING = {"models/endpoint_stats.yml": """
    unit_tests:
      - name: wrong_total
        given:
          prior_rows: [{endpoint: /cart, requests: 10, errors: 1}]
          events:
            - {eventId: e1, timestamp: "2026-01-02T00:00:00Z", request: {endpoint: /cart, status_code: 200}}
        expect:
          rows: [{endpoint: /cart, requests: 12}]
      - name: bad_prior_row
        given:
          prior_rows: [{endpoint: /cart, requests: many}]
        expect:
          rows: []
    """, "models/requests.yml": """
    unit_tests:
      - name: surprise_dead_letter
        given:
          events:
            - {eventId: a, timestamp: "2026-01-01T00:00:00Z"}
            - {eventId: b, timestamp: "yesterday"}
        expect:
          rows: [{eventId: a}]
      - name: bad_expected_value
        given:
          events: []
        expect:
          rows: [{eventId: a, latency_ms: "12 ms"}]
    """}


@pytest.mark.spark
def test_failures_show_a_row_diff_and_bad_test_data_is_an_error(tmp_path: Path, spark) -> None:
    project, plan = _shop(tmp_path, FAILING)
    results = {r.name: r for r in run_suite(collect_suite(project, plan, kind="unit"),
                                           spark=spark).results}
    wrong = results["wrong_total"]
    assert wrong.status == "fail" and wrong.where == "models/endpoint_stats.yml:2"
    assert wrong.details == ("expected 1 row, got 1: 1 missing (-), 1 unexpected (+)",
                             "   endpoint  requests",
                             '-  "/cart"   12',
                             '+  "/cart"   11')
    bad_prior = results["bad_prior_row"]
    assert bad_prior.status == "error"
    assert bad_prior.message.startswith("given.prior_rows[0] does not fit the model's output "
                                        'types: column requests: expected BIGINT, got "many"')
    surprise = results["surprise_dead_letter"]
    assert surprise.status == "error"
    assert surprise.message.startswith("given.events[1] was dead-lettered: field timestamp: "
                                       'expected TIMESTAMP, got "yesterday"')
    assert "expect.dead_letters" in surprise.message
    assert results["bad_expected_value"].status == "error"
    assert "expect.rows[0] does not fit the model's output types: column latency_ms: " \
           "expected INT" in results["bad_expected_value"].message
