"""The plan's lookups: the declared sources and the seeds the selected models read, each with
its columns (docs/OPERATIONS.md, "Sources and seeds: one version per batch").

A source's columns are its declaration's, or, when ``columns:`` is omitted, the Delta table's
schema read at compile time (``read_columns``: :func:`runner.sinks.schema.delta_columns`,
passed in by :mod:`runner.build` so that compile never imports the sinks). Declared and readable
but different is an error naming the columns; neither declared nor readable is an error naming
the source and what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.errors import ParseError

from runner.compile.plan import Column, Lookup
from runner.errors import ConfigError
from runner.project.loader import Project
from runner.project.paths import is_uri

if TYPE_CHECKING:  # annotations only: the modules load with a project that has either
    from runner.project.seeds import Seed
    from runner.project.sources import SourceTable

__all__ = ["ColumnReader", "lookup_views", "plan_lookups", "spark_type"]

#: Reads a Delta table's columns (name, Spark SQL type) at a local path; None: no table there.
ColumnReader = Callable[[str], "Sequence[tuple[str, str]] | None"]


def spark_type(text: str) -> str | None:
    """A Spark SQL type as written (``string``, ``long``, ``struct<a: int>``) in its canonical
    spelling (``STRING``, ``BIGINT``, ``STRUCT<a: INT>``); None when it is not a type."""
    try:
        return exp.DataType.build(text, dialect="spark").sql(dialect="spark")
    except (ParseError, ValueError):
        return None


def lookup_views(project: Project) -> dict[str, str]:
    """Lower-cased view -> view of every declared source table and seed."""
    views = {t.view.lower(): t.view for t in project.sources}
    views.update({s.name.lower(): s.name for s in project.seeds})
    return views


def _declared(columns: Iterable[tuple[str, str]], *, what: str, path: str,
              line: int | None) -> tuple[Column, ...]:
    out = []
    for name, written in columns:
        canonical = spark_type(written)
        if canonical is None:
            raise ConfigError(f"{what}: column {name}: '{written}' is not a Spark SQL type",
                              path=path, line=line,
                              hint="e.g. string, bigint, double, boolean, date, timestamp, "
                                   "decimal(10, 2), array<string>, struct<a: int>")
        out.append(Column(name, canonical))
    return tuple(out)


def _differences(declared: Sequence[Column], actual: Sequence[Column]) -> list[str]:
    mine = {c.name.lower(): c for c in declared}
    theirs = {c.name.lower(): c for c in actual}
    out = [f"{c.name} is declared but not in the table" for k, c in mine.items()
           if k not in theirs]
    out += [f"{c.name} ({c.type}) is in the table but not declared" for k, c in theirs.items()
            if k not in mine]
    out += [f"{c.name} is declared {c.type}, the table has {theirs[k].type}"
            for k, c in mine.items() if k in theirs and spark_type(theirs[k].type) != c.type]
    return out


def _source(table: SourceTable, read_columns: ColumnReader) -> Lookup:
    what = f"source {table.full_name}"
    declared = None if table.columns is None else _declared(
        table.columns, what=what, path=table.path, line=table.line)
    readable = not table.catalog and not is_uri(table.location)
    actual_raw = read_columns(table.location) if readable else None
    actual = None if actual_raw is None else tuple(
        Column(n, spark_type(t) or t) for n, t in actual_raw)
    if declared is not None and actual is not None:
        diff = _differences(declared, actual)
        if diff:
            raise ConfigError(f"{what}: the declared columns differ from the Delta table at "
                              f"{table.location}: " + "; ".join(diff), path=table.path,
                              line=table.line,
                              hint="make columns: match the table, or omit columns: to use "
                                   "the table's schema")
    columns = declared if declared is not None else actual
    if columns is None:
        where = (f"the catalog table {table.location} is not read at compile time"
                 if table.catalog else f"{table.location} is a URI compile does not read"
                 if is_uri(table.location) else f"there is no Delta table at {table.location}")
        raise ConfigError(f"{what}: its columns are not declared and {where}", path=table.path,
                          line=table.line,
                          hint="declare columns: [{name: ..., data_type: ...}] under the "
                               "table, or create the table before compiling")
    return Lookup(kind="source", name=table.full_name, view=table.view,
                  location=table.location, catalog=table.catalog, columns=columns)


def _seed(seed: Seed) -> Lookup:
    columns = _declared(seed.columns, what=f"seed {seed.name}", path=seed.file, line=None)
    return Lookup(kind="seed", name=seed.name, view=seed.name, location=str(seed.path),
                  catalog=False, columns=columns, content_hash=seed.content_hash)


def plan_lookups(project: Project, views: Iterable[str], *, read_columns: ColumnReader
                 ) -> dict[str, Lookup]:
    """Lower-cased view -> :class:`Lookup` of each source or seed in ``views`` (the views the
    models read), in the project's declaration order.

    Raises:
        ConfigError: a declared type that is not a Spark type; declared columns that differ
            from the table's; a source with neither declared nor readable columns.
    """
    wanted = {v.lower() for v in views}
    out: dict[str, Lookup] = {}
    for table in project.sources:
        if table.view.lower() in wanted:
            out[table.view.lower()] = _source(table, read_columns)
    for seed in project.seeds:
        if seed.name.lower() in wanted:
            out[seed.name.lower()] = _seed(seed)
    return out
