"""Error positions name the model file's own line and column (README: "names the file, line,
column and offending name"), not the rendered SQL's: after Jinja loops, multi-line tags and
refs, and inside macros, where the call site, the macro's file and its line are named."""

from __future__ import annotations

from pathlib import Path

from runner.build import compile_project
from runner.project.loader import load_project
from tests.support.projects import EXAMPLE_FILES, write_project

YML = """\
name: positions
source:
  type: files
  path: data
schema: >-
  eventId STRING NOT NULL, timestamp TIMESTAMP NOT NULL,
  user STRUCT<userId: STRING, country: STRING>,
  request STRUCT<endpoint: STRING, method: STRING, latency_ms: INT, status_code: INT>
"""
MACROS = {k: v for k, v in EXAMPLE_FILES.items() if k.startswith("macros/")}


def _errors(tmp_path: Path, model: str, *, name: str = "m") -> list[tuple]:
    files = {**MACROS, f"models/{name}.sql": model,
             "models/base.sql": "SELECT eventId, user.userId AS userId FROM parsed_events\n"}
    project = load_project(write_project(tmp_path, files, project_yml=YML))
    return [(v.rule, v.path, v.line, v.column, v.message)
            for v in compile_project(project).violations if v.path == f"models/{name}.sql"]


def test_error_after_a_jinja_loop_is_on_its_own_line(tmp_path: Path) -> None:
    model = ("SELECT\n"
             "{% for c in ['a','b'] %}\n"
             "  '{{ c }}' AS c{{ loop.index }},\n"
             "{% endfor %}\n"
             "  eventId,\n"
             "  reqest.method AS method\n"
             "FROM parsed_events\n")
    assert _errors(tmp_path, model) == [
        ("unknown-column", "models/m.sql", 6, 3,
         "unknown column 'reqest' (did you mean 'request'?)")]


def test_error_after_a_multi_line_config_and_a_ref(tmp_path: Path) -> None:
    model = ("{{ config(materialized='append',\n"
             "          tags=['x']) }}\n"
             "SELECT b.eventId, b.userid2 FROM {{ ref('base') }} b WHERE b.nope = 1\n")
    errors = _errors(tmp_path, model)
    assert [(r, line, col) for r, _, line, col, _ in errors] == [
        ("unknown-column", 3, 21), ("unknown-column", 3, 62)]


def test_error_inside_a_macro_names_the_call_and_the_macro(tmp_path: Path) -> None:
    model = ("SELECT\n"
             "  eventId,\n"
             "  {{ status_class('request.status_cod') }} AS status_class\n"
             "FROM parsed_events\n")
    errors = _errors(tmp_path, model)
    assert len(errors) == 1, errors  # the macro uses its argument twice: one error, not two
    rule, path, line, column, message = errors[0]
    assert (rule, path, line, column) == ("unknown-column", "models/m.sql", 3, 3)
    assert message.startswith("unknown field 'status_cod' in struct 'request'")
    assert message.endswith("(in macro status_class, macros/status.sql:2, called at line 3)")


def test_syntax_error_position_after_a_loop(tmp_path: Path) -> None:
    model = ("SELECT\n"
             "{% for i in range(3) %}  {{ i }} AS c{{ i }},\n{% endfor %}"
             "  eventId\n"
             "FROM parsed_events WHERE (eventId = 'x'\n")
    errors = _errors(tmp_path, model)
    assert [(r, line) for r, _, line, _, _ in errors] == [("syntax", 4)]


def test_error_in_a_macro_body_names_the_line_in_the_macro(tmp_path: Path) -> None:
    files = {"macros/filters.sql": "{% macro slow_gets() %}\n"
                                   "request.latency_ms > 1 AND reqest.method = 'GET'\n"
                                   "{% endmacro %}\n",
             "models/m.sql": "SELECT eventId FROM parsed_events\nWHERE {{ slow_gets() }}\n"}
    project = load_project(write_project(tmp_path, files, project_yml=YML))
    [v] = compile_project(project).violations
    assert (v.rule, v.path, v.line, v.column) == ("unknown-column", "models/m.sql", 2, 7)
    assert v.message.endswith("(in macro slow_gets, macros/filters.sql:2, called at line 2)")
