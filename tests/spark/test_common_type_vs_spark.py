"""The ``common-type`` rule agrees with Spark: every SQL it flags
(tests/unit/test_lint_common_type.py) Spark's analyser refuses with the error class the message
names, and every valid neighbour Spark accepts."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.spark.test_lint_vs_spark import _rendered
from tests.spark.test_signatures_vs_spark import analyse  # noqa: F401 - a fixture
from tests.unit.test_lint import _BASE
from tests.unit.test_lint_common_type import INVALID, VALID

pytestmark = pytest.mark.spark

_CLASS = re.compile(r"\[([A-Z][A-Z0-9_.]+)\]")


def _refusal(run: Callable[[str], str | None], sql: str) -> str | None:
    """``run(sql)`` (the ``analyse`` fixture), and a ``SparkException`` Spark's analyser throws
    past the Python errors (a recursive CTE's ``[CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE]``) as its
    class."""
    from py4j.protocol import Py4JJavaError

    try:
        return run(sql)
    except Py4JJavaError as e:
        found = _CLASS.search(str(e))
        return f"{found.group(1)}: {str(e)[:300]}" if found else str(e)[:300]


# Slow: each refusal is analysed and logged in full by Spark (about 1 s a model on the 2-core
# CI machine, 20 models); the rule's own unit tests run in the default suite.
@pytest.mark.slow
def test_flagged_sql_is_refused_with_the_class_named(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **{n: c[0] for n, c in INVALID.items()}})
    errors = {name: _refusal(analyse, rendered[name]) for name in INVALID}
    wrong = {name: error for name, error in errors.items()
             if error is None or not error.startswith(INVALID[name][1])}
    assert wrong == {}


@pytest.mark.slow
def test_valid_neighbours_are_accepted(analyse, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    rendered = _rendered(tmp_path, {"base": _BASE["base"], **VALID})
    refused = {name: _refusal(analyse, sql) for name, sql in rendered.items()}
    assert {n: e for n, e in refused.items() if e} == {}
