"""Rendering an untrusted model cannot hang compile or exhaust memory: a time budget per model
and a bound on its output end in a model error naming the file."""

from __future__ import annotations

import re
import signal
import time

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.compile.render import RenderBudget, render_models
from runner.project.loader import load_project
from tests.support.projects import write_project

FAST = RenderBudget(seconds=0.5, max_chars=1_000_000)

HANGS = {
    "nested_ranges": "SELECT 1 AS x\n"
                     "{% for i in range(100000) %}{% for j in range(100000) %}"
                     "{{ i }}{% endfor %}{% endfor %}",
    "silent_loops": "{% set xs = range(100000) | list %}\n"
                    "{% for i in xs %}{% for j in xs %}{% endfor %}{% endfor %}SELECT 1 AS x",
    "exponential_macro": "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}"
                         "{% endmacro %}\nSELECT {{ f(60) }} 1 AS x",
}


def _render(tmp_path, model: str, budget: RenderBudget = FAST):
    project = load_project(write_project(tmp_path, {"models/m.sql": model}))
    started = time.monotonic()
    rendered, errors = render_models(project, budget=budget)
    return rendered, errors, time.monotonic() - started


@pytest.mark.parametrize("case", sorted(HANGS))
def test_a_render_that_does_not_end_is_stopped(tmp_path, case: str) -> None:
    rendered, errors, seconds = _render(tmp_path, HANGS[case])
    assert rendered == [] and seconds < 5
    error = errors["m"]
    assert error.path == "models/m.sql" and error.line is not None
    assert re.match(r"rendering (took longer than 0\.5s|produced more than 1,000,000 characters)",
                    error.message), error.message


def test_output_is_bounded(tmp_path) -> None:
    _, errors, seconds = _render(
        tmp_path, "SELECT 1 AS x\n{% for i in range(100000) %}{{ 'x' * 1000 }}\n{% endfor %}")
    assert "more than 1,000,000 characters" in errors["m"].message and seconds < 5


def test_a_huge_string_or_number_is_refused_before_it_is_built(tmp_path) -> None:
    for expr in ("'x' * 10 ** 9", "[1] * 10 ** 9", "2 ** 1000000000"):
        _, errors, seconds = _render(tmp_path / expr.replace(" ", ""), f"SELECT {{{{ {expr} }}}}")
        assert "more than 1,000,000 characters" in errors["m"].message, expr
        assert seconds < 2


def test_endless_recursion_is_a_model_error(tmp_path) -> None:
    _, errors, _ = _render(tmp_path, "{% macro f() %}{{ f() }}{% endmacro %}SELECT {{ f() }}")
    assert "recursion" in errors["m"].message and errors["m"].path == "models/m.sql"


def test_the_budget_leaves_signals_as_they_were(tmp_path) -> None:
    def mine(*_: object) -> None:
        pass

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        _render(tmp_path, "SELECT 1 AS x")
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_compile_of_a_hanging_model_exits_1_naming_the_file(tmp_path) -> None:
    root = write_project(tmp_path, {"models/m.sql": HANGS["nested_ranges"],
                                    "models/ok.sql": "SELECT eventId FROM parsed_events"})
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 1, result.output
    assert re.search(r"models/m\.sql:2: error \[template\] rendering (took longer|produced more)",
                     result.output), result.output
    assert time.monotonic() - started < 30
