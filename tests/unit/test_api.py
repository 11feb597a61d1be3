"""The public API: a small explicit surface, imported on first use."""

from __future__ import annotations

import doctest
import subprocess
import sys

import runner
from tests.support.projects import REPO_ROOT


def test_public_names_resolve_to_their_home_modules() -> None:
    assert sorted(dir(runner)) == sorted(runner.__all__)
    from runner import compile_project, load_project
    from runner.build import compile_project as home
    assert compile_project is home and load_project.__module__ == "runner.project.loader"
    result = compile_project(load_project(REPO_ROOT))
    assert isinstance(result, runner.CompileResult) and result.ok
    assert [s.name for s in result.plan.steps] == ["error_events", "performance_metrics",
                                                   "request_logs"]
    assert doctest.testmod(runner).failed == 0


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        runner.nope  # noqa: B018 - the access is the test
    except AttributeError as e:
        assert "nope" in str(e)
    else:
        raise AssertionError("runner.nope resolved")


def test_import_runner_is_free_and_compile_api_has_no_pyspark() -> None:
    code = ("import sys, runner; "
            "assert not {'sqlglot', 'pydantic', 'jinja2'} & set(sys.modules), 'eager import'; "
            "from runner import compile_project, load_project; "
            f"assert compile_project(load_project({str(REPO_ROOT)!r})).ok; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
