"""Budgets for the whole compile: every string-building operation of the sandbox is
refused before it builds past the bound, what a render builds in all is bounded, and parse and
lint are bounded by input size, nesting depth and time. Always a model error naming the model
(exit 1, a JSON document), never MemoryError or RecursionError (exit 3)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.build import compile_project
from runner.cli import cli
from runner.compile.render import RenderBudget, render_models
from runner.project.loader import load_project
from tests.support.projects import write_project

SMALL = RenderBudget(seconds=2.0, max_chars=1_000_000, max_built=5_000_000)
BIG = "{% set s = 'x' * 900000 %}"  # within the bound; each attack below goes past it

ATTACKS = {
    "concat": BIG + "{{ s ~ s }}",
    "plus": BIG + "{{ s + s }}",
    "times": "{{ 'x' * 10 ** 9 }}",
    "center": "{{ 'x'.center(3000000000) }}",
    "center_filter": "{{ 'x' | center(3000000000) }}",
    "ljust": "{{ 'x'.ljust(3000000000) }}",
    "percent": "{{ '%3000000000s' % 'x' }}",
    "percent_star": "{{ '%*s' % (3000000000, 'x') }}",
    "format_method": "{{ '{:>3000000000}'.format('x') }}",
    "format_nested": "{{ '{:>{w}}'.format('x', w=3000000000) }}",
    "format_filter": "{{ '%3000000000s' | format('x') }}",
    "replace": BIG + "{{ s.replace('x', 'yy') }}",
    "replace_filter": BIG + "{{ s | replace('x', 'yy') }}",
    "join": BIG + "{{ ','.join([s, s]) }}",
    "join_filter": BIG + "{{ [s, s] | join(',') }}",
    "indent": "{{ 'a\\nb' | indent(3000000000) }}",
    "batch": "{{ [1] | batch(3000000000, 'x') | list }}",
    "list_doubling": "{% set l = ['x'] %}{% for i in range(40) %}{{ l.extend(l) }}{% endfor %}",
    "built_in_all": BIG + "{% for i in range(10) %}{% set t = s ~ i %}{% endfor %}",
}


@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_string_building_past_the_budget_is_a_model_error(tmp_path: Path, case: str) -> None:
    project = load_project(write_project(
        tmp_path, {"models/m.sql": f"SELECT 1 AS x\n{ATTACKS[case]}\n"}))
    started = time.monotonic()
    rendered, errors = render_models(project, budget=SMALL)
    assert rendered == [] and time.monotonic() - started < 2
    error = errors["m"]
    assert error.path == "models/m.sql" and error.line == 2, (error.path, error.line)
    assert "more than 1,000,000 characters" in error.message \
        or "5,000,000 characters in all" in error.message, error.message


def test_string_operations_within_the_budget_work(tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path, {"models/m.sql": (
        "SELECT {{ ', '.join(['a', 'b']) }} AS x, '{{ 'ab'.replace('a', 'c') }}' AS y,\n"
        "  '{{ '%05d' % 7 }}{{ '{:>3}'.format(1) }}{{ 'q' | center(3) }}' AS z,\n"
        "  '{{ ['a', 'b'] | join('-') }}{{ 'x' ~ 'y' }}{{ 'a' + 'b' }}' AS w FROM parsed_events")}))
    rendered, errors = render_models(project, budget=SMALL)
    assert errors == {}
    assert rendered[0].sql == ("SELECT a, b AS x, 'cb' AS y,\n  '00007  1 q ' AS z,\n"
                               "  'a-bxyab' AS w FROM parsed_events")


def _compile_json(root: Path) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root), "--format", "json"])
    return result.exit_code, json.loads(result.output)


def test_deep_nesting_is_a_model_error_with_a_json_document(tmp_path: Path) -> None:
    deep = "SELECT eventId,\n  " + "(" * 6000 + "1" + ")" * 6000 + " AS x\nFROM parsed_events"
    case = "SELECT " + "CASE WHEN true THEN " * 100 + "1" + " END" * 100 + " AS x"
    root = write_project(tmp_path, {"models/deep.sql": deep, "models/cases.sql": case,
                                    "models/fine.sql": "SELECT eventId FROM parsed_events"})
    code, doc = _compile_json(root)
    assert code == 1 and doc["ok"] is False
    found = {(v["rule"], v["path"], v["line"]) for v in doc["violations"]}  # type: ignore[attr-defined]
    assert found == {("syntax", "models/deep.sql", 2), ("syntax", "models/cases.sql", 1)}


def test_forty_levels_still_lint(tmp_path: Path) -> None:
    sql = "SELECT " + "(" * 40 + "eventId" + ")" * 40 + " AS x FROM parsed_events"
    code, doc = _compile_json(write_project(tmp_path, {"models/m.sql": sql}))
    assert code == 0, doc


def test_sql_too_large_to_lint_is_a_model_error(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId FROM parsed_events\n"
                                    "{% for i in range(200) %}-- {{ 'x' * 9000 }}\n{% endfor %}"})
    result = compile_project(load_project(root), budget=RenderBudget(max_sql_chars=1_000_000))
    assert [(v.rule, v.path, v.line) for v in result.errors] == [("syntax", "models/m.sql", 1)]
    assert "lint parses at most 1,000,000" in result.errors[0].message


def test_lint_time_and_the_total_budget_are_model_errors(tmp_path: Path) -> None:
    union = " UNION ALL ".join(f"SELECT eventId, {i} AS n FROM parsed_events" for i in range(400))
    root = write_project(tmp_path, {"models/big.sql": union,
                                    "models/small.sql": "SELECT eventId FROM parsed_events"})
    project = load_project(root)
    result = compile_project(project, budget=RenderBudget(lint_seconds=0.05))
    assert [(v.rule, v.path) for v in result.errors] == [("budget", "models/big.sql")]
    assert "model big: lint took longer than 0.05s" in result.errors[0].message
    spent = compile_project(project, budget=RenderBudget(total_seconds=0))
    assert spent.failed == ("big", "small")
    assert all("total budget" in v.message for v in spent.errors)
