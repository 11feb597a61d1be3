"""``on_schema_change``: a model's output columns against its existing Delta table, at start-up.

A model's output columns are known before any data is read: at compile time
(:attr:`runner.plan.Step.columns`, Spark types inferred by the linter) and, exactly, from
Spark's analyser at start-up (:func:`model_output_schemas`: each model's SQL over an empty
``parsed_events``; the compile-time types are not exact for every expression, e.g. DECIMAL
arithmetic widens precision, and a false "type changed" would block a restart). Before the
streaming query starts, :func:`plan_schema_changes` compares them with the schema of each
model's existing Delta table (read with delta-rs, whichever engine wrote it) and
:func:`apply_schema_changes` acts on the result:

- **New columns** (in the model, not in the table): with ``on_schema_change='fail'`` (the
  default) the stream refuses to start, naming the model, the columns and what to do; with
  ``'append_new_columns'`` the table gains them (one metadata-only Delta commit per table,
  ``DeltaTable.alter.add_columns``) before any batch runs, and rows written before read null.
- **Removed columns** (in the table, no longer in the model) and **type changes** are always
  errors: rows already written cannot be reconciled with the new shape.
- Without the analysed schema (a model Spark could not analyse at start-up), the compile-time
  columns are used; a column whose type is ``UNKNOWN`` there is compared by name only.
- Nullability is not compared (every runner-written column is nullable), nor column order
  (Delta matches columns by name), nor anything of a model whose table does not exist yet
  (a new model: its first batch creates it) or of a table whose model is gone (left alone).

Every check runs before anything is changed, so a refusal leaves every table as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError
from ..plan import Column, Step

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SchemaChange", "apply_schema_changes", "check_schema_changes",
           "model_output_schemas", "plan_schema_changes", "spark_type_json", "type_string"]

#: Key in the commit info of the metadata commit that adds columns.
SCHEMA_CHANGE_KEY = "runner.schema_change"


@dataclass(frozen=True)
class SchemaChange:
    """How one model's output differs from its existing table.

    Attributes:
        model: the model name; ``path`` its file; ``table`` its Delta table.
        added: columns in the model, not in the table (name, Spark type).
        added_json: the same columns as Delta schema fields (JSON dicts), ready to add.
        removed: columns in the table the model no longer yields (name, table type).
        changed: (name, table type, model type) for columns whose type differs.
        policy: the model's ``on_schema_change``.
    """

    model: str
    path: str
    table: str
    policy: str
    added: tuple[Column, ...] = ()
    added_json: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    removed: tuple[Column, ...] = ()
    changed: tuple[tuple[str, str, str], ...] = ()

    @property
    def breaking(self) -> bool:
        """True when the change can never be applied in place."""
        return bool(self.removed or self.changed)

    @property
    def refused(self) -> bool:
        """True when the stream must not start because of this change."""
        return self.breaking or (bool(self.added) and self.policy != "append_new_columns")

    def problems(self) -> list[str]:
        """One line per refused difference, each saying what to do."""
        lines = []
        if self.changed:
            cols = ", ".join(f"{n} ({old} -> {new})" for n, old, new in self.changed)
            lines.append(f"column type changed: {cols}; rows already in the table have the "
                         "old type. Keep the old type (CAST in the model), give the new "
                         "column a new name, or rebuild with --full-refresh")
        if self.removed:
            cols = ", ".join(f"{c.name} ({c.type})" for c in self.removed)
            lines.append(f"column(s) removed from the model but still in the table: {cols}. "
                         "Keep selecting them (NULL AS name if need be), or rebuild with "
                         "--full-refresh")
        if self.added and self.policy != "append_new_columns":
            cols = ", ".join(f"{c.name} ({c.type})" for c in self.added)
            lines.append(f"new column(s) not in the table: {cols}. Add "
                         "on_schema_change='append_new_columns' to the model's config() to add "
                         "them to the table (rows written before read null), or rebuild every "
                         "table with --full-refresh (on_schema_change is 'fail')")
        return lines


def spark_type_json(spark_type: str) -> Any | None:
    """The Delta schema JSON of a Spark SQL type string, all nullable; None if unknown.

    Uses Spark's own DDL parser (a JVM must be running). ``'UNKNOWN'``, ``VOID`` and anything
    that does not parse give None: such a column is compared by name only.

    >>> spark_type_json("ARRAY<INT>")  # doctest: +SKIP
    {'type': 'array', 'elementType': 'integer', 'containsNull': True}
    """
    if not spark_type or "UNKNOWN" in spark_type.upper():
        return None
    from pyspark.sql import types as T

    try:
        parsed = T.DataType.fromDDL(spark_type)
    except Exception:  # noqa: BLE001 - Spark's ParseException and friends: not comparable
        return None
    if isinstance(parsed, T.NullType):
        return None
    return _nullable(parsed.jsonValue())


def model_output_schemas(spark: "SparkSession", steps: Sequence[Step], *,
                         parsed_events_ddl: str) -> dict[str, Any]:
    """Each model's exact output schema (schema JSON) from Spark's analyser, no data read.

    The models are analysed in order over an empty ``parsed_events`` (in a new session, so no
    temp view leaks). A model Spark cannot analyse here is left out: it is then compared with
    its compile-time columns, and its batch will report the error.

    Args:
        spark: the running session.
        steps: the plan's steps, in dependency order.
        parsed_events_ddl: ``parsed_events``' columns as Spark DDL (schema, ``_batch_id``,
            source metadata columns).
    """
    from pyspark.sql import types as T

    session = spark.newSession()
    schema = T.StructType.fromDDL(parsed_events_ddl)
    session.createDataFrame([], schema).createOrReplaceTempView("parsed_events")
    out: dict[str, Any] = {}
    for step in steps:
        try:
            df = session.sql(step.sql)
            df.createOrReplaceTempView(step.name)
            out[step.name] = df.schema.jsonValue()
        except Exception:  # noqa: BLE001 - analysis errors surface in the batch, named there
            continue
    return out


def plan_schema_changes(steps: Iterable[Step], table_path: Callable[[str], str], *,
                        output_schemas: Mapping[str, Any] | None = None) -> list[SchemaChange]:
    """Every step whose output differs from its existing Delta table (nothing is changed).

    Args:
        steps: the plan's steps (models) to check.
        table_path: model name -> its Delta table path.
        output_schemas: model name -> its exact output schema JSON
            (:func:`model_output_schemas`); a model not in it is compared with its
            compile-time columns (``Step.columns``), whose types are not exact for every
            expression (DECIMAL arithmetic), and ``UNKNOWN`` types by name only.
    """
    from deltalake import DeltaTable

    changes = []
    for step in steps:
        path = table_path(step.name)
        if not DeltaTable.is_deltatable(path):
            continue
        exact = (output_schemas or {}).get(step.name)
        if exact is not None:
            columns = [(f["name"], _nullable(f["type"]), type_string(f["type"]))
                       for f in exact["fields"]]
        elif step.columns and all(c.name != "*" for c in step.columns):
            columns = [(c.name, spark_type_json(c.type), c.type) for c in step.columns]
        else:
            continue  # nothing known about the output: nothing to compare
        table_fields = json.loads(DeltaTable(path).schema().to_json())["fields"]
        change = _diff(step, path, columns, {f["name"]: f["type"] for f in table_fields})
        if change is not None:
            changes.append(change)
    return changes


def _diff(step: Step, path: str, columns: Sequence[tuple[str, Any | None, str]],
          table: Mapping[str, Any]) -> SchemaChange | None:
    """``columns``: (name, type JSON or None when unknown, type as shown)."""
    added, added_json, changed = [], [], []
    for name, model_type, shown in columns:
        if name not in table:
            if model_type is None and step.config.on_schema_change == "append_new_columns":
                raise ExecutionError(
                    f"model {step.name}: new column {name} has a type the runner cannot tell "
                    f"({shown}), so it cannot be added to {path}", path=step.path,
                    hint=f"CAST it to a type in the model (CAST(... AS STRING) AS {name}), or "
                         "rebuild with --full-refresh")
            added.append(Column(name, shown))
            if model_type is not None:
                added_json.append({"name": name, "type": model_type, "nullable": True,
                                   "metadata": {}})
            continue
        if model_type is not None and _canonical(model_type) != _canonical(table[name]):
            changed.append((name, type_string(table[name]), type_string(model_type)))
    names = {name for name, _, _ in columns}
    removed = [Column(name, type_string(t)) for name, t in table.items() if name not in names]
    if not (added or changed or removed):
        return None
    return SchemaChange(model=step.name, path=step.path, table=path,
                        policy=step.config.on_schema_change, added=tuple(added),
                        added_json=tuple(added_json), removed=tuple(removed),
                        changed=tuple(changed))


def apply_schema_changes(changes: Iterable[SchemaChange], *,
                         on_event: Callable[[str], None] = lambda m: None) -> None:
    """Refuse (one error for every refused model) or add the new columns to their tables.

    Raises:
        ExecutionError: a model's output has new columns under ``on_schema_change='fail'``,
            or removed columns, or changed types; nothing has been changed then.
    """
    changes = list(changes)
    refused = [c for c in changes if c.refused]
    if refused:
        blocks = []
        for c in refused:
            blocks.append(f"model {c.model} ({c.path}) no longer matches its table {c.table}:"
                          + "".join(f"\n  - {p}" for p in c.problems()))
        breaking = any(c.breaking for c in refused)
        raise ExecutionError(
            "schema change refused before start: " + "\n".join(blocks),
            hint="nothing was written. --full-refresh drops every table and the checkpoint and "
                 "rebuilds them from the source (a files source must still hold every file, a "
                 "Kafka topic every offset)" if breaking else
                 "nothing was written. e.g. {{ config(on_schema_change='append_new_columns') }}"
                 f" in {refused[0].path}")
    for c in changes:
        if c.added:
            _add_columns(c)
            cols = ", ".join(f"{col.name} {col.type}" for col in c.added)
            on_event(f"schema change: {c.model} gains column(s) {cols} "
                     "(on_schema_change=append_new_columns; earlier rows read null)")


def check_schema_changes(steps: Iterable[Step], table_path: Callable[[str], str], *,
                         output_schemas: Mapping[str, Any] | None = None,
                         on_event: Callable[[str], None] = lambda m: None) -> list[SchemaChange]:
    """:func:`plan_schema_changes` then :func:`apply_schema_changes`; returns the changes."""
    changes = plan_schema_changes(steps, table_path, output_schemas=output_schemas)
    apply_schema_changes(changes, on_event=on_event)
    return changes


def _add_columns(change: SchemaChange) -> None:
    from deltalake import CommitProperties, DeltaTable
    from deltalake.exceptions import DeltaError
    from deltalake.schema import Field

    fields = [Field.from_json(json.dumps(f)) for f in change.added_json]
    try:
        DeltaTable(change.table).alter.add_columns(
            fields, commit_properties=CommitProperties(custom_metadata={
                SCHEMA_CHANGE_KEY: json.dumps({"model": change.model,
                                               "add_columns": [c.name for c in change.added]})}))
    except DeltaError as e:
        raise ExecutionError(f"model {change.model}: adding column(s) "
                             f"{', '.join(c.name for c in change.added)} to {change.table} "
                             f"failed: {e}", path=change.path) from e


# -- Delta schema JSON helpers ----------------------------------------------------------------

_NAMES = {"integer": "INT", "long": "BIGINT", "short": "SMALLINT", "byte": "TINYINT",
          "string": "STRING", "boolean": "BOOLEAN", "double": "DOUBLE", "float": "FLOAT",
          "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ", "date": "DATE",
          "binary": "BINARY", "variant": "VARIANT"}


def type_string(t: Any) -> str:
    """A Delta/Spark schema JSON type as Spark SQL: ``'STRUCT<a: INT, b: ARRAY<STRING>>'``."""
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


def _nullable(t: Any) -> Any:
    """The type with every nested field, element and map value nullable."""
    if isinstance(t, dict):
        out = {k: _nullable(v) for k, v in t.items()}
        if t.get("type") == "struct":
            out["fields"] = [{**f, "type": _nullable(f["type"]), "nullable": True,
                              "metadata": f.get("metadata", {})} for f in t["fields"]]
        if "containsNull" in t:
            out["containsNull"] = True
        if "valueContainsNull" in t:
            out["valueContainsNull"] = True
        return out
    return t


def _canonical(t: Any) -> Any:
    """A type JSON without nullability or metadata, CHAR/VARCHAR as STRING: for comparison."""
    if isinstance(t, str):
        return "string" if t.startswith(("char(", "varchar(")) else t.replace(" ", "")
    kind = t.get("type")
    if kind == "struct":
        return ("struct", tuple((f["name"], _canonical(f["type"])) for f in t["fields"]))
    if kind == "array":
        return ("array", _canonical(t["elementType"]))
    if kind == "map":
        return ("map", _canonical(t["keyType"]), _canonical(t["valueType"]))
    return json.dumps(t, sort_keys=True)
