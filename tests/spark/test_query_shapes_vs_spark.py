"""The query-shape rules of runner/lint/checks/recursive_cte.py and query_rules.py agree with Spark:
every SQL they flag (tests/unit/test_lint_query_shapes.py and the broken catalogue) Spark
refuses with the error class the message names, and every valid neighbour Spark accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark.test_lint_vs_spark import _rendered
from tests.spark.test_signatures_vs_spark import analyse
from tests.unit.test_lint import _BASE, BROKEN
from tests.unit.test_lint_query_shapes import INVALID, VALID

pytestmark = pytest.mark.spark

__all__ = ["analyse"]  # the fixture, shared with the signature rules' test


# Slow: every flagged example through Spark's analyser, each refusal logged in full by Spark
# (about 1 s each on the 2-core CI machine); the rules' own unit tests run in the default suite.
@pytest.mark.slow
def test_flagged_sql_is_refused_with_the_class_named(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    expected = {name: case[2] for name, case in INVALID.items()}
    files = {name: case[1] for name, case in INVALID.items()}
    for rule in {case[0] for case in INVALID.values()}:  # the broken catalogue: refused
        for path in (BROKEN / rule / "models").glob("*.sql"):
            files[f"{rule.replace('-', '_')}_{path.stem}"] = path.read_text()
            expected[f"{rule.replace('-', '_')}_{path.stem}"] = ""
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **files})
    errors = {name: analyse(rendered[name]) for name in expected}
    wrong = {name: error for name, error in errors.items()
             if error is None or not error.startswith(expected[name])}
    assert wrong == {}


def test_valid_neighbours_are_accepted(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **VALID})
    refused = {name: analyse(sql) for name, sql in rendered.items()}
    assert {n: e for n, e in refused.items() if e} == {}
