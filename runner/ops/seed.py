"""``runner seed``: each seed (``seeds/<name>.csv``) written as a Delta table at
``<warehouse>/<name>``, once per content, as dbt's ``dbt seed`` loads seeds into tables.

A seed's version is its content hash (:attr:`runner.project.seeds.Seed.content_hash`: the CSV's
bytes and its declared types). A write replaces the table's rows with the CSV's (typed as the
models see them) in one delta-rs commit that carries the hash in its commit info and an
application transaction ``runner-seed:<project>:<seed>`` whose version counts the seed's
writes. Before writing, the table's latest seed commit is read: the same hash, nothing is
written (running ``runner seed`` twice leaves one version per content); a changed CSV writes a
new version. Two runs racing on one table: delta-rs' conflict check fails the second commit
(the same transaction id), which then finds the hash written and reports it unchanged.

Written with delta-rs on every engine: a seed is small (at most 50 MB) and written by one
process, and delta-rs' conditional commit is what the runner's maintenance uses on object
storage too (delta-spark's S3 log store is single-writer per table). With ``catalog:`` the
table is registered by name as a model's is (:mod:`runner.runtime.catalog`), which takes a
Spark session with the metastore; without it, no JVM starts.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import pyarrow as pa

from runner.compile.selection import select_names
from runner.errors import ConfigError
from runner.project.loader import Project
from runner.project.seeds import Seed

__all__ = ["SeedResult", "seed_app_id", "seed_project", "seed_table"]

def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(f"not a boolean: {text!r}")
    return text.lower() == "true"


def _timestamp(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_SIMPLE: dict[str, tuple[pa.DataType, Callable[[str], Any]]] = {
    "BIGINT": (pa.int64(), int), "LONG": (pa.int64(), int),
    "INT": (pa.int32(), int), "INTEGER": (pa.int32(), int),
    "SMALLINT": (pa.int16(), int), "SHORT": (pa.int16(), int),
    "TINYINT": (pa.int8(), int), "BYTE": (pa.int8(), int),
    "DOUBLE": (pa.float64(), float), "FLOAT": (pa.float32(), float),
    "REAL": (pa.float32(), float), "BOOLEAN": (pa.bool_(), _bool),
    "DATE": (pa.date32(), date.fromisoformat), "TIMESTAMP": (pa.timestamp("us", "UTC"), _timestamp),
    "TIMESTAMP_LTZ": (pa.timestamp("us", "UTC"), _timestamp),
    "TIMESTAMP_NTZ": (pa.timestamp("us"), datetime.fromisoformat),
    "STRING": (pa.string(), str), "UNKNOWN": (pa.string(), str),
}


def _column_type(spark_type: str) -> tuple[pa.DataType, Callable[[str], Any]]:
    """The Arrow type and the parser of a seed column's (Spark) type.

    >>> _column_type("decimal(10, 2)")[0], _column_type("varchar(8)")[0]
    (Decimal128Type(decimal128(10, 2)), DataType(string))
    """
    upper = "".join(spark_type.upper().split())
    if upper in _SIMPLE:
        return _SIMPLE[upper]
    if upper.startswith(("VARCHAR(", "CHAR(")):
        return pa.string(), str
    if upper.startswith("DECIMAL(") and upper.endswith(")"):
        precision, _, scale = upper[len("DECIMAL("):-1].partition(",")
        return pa.decimal128(int(precision), int(scale or 0)), Decimal
    raise ConfigError(f"seed column type '{spark_type}' cannot be written as a table by "
                      "runner seed", hint="declare it as one of BIGINT, INT, DOUBLE, "
                      "DECIMAL(p,s), BOOLEAN, DATE, TIMESTAMP, STRING in seeds/*.yml")


def seed_table(seed: Seed) -> pa.Table:
    """The seed's rows as an Arrow table of its column types (an empty cell is a null).

    Raises:
        ConfigError: a cell that does not fit its column's type, naming the line and column.
    """
    text = seed.path.read_bytes().decode("utf-8-sig")
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader, None)
    rows = [r for r in reader if r != []]
    arrays = []
    for i, (name, spark_type) in enumerate(seed.columns):
        arrow_type, parse = _column_type(spark_type)
        values = []
        for n, row in enumerate(rows, start=2):
            cell = row[i]
            try:
                values.append(None if cell == "" else parse(cell))
            except (ValueError, InvalidOperation) as e:
                raise ConfigError(f"seed '{seed.name}': column {name} ({spark_type}) cannot "
                                  f"hold {cell!r}: {e}", path=seed.file, line=n) from e
        arrays.append(pa.array(values, arrow_type))
    return pa.Table.from_arrays(arrays, names=[n for n, _ in seed.columns])


def seed_app_id(project: Project, seed: Seed) -> str:
    """The application transaction id of a seed's writes."""
    return f"runner-seed:{project.config.name}:{seed.name}"


Outcome = Literal["written", "unchanged"]


@dataclass(frozen=True)
class SeedResult:
    """One seed: written (a new version) or unchanged (its content was the table's)."""

    seed: str
    path: str
    outcome: Outcome
    version: int
    rows: int
    content_hash: str
    registered: str | None = None  # the catalog name, when catalog: is set


@dataclass
class SeedReport:
    results: list[SeedResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"seeds": {r.seed: {"path": r.path, "outcome": r.outcome, "version": r.version,
                                   "rows": r.rows, "content_hash": r.content_hash,
                                   "registered": r.registered} for r in self.results}}

    def lines(self) -> list[str]:
        out = [f"{r.outcome:<9} {r.seed}: {r.rows:,} rows, version {r.version} -> {r.path}"
               + (f" ({r.registered})" if r.registered else "") for r in self.results]
        written = sum(r.outcome == "written" for r in self.results)
        return [*out, f"{len(self.results)} seed(s): {written} written, "
                      f"{len(self.results) - written} unchanged"]


def write_seed(project: Project, seed: Seed) -> SeedResult:
    """Write one seed's table unless it holds this content already (see the module doc)."""
    from runner.sinks.seed_tables import write_seed_table

    path = str(project.table_path(seed.name))
    outcome, version = write_seed_table(path, lambda: seed_table(seed),
                                        app_id=seed_app_id(project, seed),
                                        content_hash=seed.content_hash)
    return SeedResult(seed.name, path, outcome, version, seed.rows, seed.content_hash)


def seed_project(project: Project, *, select: Sequence[str] = (),
                 register: Callable[[Sequence[SeedResult]], dict[str, str]] | None = None
                 ) -> SeedReport:
    """Write the selected seeds (all without ``select``; names or ``tag:``-less selectors).

    Args:
        register: registers the tables by name: seed -> its catalog name (default, with
            ``catalog:`` in project.yml: :func:`runner.runtime.catalog.register_seeds`).

    Raises:
        ConfigError: a selector names no seed; a cell does not fit its type.
    """
    seeds = {s.name: s for s in project.seeds}
    chosen = select_names(select, edges={s: [] for s in seeds}, tags={s: [] for s in seeds}) \
        if select else set(seeds)
    report = SeedReport([write_seed(project, seeds[name]) for name in sorted(chosen)])
    if register is None and project.config.catalog is not None:
        from runner.runtime.catalog import register_seeds

        def register(results: Sequence[SeedResult]) -> dict[str, str]:
            return register_seeds(project, [r.seed for r in results], report=lambda e: None)
    if register is not None and report.results:
        names = register(report.results)
        report.results = [SeedResult(**{**r.__dict__, "registered": names.get(r.seed)})
                          for r in report.results]
    return report
