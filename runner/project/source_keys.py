"""The keys a source table declares with dbt's data tests, for lint's merge-key proof.

A source is a Delta table the runner reads but does not write, so its rows' uniqueness cannot
be inferred: the user declares it, as in dbt::

    sources:
      - name: crm
        tables:
          - name: customers
            columns:
              - name: customer_id
                data_type: string
                data_tests: [not_null, unique]     # a key: (customer_id)
            data_tests:                            # a key over several columns
              - unique_combination_of_columns: {combination_of_columns: [region, code]}

A join on such a key keeps a merge model's key unique (:mod:`runner.lint.resolution.join_keys`).
``runner test`` does not run tests on sources, so only the tests that say something lint uses
are accepted (``unique``, ``unique_combination_of_columns``, and ``not_null``, which dbt users
pair with ``unique``); a test with ``where:``, ``enabled: false`` or ``severity: warn`` is no
key, since it does not claim every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.errors import did_you_mean
from runner.project.data_tests import DATA_TESTS, DataTest, parse_data_test

__all__ = ["declared_keys", "older_spelling", "parse_tests"]

#: Tests a source may declare: what they mean to lint.
_ON_SOURCES = ("unique", "unique_combination_of_columns", "not_null")


def older_spelling(data: Any) -> Any:
    """dbt's older ``tests:`` read as ``data_tests:`` (both at once: an error)."""
    if isinstance(data, Mapping) and "tests" in data:
        if "data_tests" in data:
            raise ValueError("give data_tests or tests (dbt's older spelling of data_tests), "
                             "not both")
        return {("data_tests" if k == "tests" else k): v for k, v in data.items()}
    return data


def parse_tests(items: Sequence[Any]) -> tuple[Any, ...]:
    """Validate a source's ``data_tests:`` list as dbt writes it (the data tests' own models,
    :mod:`runner.project.data_tests`) and refuse what a source cannot use.

    Raises:
        ValueError: an unknown test, bad arguments, a test lint does not use on a source.
    """
    out: list[DataTest] = []
    for item in items:
        test = parse_data_test(item)
        if test.kind not in _ON_SOURCES:
            raise ValueError(
                f"'{test.kind}' on a source is not run (runner test runs tests on the models' "
                f"tables): on a source, data_tests declare keys: unique, "
                f"unique_combination_of_columns (and not_null)"
                + ("" if test.kind in DATA_TESTS else did_you_mean(test.kind, _ON_SOURCES)))
        out.append(test)
    return tuple(out)


def _claims_every_row(test: Any) -> bool:
    args = test.args
    return bool(args.enabled and args.where is None and args.severity == "error")


def declared_keys(columns: Sequence[tuple[str, Sequence[Any]]], table_tests: Sequence[Any],
                  *, declared: Sequence[str] | None) -> tuple[frozenset[str], ...]:
    """The lower-cased keys the tests declare: each column with ``unique``, each table-level
    ``unique: {columns: [...]}`` and ``unique_combination_of_columns``.

    Args:
        columns: (column name, its parsed tests) of each declared column.
        table_tests: the table's parsed tests.
        declared: the declared column names (None: ``columns:`` omitted, names not checked).

    Raises:
        ValueError: a table-level ``unique`` without ``columns``, a key naming a column the
            table does not declare.
    """
    keys: list[frozenset[str]] = []
    for name, tests in columns:
        keys += [frozenset({name.lower()}) for t in tests
                 if t.kind == "unique" and _claims_every_row(t)]
    for test in table_tests:
        if test.kind == "not_null":
            raise ValueError("not_null is a column's test: declare it under columns: - name: ...")
        cols = (test.args.columns if test.kind == "unique"
                else test.args.combination_of_columns)
        if not cols:
            raise ValueError("unique on a source table names its key: "
                             "{unique: {columns: [a, b]}}")
        for col in cols:
            if declared is not None and col.lower() not in {d.lower() for d in declared}:
                raise ValueError(f"{test.kind}: column '{col}' is not declared"
                                 + did_you_mean(col, declared))
        if _claims_every_row(test):
            keys.append(frozenset(c.lower() for c in cols))
    return tuple(dict.fromkeys(keys))
