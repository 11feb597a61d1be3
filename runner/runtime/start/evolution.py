"""``on_schema_change``: a model's output columns against its existing Delta table, at start-up.

A model's output columns are known before any data is read: at compile time
(:attr:`runner.compile.plan.Step.columns`, Spark types inferred by the linter) and, exactly, from
Spark's analyser at start-up (:func:`model_output_schemas`: each model's SQL over an empty
``parsed_events``; the compile-time types are not exact for every expression, e.g. DECIMAL
arithmetic widens precision, and a false "type changed" would block a restart). Before the
streaming query starts, :func:`plan_schema_changes` compares them with the schema of each
model's existing Delta table (read with delta-rs, whichever engine wrote it) and
:func:`apply_schema_changes` acts on the result:

- **New columns** (in the model, not in the table): with ``on_schema_change='fail'`` (the
  default) the stream refuses to start, naming the model, the columns and what to do; with
  ``'append_new_columns'`` the table gains them (one metadata-only Delta commit per table,
  :func:`runner.sinks.schema.add_columns`) before any batch runs, and rows written before
  read null.
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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.compile.plan import HISTORY_COLUMNS, Column, Plan, Step
from runner.errors import ExecutionError, SinkError
from runner.events import Reporter, SchemaChanged, ignore
from runner.runtime.batches.parse import parse_schema
from runner.runtime.batches.sql_guard import checked_query
from runner.runtime.client.remote import new_session
from runner.sinks.base import quote_column
from runner.sinks.schema import (
    add_columns,
    canonical_type,
    nullable_type,
    table_schema_json,
    type_string,
)
from runner.spark_errors import first_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["SchemaChange", "apply_schema_changes", "check_schema_changes",
           "model_output_schemas", "plan_schema_changes", "spark_type_json"]


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
                         f"column a new name, or rebuild the table with --full-refresh "
                         f"--select {self.model}")
        if self.removed:
            cols = ", ".join(f"{c.name} ({c.type})" for c in self.removed)
            lines.append(f"column(s) removed from the model but still in the table: {cols}. "
                         "Keep selecting them (NULL AS name if need be), or rebuild the "
                         f"table with --full-refresh --select {self.model}")
        if self.added and self.policy != "append_new_columns":
            cols = ", ".join(f"{c.name} ({c.type})" for c in self.added)
            lines.append(f"new column(s) not in the table: {cols}. Add "
                         "on_schema_change='append_new_columns' to the model's config() to add "
                         "them to the table (rows written before read null), or rebuild the "
                         f"table with --full-refresh --select {self.model} (on_schema_change "
                         "is 'fail')")
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
    return nullable_type(parsed.jsonValue())


def model_output_schemas(spark: SparkSession, plan: Plan,
                         metadata_columns: Mapping[str, str]) -> dict[str, StructType | str]:
    """Each model's exact output schema from Spark's analyser, no data read; for a model
    Spark cannot analyse, why not (one line).

    The models are analysed in plan order over an empty ``parsed_events`` (in a new session,
    so no temp view leaks); a model that refs one that does not analyse does not either.

    Args:
        spark: the running session.
        plan: the compiled plan (event schema, models in dependency order).
        metadata_columns: the columns ``parsed_events`` has beyond the event schema, name ->
            Spark type (``_batch_id`` and the source's: ``Project.parsed_events_columns``).
    """
    session = new_session(spark)
    ddl = plan.schema_ddl + "".join(f", {quote_column(name)} {dtype}"
                                    for name, dtype in metadata_columns.items())
    session.createDataFrame([], parse_schema(ddl)).createOrReplaceTempView("parsed_events")
    for lk in plan.lookups:  # sources and seeds: empty, with their declared columns
        lk_ddl = ", ".join(f"{quote_column(c.name)} "
                           f"{'STRING' if c.type.upper() == 'UNKNOWN' else c.type}"
                           for c in lk.columns)
        if lk_ddl:
            session.createDataFrame([], parse_schema(lk_ddl)).createOrReplaceTempView(lk.view)
    out: dict[str, StructType | str] = {}
    for step in plan.steps:
        broken = [d for d in step.depends_on if isinstance(out.get(d), str)]
        if broken:
            out[step.name] = f"it refs model {broken[0]}, which does not analyse"
            continue
        try:
            df = session.sql(checked_query(session, step.sql))  # runtime/batches/sql_guard.py
            df.createOrReplaceTempView(step.name)
            out[step.name] = df.schema
        except Exception as e:  # noqa: BLE001 - Spark's analysis errors
            out[step.name] = first_line(e)
    return out


def plan_schema_changes(steps: Iterable[Step], table_path: Callable[[str], str], *,
                        output_schemas: Mapping[str, StructType | str] | None = None
                        ) -> list[SchemaChange]:
    """Every step whose output differs from its existing Delta table (nothing is changed).

    Args:
        steps: the plan's steps (models) to check.
        table_path: model name -> its Delta table path.
        output_schemas: :func:`model_output_schemas`; a model without a schema there is
            compared with its compile-time columns (``Step.columns``), whose types are not
            exact for every expression (DECIMAL arithmetic), and ``UNKNOWN`` types by name
            only.
    """
    changes = []
    for step in steps:
        path = table_path(step.name)
        table = table_schema_json(path)
        if table is None:
            continue
        exact = (output_schemas or {}).get(step.name)
        columns: list[tuple[str, Any | None, str]]
        if exact is not None and not isinstance(exact, str):
            columns = [(f["name"], nullable_type(f["type"]), type_string(f["type"]))
                       for f in exact.jsonValue()["fields"]]
        elif step.columns and all(c.name != "*" for c in step.columns):
            columns = [(c.name, spark_type_json(c.type), c.type) for c in step.columns]
        else:
            continue  # nothing known about the output: nothing to compare
        columns += _history_columns(step, columns)
        change = _diff(step, path, columns, {f["name"]: f["type"] for f in table["fields"]})
        if change is not None:
            changes.append(change)
    return changes


def _history_columns(step: Step, columns: Sequence[tuple[str, Any | None, str]]
                     ) -> list[tuple[str, Any | None, str]]:
    """The columns an SCD 2 table has beyond the model's: ``valid_from`` and ``valid_to``, of
    the ``sequence_by`` column's type (:mod:`runner.sinks.scd2`)."""
    c = step.config
    if c.sequence_by is None or c.stored_as_scd_type != 2:
        return []
    seq = next((col for col in columns if col[0] == c.sequence_by), None)
    return [] if seq is None else [(name, seq[1], seq[2]) for name in HISTORY_COLUMNS]


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
        if model_type is not None and canonical_type(model_type) != canonical_type(table[name]):
            changed.append((name, type_string(table[name]), type_string(model_type)))
    names = {name for name, _, _ in columns}
    removed = [Column(name, type_string(t)) for name, t in table.items() if name not in names]
    if not (added or changed or removed):
        return None
    return SchemaChange(model=step.name, path=step.path, table=path,
                        policy=step.config.on_schema_change, added=tuple(added),
                        added_json=tuple(added_json), removed=tuple(removed),
                        changed=tuple(changed))


def apply_schema_changes(changes: Iterable[SchemaChange], *, report: Reporter = ignore) -> None:
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
            hint="nothing was written. --full-refresh --select <model> drops that table and "
                 "rebuilds it from the checkpoint's history (a files source must still hold "
                 "those files, a Kafka topic those offsets)" if breaking else
                 "nothing was written. e.g. {{ config(on_schema_change='append_new_columns') }}"
                 f" in {refused[0].path}")
    for c in changes:
        if c.added:
            _add_columns(c)
            report(SchemaChanged(c.model, tuple((col.name, col.type) for col in c.added)))


def check_schema_changes(steps: Iterable[Step], table_path: Callable[[str], str], *,
                         output_schemas: Mapping[str, Any] | None = None,
                         report: Reporter = ignore) -> list[SchemaChange]:
    """:func:`plan_schema_changes` then :func:`apply_schema_changes`; returns the changes."""
    changes = plan_schema_changes(steps, table_path, output_schemas=output_schemas)
    apply_schema_changes(changes, report=report)
    return changes


def _add_columns(change: SchemaChange) -> None:
    try:
        add_columns(change.table, change.added_json, model=change.model)
    except SinkError as e:
        raise ExecutionError(e.message, path=change.path) from e

