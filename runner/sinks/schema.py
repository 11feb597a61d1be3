"""Delta table schemas in their JSON form, and the one schema change the runner commits.

A Spark ``StructType.jsonValue()`` and a Delta schema share one JSON form (Spark's
``timestamp`` is Delta's UTC timestamp), so the runner reasons about both as JSON:

- every column the runner writes is nullable, nested fields, array elements and map values
  included (:func:`nullable_type`): Spark marks some result columns NOT NULL, and a table
  created from such a schema would refuse a later batch with a null there;
- two types are the same when they are equal apart from nullability, field metadata and
  CHAR/VARCHAR lengths (:func:`canonical_type`); :func:`type_string` shows one as Spark SQL;
- a batch's columns must match its existing table's (:func:`check_table_schema`); only
  ``on_schema_change='append_new_columns'`` adds columns, in one metadata-only commit
  (:func:`add_columns`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import DeltaError
from deltalake.schema import Field

from runner.errors import SinkError
from runner.sinks.delta import is_delta_table, open_delta

__all__ = [
    "SCHEMA_CHANGE_KEY",
    "add_columns",
    "canonical_type",
    "check_table_schema",
    "delta_columns",
    "delta_schema_json",
    "nullable_type",
    "table_schema_json",
    "type_string",
]

#: Key in the commit info of the metadata commit that adds columns.
SCHEMA_CHANGE_KEY = "runner.schema_change"


def nullable_type(t: Any) -> Any:
    """The schema JSON type ``t`` with every nested field, element and map value nullable,
    field metadata dropped and user-defined types replaced by their SQL type.

    >>> nullable_type({"type": "array", "elementType": "long", "containsNull": False})
    {'type': 'array', 'elementType': 'long', 'containsNull': True}
    """
    return _nullable(t, "", storable=False)


def delta_schema_json(spark_schema_json: Mapping[str, Any]) -> dict[str, Any]:
    """The Delta schema (JSON form) of a batch with Spark schema ``spark_schema_json``
    (``StructType.jsonValue()``): :func:`nullable_type` of it.

    Raises:
        SinkError: a column of a type Delta cannot store (``void``: an untyped NULL;
            intervals), named.
    """
    schema: dict[str, Any] = _nullable(dict(spark_schema_json), "", storable=True)
    return schema


def _nullable(t: Any, where: str, *, storable: bool) -> Any:
    """:func:`nullable_type`; with ``storable``, refuse what Delta cannot store (``where``
    names the column)."""
    if isinstance(t, str):
        if storable and (t == "void" or "interval" in t):
            raise SinkError(f"column {where.lstrip('.')} has type {t.upper()}, which Delta "
                            "cannot store; CAST it in the model "
                            "(e.g. CAST(NULL AS STRING))")
        return t
    kind = t.get("type")
    if kind == "struct":
        return {"type": "struct", "fields": [
            {"name": f["name"],
             "type": _nullable(f["type"], f"{where}.{f['name']}", storable=storable),
             "nullable": True, "metadata": {}} for f in t["fields"]]}
    if kind == "array":
        return {"type": "array",
                "elementType": _nullable(t["elementType"], f"{where}[]", storable=storable),
                "containsNull": True}
    if kind == "map":
        return {"type": "map",
                "keyType": _nullable(t["keyType"], f"{where}.key", storable=storable),
                "valueType": _nullable(t["valueType"], f"{where}.value", storable=storable),
                "valueContainsNull": True}
    if kind == "udt":
        return _nullable(t["sqlType"], where, storable=storable)
    if storable:
        raise SinkError(f"column {where.lstrip('.')} has a type Delta cannot store: {t}")
    return t


def canonical_type(t: Any) -> Any:
    """A hashable form of a schema JSON type for comparison: no nullability or metadata,
    CHAR/VARCHAR as STRING.

    >>> canonical_type("varchar(10)") == canonical_type("string")
    True
    """
    if isinstance(t, str):
        return "string" if t.startswith(("char(", "varchar(")) else t.replace(" ", "")
    kind = t.get("type")
    if kind == "struct":
        return ("struct", tuple((f["name"], canonical_type(f["type"])) for f in t["fields"]))
    if kind == "array":
        return ("array", canonical_type(t["elementType"]))
    if kind == "map":
        return ("map", canonical_type(t["keyType"]), canonical_type(t["valueType"]))
    if kind == "udt":
        return canonical_type(t["sqlType"])
    return json.dumps(t, sort_keys=True)


_NAMES = {"integer": "INT", "long": "BIGINT", "short": "SMALLINT", "byte": "TINYINT",
          "string": "STRING", "boolean": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT",
          "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ", "date": "DATE",
          "binary": "BINARY", "variant": "VARIANT"}


def type_string(t: Any) -> str:
    """A schema JSON type as Spark SQL.

    >>> type_string({"type": "struct", "fields": [{"name": "a", "type": "integer"},
    ...              {"name": "b", "type": {"type": "array", "elementType": "string"}}]})
    'STRUCT<a: INT, b: ARRAY<STRING>>'
    """
    if isinstance(t, str):
        if t.startswith(("decimal", "char", "varchar")):
            return t.upper()
        return _NAMES.get(t, t.upper())
    kind = t.get("type")
    if kind == "struct":
        return "STRUCT<" + ", ".join(f"{f['name']}: {type_string(f['type'])}"
                                     for f in t["fields"]) + ">"
    if kind == "array":
        return f"ARRAY<{type_string(t['elementType'])}>"
    if kind == "map":
        return f"MAP<{type_string(t['keyType'])}, {type_string(t['valueType'])}>"
    return json.dumps(t)


def table_schema_json(table: DeltaTable | str) -> dict[str, Any] | None:
    """The Delta table's schema as JSON (``table``: the table or its path); None when there
    is no table at that path."""
    if isinstance(table, str):
        if not is_delta_table(str(table)):
            return None
        table = open_delta(table)
    schema: dict[str, Any] = json.loads(table.schema().to_json())
    return schema


def check_table_schema(table: DeltaTable, schema_json: Mapping[str, Any], *,
                       partition_by: Sequence[str], model: str) -> None:
    """Refuse a batch whose columns or partitioning differ from the existing table's (column
    order and nullability aside; adding columns is ``on_schema_change``'s job, done before
    the stream starts). Called before Spark writes anything.

    Raises:
        SinkError: naming the columns that differ.
    """
    mine = {f["name"]: f["type"] for f in schema_json["fields"]}
    theirs = {f["name"]: f["type"] for f in (table_schema_json(table) or {"fields": []})["fields"]}
    added = [c for c in mine if c not in theirs]
    removed = [c for c in theirs if c not in mine]
    changed = [c for c in mine
               if c in theirs and canonical_type(mine[c]) != canonical_type(theirs[c])]
    if added or removed or changed:
        parts = []
        if added:
            parts.append("new column(s) " + ", ".join(added))
        if removed:
            parts.append("missing column(s) " + ", ".join(removed))
        parts += [f"{c}: table {type_string(theirs[c])}, batch {type_string(mine[c])}"
                  for c in changed]
        raise SinkError(f"model {model}: the batch's columns differ from the table "
                        f"{table.table_uri}: {'; '.join(parts)}",
                        hint="keep the model's columns and types as the table has them, or "
                             "rebuild the table with --full-refresh")
    if list(table.metadata().partition_columns) != list(partition_by):
        raise SinkError(f"model {model}: partition_by {list(partition_by)} differs from the "
                        f"table's partition columns {table.metadata().partition_columns}",
                        hint="partitioning cannot change in place: rebuild with "
                             "--full-refresh")


def add_columns(table_path: str, fields: Sequence[Mapping[str, Any]], *, model: str) -> None:
    """Add ``fields`` (Delta schema JSON fields) to the table, in one metadata-only commit
    whose commit info names the model and the columns under :data:`SCHEMA_CHANGE_KEY`. Rows
    written before read null in them.

    Raises:
        SinkError: the commit failed.
    """
    names = [str(f["name"]) for f in fields]
    try:
        open_delta(table_path).alter.add_columns(
            [Field.from_json(json.dumps(f)) for f in fields],
            commit_properties=CommitProperties(custom_metadata={
                SCHEMA_CHANGE_KEY: json.dumps({"model": model, "add_columns": names})}))
    except DeltaError as e:
        raise SinkError(f"model {model}: adding column(s) {', '.join(names)} to {table_path} "
                        f"failed: {e}") from e


def delta_columns(path: str) -> list[tuple[str, str]] | None:
    """(name, Spark SQL type) of the Delta table at ``path``'s latest version, in schema
    order (``'STRING'``, ``'BIGINT'``, ``'STRUCT<a: INT>'``); None when there is no table.
    What compile knows of a source declared without ``columns:`` (no JVM)."""
    schema = table_schema_json(path)
    if schema is None:
        return None
    return [(f["name"], type_string(f["type"])) for f in schema["fields"]]
