"""A seed's rows as an Arrow table of its column types, without Spark: what ``runner seed``
writes (:mod:`runner.ops.seed`) and data tests read for a seed not written yet. Each cell is
parsed as Python reads the type (an empty cell is a null); a cell that does not fit is an error
naming the line and the column."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from runner.errors import ConfigError
from runner.project.seeds import Seed

__all__ = ["seed_table"]


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
