"""Tests an analytics engineer declares next to a model, in ``models/<model>.yml``:

- **unit tests**: given input events (and the table's prior rows), expect the rows the model's
  table holds after one batch through the real batch path (Spark, scratch Delta tables);
- **data tests**: ``not_null``, ``unique``, ``accepted_values``, ``relationships`` on the
  warehouse tables (delta-rs and pyarrow; no Spark), and the tests that are SQL (dbt_utils'
  built-ins, any test with ``where:``, the project's ``tests/generic/`` macros: Spark);
  dbt's top-level ``unit_tests:`` are read as unit tests.

>>> from runner.model_tests import DATA_TESTS
>>> sorted(DATA_TESTS)  # doctest: +NORMALIZE_WHITESPACE
['accepted_range', 'accepted_values', 'expression_is_true', 'not_null', 'relationships',
 'unique', 'unique_combination_of_columns']
"""

from __future__ import annotations

from runner.model_tests.report import result_lines, summary_line
from runner.model_tests.result import TestResult, TestSummary
from runner.model_tests.spec import DATA_TESTS, DataTest, ModelSpec, SpecError, UnitTest, load_specs
from runner.model_tests.suite import Kind, Suite, collect_suite, run_suite

__all__ = [
    "DATA_TESTS",
    "DataTest",
    "Kind",
    "ModelSpec",
    "SpecError",
    "Suite",
    "TestResult",
    "TestSummary",
    "UnitTest",
    "collect_suite",
    "load_specs",
    "result_lines",
    "run_suite",
    "summary_line",
]
