"""Rendering: ref/config captured from the Jinja calls, sandbox, errors with file and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.compile.render import render_models
from runner.errors import TemplateError
from runner.project.loader import load_project
from tests.support.projects import BASE_YML, REPO_ROOT, write_project

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _render(tmp_path, files, **kw):
    project = load_project(write_project(tmp_path, files, **kw))
    return render_models(project)


def test_example_models_match_golden_files() -> None:
    rendered, errors = render_models(load_project(REPO_ROOT))
    assert errors == {}
    for model in rendered:
        golden = GOLDEN / f"{model.name}.sql"
        if os.environ.get("UPDATE_GOLDEN"):
            golden.write_text(model.sql)
        assert model.sql == golden.read_text(), f"{model.name} differs from {golden}"


def test_ref_and_config_are_captured_from_calls(tmp_path) -> None:
    rendered, errors = _render(tmp_path, {
        "models/base.sql": "SELECT eventId, user.userId AS userId FROM parsed_events",
        "models/per_user.sql": """
            -- a comment mentioning ref('base') is not a dependency
            {{ config(materialized='merge', unique_key='userId',
                      merge_update={'n': 'target.n + source.n'}) }}
            SELECT userId, count(*) AS n FROM {{ ref('base') }} GROUP BY userId
        """,
    })
    assert errors == {}
    per_user = next(m for m in rendered if m.name == "per_user")
    assert per_user.refs == ("base",)
    assert per_user.config.materialized == "merge"
    assert per_user.config.unique_key == ("userId",)
    assert per_user.config.merge_update == {"n": "target.n + source.n"}
    assert per_user.config_line == 2
    assert "FROM base GROUP BY" in per_user.sql


def test_macros_var_and_env_var(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PUBLIC_REGION", "eu")
    rendered, errors = _render(tmp_path, {
        "macros/m.sql": "{% macro slow(col) %}{{ col }} >= {{ var('slow_ms') }}{% endmacro %}",
        "models/a.sql": "SELECT {{ slow('request.latency_ms') }} AS s, "
                        "'{{ env_var('PUBLIC_REGION') }}' AS r, "
                        "'{{ env_var('PUBLIC_NOT_SET_X', 'dflt') }}' AS d FROM parsed_events",
    }, project_yml=BASE_YML + "env_var_prefixes: [PUBLIC_]\n")
    assert errors == {}
    assert rendered[0].sql.strip() == ("SELECT request.latency_ms >= 1000 AS s, 'eu' AS r, "
                                       "'dflt' AS d FROM parsed_events")


@pytest.mark.parametrize("body, line, match", [
    ("SELECT 1\nFROM {{ ref('baes') }}", 2, "unknown model 'baes'.*did you mean 'base'"),
    ("SELECT\n\n{{ var('slow_msec') }}", 3, "undefined var 'slow_msec'.*did you mean 'slow_ms'"),
    ("SELECT {{ nope }}", 1, "undefined name: 'nope' is undefined"),
    ("SELECT {{ env_var('SURELY_NOT_SET_VAR') }}", 1, "SURELY_NOT_SET_VAR"),
    ("SELECT 1\n{% if %}", 2, "template syntax error"),
    ("{{ config(materialized='merge') }}\nSELECT 1", 1, "needs unique_key"),
    ("{{ config(materialised='merge') }}", 1, "unknown key 'materialised'.*did you mean 'materialized'"),
    ("SELECT {{ ''.__class__.__mro__[1].__subclasses__() }}", 1, "sandbox|unsafe"),
])
def test_template_errors_name_file_and_line(tmp_path, body, line, match) -> None:
    rendered, errors = _render(tmp_path, {"models/base.sql": "SELECT 1", "models/bad.sql": body})
    assert [m.name for m in rendered] == ["base"]
    error = errors["bad"]
    assert isinstance(error, TemplateError)
    assert error.path == "models/bad.sql" and error.line == line
    assert pytest.importorskip("re").search(match, str(error)), str(error)


def test_sandbox_refuses_attribute_escapes(tmp_path) -> None:
    for i, body in enumerate([
        "{{ ''.__class__.__mro__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ ref.__globals__ }}",
    ]):
        _, errors = _render(tmp_path / str(i), {"models/bad.sql": body})
        assert "bad" in errors, body


def test_error_inside_macro_names_macro_file(tmp_path) -> None:
    _, errors = _render(tmp_path, {
        "macros/m.sql": "{% macro broken() %}\n{{ var('missing_var') }}\n{% endmacro %}",
        "models/a.sql": "SELECT {{ broken() }}",
    })
    assert errors["a"].path == "macros/m.sql" and errors["a"].line == 2
