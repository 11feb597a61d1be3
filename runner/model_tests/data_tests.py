"""Data tests on the warehouse tables. ``not_null``, ``unique``, ``accepted_values`` and
``relationships`` without ``where:`` are read with delta-rs and checked with pyarrow.compute
(no Spark, no JVM); the tests that are SQL (dbt_utils' built-ins, ``where:``, the project's
``tests/generic/`` macros) run on Spark (:mod:`.sql_tests`), which starts only when one does.

Each failing test reports how many rows fail and a sample of them; a failing test with
``severity: warn`` is a warning, which does not fail the run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from runner.compile.plan import Plan, table_key
from runner.errors import RunnerError, did_you_mean
from runner.model_tests.compare import json_default
from runner.model_tests.result import Status, TestResult
from runner.model_tests.spec import AcceptedValues, DataTest, ModelSpec, Relationships, Unique
from runner.project.loader import Project

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.model_tests.generic import TestMacro

__all__ = ["SAMPLE_ROWS", "run_data_tests", "data_test_name"]

SAMPLE_ROWS = 5


class _Broken(Exception):
    """The test cannot run (missing table or column, incompatible values)."""


class _Tables:
    """Warehouse tables read once per run (through runner.sinks.tables.read_table)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._cache: dict[str, pa.Table] = {}

    def get(self, model: str) -> pa.Table:
        if model not in self._cache:
            from runner.sinks.tables import is_table, read_table

            path = self.project.table_path(model)
            seed = next((s for s in self.project.seeds if s.name == model), None)
            if seed is not None and not is_table(path):  # not written by `runner seed` yet
                from runner.project.seed_arrow import seed_table

                self._cache[model] = seed_table(seed)
                return self._cache[model]
            if not is_table(path):
                raise _Broken(f"no table for model {model} at {path} (nothing written yet: "
                              "run `runner stream` first)")
            self._cache[model] = read_table(str(path))
        return self._cache[model]


def _column(table: pa.Table, name: str, model: str) -> tuple[str, pa.ChunkedArray]:
    names = {n.lower(): n for n in table.column_names}
    real = names.get(name.lower())
    if real is None:
        raise _Broken(f"table {model} has no column '{name}'"
                      + did_you_mean(name, table.column_names)
                      + f"; columns: {', '.join(table.column_names)}")
    return real, table.column(real)


def _sample(rows: pa.Table) -> tuple[str, ...]:
    return tuple(_short(json.dumps(r, default=json_default, ensure_ascii=False))
                 for r in rows.slice(0, SAMPLE_ROWS).to_pylist())


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _failing(count: int, total: int, what: str) -> str:
    return f"{count:,} of {total:,} rows {what}"


def data_test_name(test: DataTest) -> str:
    """``eventId not_null``, ``unique(endpoint)``, ``status accepted_values``... (the test's
    ``name:`` when it has one)."""
    if test.args.name:
        return test.args.name
    if test.column is not None:
        return f"{test.column} {test.kind}"
    columns = test.args.columns if isinstance(test.args, Unique) else \
        getattr(test.args, "combination_of_columns", ())
    if test.kind == "expression_is_true":
        columns = (getattr(test.args, "expression", ""),)
    return f"{test.kind}({', '.join(columns)})" if columns else test.kind


def _check(test: DataTest, model: str, key: Sequence[str], tables: _Tables
           ) -> tuple[int, str, tuple[str, ...]]:
    """(failing rows, message, detail lines) of one test; raises _Broken if it cannot run."""
    table = tables.get(model)
    total = table.num_rows
    if test.kind == "unique" and test.column is None:
        assert isinstance(test.args, Unique)
        columns = [_column(table, c, model)[0] for c in (test.args.columns or key)]
        return _duplicates(table, columns, total, nulls=True)
    assert test.column is not None
    name, values = _column(table, test.column, model)
    if test.kind == "not_null":
        bad = table.filter(pc.is_null(values))
        return bad.num_rows, _failing(bad.num_rows, total, f"have {name} null"), _sample(bad)
    if test.kind == "unique":
        return _duplicates(table, [name], total, nulls=False)
    if test.kind == "accepted_values":
        assert isinstance(test.args, AcceptedValues)
        try:
            accepted = pa.array(list(test.args.values)).cast(values.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise _Broken(f"values {list(test.args.values)} do not fit column {name} "
                          f"({values.type}): {e}") from e
        bad = table.filter(pc.and_(pc.is_valid(values), pc.invert(pc.is_in(values, accepted))))
        found = sorted({json.dumps(v, default=json_default)
                        for v in bad.column(name).to_pylist()})[:10]
        return bad.num_rows, (_failing(bad.num_rows, total, f"have {name} outside "
                                       f"{list(test.args.values)}: {', '.join(found)}")
                              ), _sample(bad)
    if test.kind == "relationships":
        assert isinstance(test.args, Relationships)
        parent = tables.get(test.args.to)
        parent_name, parent_values = _column(parent, test.args.field, test.args.to)
        try:
            known = pc.unique(parent_values.combine_chunks()).cast(values.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise _Broken(f"{test.args.to}.{parent_name} ({parent_values.type}) cannot be "
                          f"compared with {model}.{name} ({values.type})") from e
        bad = table.filter(pc.and_(pc.is_valid(values), pc.invert(pc.is_in(values, known))))
        return bad.num_rows, _failing(bad.num_rows, total,
                                      f"have {name} not found in "
                                      f"{test.args.to}.{parent_name}"), _sample(bad)
    raise _Broken(f"unknown data test '{test.kind}'")  # pragma: no cover - validated in spec


def _duplicates(table: pa.Table, columns: list[str], total: int, *, nulls: bool
                ) -> tuple[int, str, tuple[str, ...]]:
    keys = table.select(columns)
    if not nulls:
        keys = keys.filter(pc.is_valid(keys.column(0)))
    try:
        counts = keys.group_by(columns).aggregate([([], "count_all")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise _Broken(f"cannot group by {', '.join(columns)}: {e}") from e
    dupes = counts.filter(pc.greater(counts.column("count_all"), 1))
    dupes = dupes.sort_by([("count_all", "descending")])
    rows = int(pc.sum(dupes.column("count_all")).as_py() or 0)
    label = ", ".join(columns)
    one = dupes.num_rows == 1
    message = (f"{dupes.num_rows:,} value{'' if one else 's'} of ({label}) occur"
               f"{'s' if one else ''} more than once ({rows:,} of {total:,} rows)")
    sample = tuple(_short(json.dumps(
        {**{c: r[c] for c in columns}, "rows": r["count_all"]}, default=json_default,
        ensure_ascii=False)) for r in dupes.slice(0, SAMPLE_ROWS).to_pylist())
    return rows, message, sample


def run_data_tests(project: Project, plan: Plan, cases: Sequence[tuple[ModelSpec, DataTest]], *,
                   macros: Mapping[str, TestMacro] | None = None,
                   spark: Callable[[], SparkSession] | None = None,
                   on_result: Callable[[TestResult], None] = lambda r: None) -> list[TestResult]:
    """Run data tests against the project's warehouse tables.

    Args:
        project: the project (where the warehouse is).
        plan: the compiled plan (merge keys of the models).
        cases: (model spec, test) pairs, in the order to run them.
        macros: the project's test macros (default: read from tests/generic/).
        spark: gives the Spark session the SQL tests run on (called on first use).
        on_result: called with each result as soon as it is known.
    """
    from runner.model_tests.generic import test_macros
    from runner.model_tests.sql_tests import SqlTestRunner

    tables = _Tables(project)
    sql = SqlTestRunner(project, test_macros(project) if macros is None else macros,
                        read_model=_reader(tables), spark=spark or _no_spark)
    results = []
    for spec, test in cases:
        started = time.perf_counter()
        step = next((s for s in plan.steps if s.name == spec.model), None)
        key = table_key(step.config) if step is not None else ()
        where = _where(spec, test)
        name = data_test_name(test)
        try:
            failing, message, details = (sql.check(test, spec.model, key) if test.sql
                                         else _check(test, spec.model, key, tables))
        except RunnerError as e:
            result = TestResult("data", spec.model, name, "error", str(e), (), where,
                                time.perf_counter() - started)
        except _Broken as e:
            result = TestResult("data", spec.model, name, "error", str(e), (), where,
                                time.perf_counter() - started)
        else:
            status: Status = "pass" if failing == 0 else (
                "warn" if test.args.severity == "warn" else "fail")
            result = TestResult("data", spec.model, name, status,
                                "" if failing == 0 else message,
                                () if failing == 0 else details, where,
                                time.perf_counter() - started)
        results.append(result)
        on_result(result)
    return results


def _reader(tables: _Tables) -> Callable[[str], pa.Table]:
    def read(model: str) -> pa.Table:
        try:
            return tables.get(model)
        except _Broken as e:
            raise RunnerError(str(e)) from e
    return read


def _no_spark() -> SparkSession:
    raise RunnerError("a SQL data test needs a Spark session")


def _where(spec: ModelSpec, test: DataTest) -> str:
    if test.column is None:
        line = spec.line_of("data_tests")
    else:
        index = next(i for i, c in enumerate(spec.columns) if c.name == test.column)
        line = spec.line_of("columns", index, "data_tests")
    return f"{spec.path}:{line}" if line else spec.path


