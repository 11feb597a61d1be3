"""A source table's columns read from its Delta log at compile time, without a JVM."""

from __future__ import annotations

from runner.sinks.schema import table_schema_json, type_string

__all__ = ["delta_columns"]


def delta_columns(path: str) -> list[tuple[str, str]] | None:
    """(name, Spark SQL type) of the Delta table at ``path``'s latest version, in schema
    order (``'STRING'``, ``'BIGINT'``, ``'STRUCT<a: INT>'``); None when there is no table."""
    schema = table_schema_json(path)
    if schema is None:
        return None
    return [(f["name"], type_string(f["type"])) for f in schema["fields"]]
