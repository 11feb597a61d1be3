"""The event schema: Spark DDL parsed without Spark (sqlglot) into a column/type tree.

>>> s = EventSchema.parse("id STRING NOT NULL, user STRUCT<name: STRING, age: INT>")
>>> [f.name for f in s.fields]
['id', 'user']
>>> s.not_null_paths
('id',)
>>> s.field("user").child("age").type_sql
'INT'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from runner.errors import ConfigError

__all__ = ["EventSchema", "Field", "metadata_columns", "source_metadata_columns",
           "METADATA_COMMON"]


@dataclass(frozen=True)
class Field:
    """One declared field; ``children`` are a struct's fields (or an array of structs')."""

    name: str
    type: exp.DataType
    not_null: bool
    children: tuple[Field, ...] = ()

    @property
    def type_sql(self) -> str:
        return self.type.sql(dialect="spark")

    def child(self, name: str) -> Field | None:
        """The struct child called ``name`` (case-insensitive, as Spark resolves), or None."""
        lowered = name.lower()
        return next((c for c in self.children if c.name.lower() == lowered), None)


def _struct_of(dtype: exp.DataType) -> exp.DataType | None:
    """The struct type inside ``dtype`` (itself, or an array's element), if any."""
    if dtype.is_type(exp.DataType.Type.STRUCT):
        return dtype
    if dtype.is_type(exp.DataType.Type.ARRAY) and dtype.expressions:
        inner = dtype.expressions[0]
        if isinstance(inner, exp.DataType):
            return _struct_of(inner)
    return None


def _fields(struct: exp.DataType) -> tuple[Field, ...]:
    out = []
    for col in struct.expressions:
        if not isinstance(col, exp.ColumnDef):
            continue
        dtype = col.args["kind"]
        not_null = any(isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
                       for c in col.args.get("constraints") or [])
        inner = _struct_of(dtype)
        out.append(Field(col.name, dtype, not_null, _fields(inner) if inner is not None else ()))
    return tuple(out)


@dataclass(frozen=True)
class EventSchema:
    """The declared event: top-level fields as a tree, plus the original DDL for Spark."""

    ddl: str
    fields: tuple[Field, ...]

    @classmethod
    def parse(cls, ddl: str) -> EventSchema:
        """Parse Spark DDL (``name TYPE [NOT NULL], ...``).

        Raises:
            ConfigError: the DDL does not parse or declares a field twice.
        """
        try:
            # Spark DDL is a table's column list: sqlglot's Spark dialect parses it strictly as
            # the body of a CREATE TABLE (types, NOT NULL, nested STRUCT/ARRAY/MAP).
            table = sqlglot.parse_one(f"CREATE TABLE _schema ({ddl})", read="spark")
        except ParseError as e:
            detail = e.errors[0]["description"] if e.errors else str(e)
            raise ConfigError(f"schema: not valid Spark DDL: {detail}", path="project.yml",
                              hint="write it as Spark DDL: name TYPE [NOT NULL], ...") from e
        columns = table.this.expressions if isinstance(table.this, exp.Schema) else []
        untyped = [c.name for c in columns
                   if not (isinstance(c, exp.ColumnDef) and c.args.get("kind"))]
        if untyped:
            raise ConfigError(f"schema: not valid Spark DDL: field '{untyped[0]}' has no type",
                              path="project.yml")
        struct = exp.DataType(this=exp.DataType.Type.STRUCT, expressions=columns, nested=True)
        fields = _fields(struct)
        if not fields:
            raise ConfigError("schema: declares no fields", path="project.yml")
        seen: set[str] = set()
        for f in fields:
            if f.name.lower() in seen:
                raise ConfigError(f"schema: field '{f.name}' is declared twice", path="project.yml")
            seen.add(f.name.lower())
        return cls(ddl=ddl, fields=fields)

    def field(self, name: str) -> Field | None:
        lowered = name.lower()
        return next((f for f in self.fields if f.name.lower() == lowered), None)

    @property
    def not_null_paths(self) -> tuple[str, ...]:
        """Dotted paths of NOT NULL fields (nested ones only through structs, not arrays)."""

        def walk(fields: tuple[Field, ...], prefix: str) -> Iterator[str]:
            for f in fields:
                path = f"{prefix}{f.name}"
                if f.not_null:
                    yield path
                if f.type.is_type(exp.DataType.Type.STRUCT):
                    yield from walk(f.children, path + ".")

        return tuple(walk(self.fields, ""))

    def paths(self) -> tuple[str, ...]:
        """Every dotted field path (struct children included)."""

        def walk(fields: tuple[Field, ...], prefix: str) -> Iterator[str]:
            for f in fields:
                yield f"{prefix}{f.name}"
                yield from walk(f.children, f"{prefix}{f.name}.")

        return tuple(walk(self.fields, ""))


METADATA_COMMON: dict[str, str] = {"_batch_id": "BIGINT"}

_METADATA: dict[str, dict[str, str]] = {
    "files": {"_source_file": "STRING"},
    "kafka": {"_topic": "STRING", "_partition": "INT", "_offset": "BIGINT",
              "_kafka_timestamp": "TIMESTAMP", "_key": "STRING"},
}


def source_metadata_columns(source_type: Literal["files", "kafka"]) -> dict[str, str]:
    """The columns a source adds to each record (``_source_file``, or the Kafka ones)."""
    return dict(_METADATA[source_type])


def metadata_columns(source_type: Literal["files", "kafka"]) -> dict[str, str]:
    """Metadata columns of ``parsed_events`` for a source type, name -> Spark type."""
    return {**METADATA_COMMON, **_METADATA[source_type]}
