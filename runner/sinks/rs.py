"""The ``rs`` engine: Delta commits through delta-rs (PyPI ``deltalake``).

Appends of a Spark DataFrame are Spark-native (:mod:`runner.sinks.staged`): Spark's Parquet
writer writes the data files on the executors and the driver commits them through delta-rs as
add actions with footer statistics, plus the application transaction, in one commit. No row
passes through the driver. Batches of up to ``arrow_max_rows`` input rows go through Arrow
instead (``toArrow()`` + ``write_deltalake``), where a Spark write job's fixed cost would
dominate (:func:`default_arrow_max_rows`).

Merges go through delta-rs' merge builder, because a MERGE must read and rewrite target
files, which only a Delta engine can do, and delta-rs' merge takes Arrow. The merge source of a
batch of up to ``arrow_max_rows`` input rows is collected with ``toArrow()``; a bigger one is
written by Spark as Parquet into the batch's staging folder and handed to delta-rs as a stream
of record batches (``streamed_exec``), its keys checked for duplicates from the key columns
alone, so the driver never holds the rows (the folder is removed once the merge committed;
what a crash leaves there no commit names, and VACUUM reclaims it). An Arrow table handed to
:meth:`~runner.sinks.base.DeltaWriter.write` is appended with ``write_deltalake``. The
application transaction and the runner's commit tags go into the same commit either way.
Nothing here imports pyspark at run time, so the Arrow paths work (and are tested) without a
JVM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import DeltaError

from runner.errors import SinkError
from runner.failpoints import failpoint
from runner.sinks.base import (
    DeltaWriter,
    SinkSpec,
    app_id_of_commit,
    commit_tags,
    duplicate_key_error,
    merge_predicate,
    quote_column,
)
from runner.sinks.cdc import tombstone_path
from runner.sinks.changes import merge_clauses, prepare
from runner.sinks.delta import open_delta
from runner.sinks.open_tables import OpenTables
from runner.sinks.scd2 import changes_path
from runner.sinks.schema import check_table_schema, delta_schema_json
from runner.sinks.staged import (
    collect_staged,
    commit_staged,
    remove_staged,
    staged_dataset,
    write_staged,
)
from runner.storage.ops import delta_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["ARROW_MAX_ROWS", "LOCAL_ARROW_MAX_ROWS", "RsWriter", "as_nullable",
           "default_arrow_max_rows"]

#: Appends of batches up to this many input rows go through Arrow on a cluster: a Spark write
#: job has a fixed cost that ``toArrow()`` + ``write_deltalake`` does not (docs/PERFORMANCE.md),
#: and that many rows are a few MB in the driver at most.
ARROW_MAX_ROWS = 10_000

#: The same bound on a local master (``local``, ``local[N]``, ``local[*]``): there the driver's
#: JVM is the only executor, so Spark's Parquet writer distributes nothing and costs more than
#: Arrow (docs/PERFORMANCE.md). Bigger batches still go Spark-native, so the driver's memory
#: stays bounded: at most ``parallelism`` Arrow tables of this many rows (the driver's peak per
#: append path: ``bench.scale_bench --parts memory``).
LOCAL_ARROW_MAX_ROWS = 500_000


def default_arrow_max_rows(master: str | None) -> int:
    """``delta.arrow_max_rows`` when project.yml leaves it out, for a Spark master URL.

    >>> default_arrow_max_rows("local[*]"), default_arrow_max_rows("local-cluster[2,1,1024]")
    (500000, 10000)
    """
    m = (master or "").strip()
    return LOCAL_ARROW_MAX_ROWS if m == "local" or m.startswith("local[") else ARROW_MAX_ROWS

#: Errors delta-rs and pyarrow raise for bad data, schemas or expressions.
_ENGINE_ERRORS = (DeltaError, pa.ArrowException, ValueError, TypeError)


class RsWriter(DeltaWriter):
    """Delta writer committing through delta-rs; see the module docstring."""

    engine: ClassVar[str] = "rs"
    _changes = prepare  # change data capture (runner/sinks/changes.py)

    def __init__(self, *, arrow_max_rows: int = ARROW_MAX_ROWS) -> None:
        self.arrow_max_rows = arrow_max_rows
        self.tables = OpenTables()  # kept open between batches (runner/sinks/open_tables.py)

    def committed_version(self, spec: SinkSpec) -> int | None:
        table = self._open(spec)
        return None if table is None else table.transaction_version(spec.app_id)

    def foreign_app_ids(self, spec: SinkSpec) -> set[str]:
        table = self._open(spec)
        if table is None:
            return set()
        found = {app_id_of_commit(commit) for commit in table.history()}
        return {a for a in found if a is not None and a != spec.app_id}

    def drop(self, spec: SinkSpec) -> None:
        self.tables.forget(spec.path)
        for side in (tombstone_path(spec), changes_path(spec)):  # CDC side tables: dropped
            self.tables.forget(side)                               # with the table (inside it)
        super().drop(spec)

    def _open(self, spec: SinkSpec) -> DeltaTable | None:
        """The table at ``spec.path`` at its latest version, or None when there is none yet."""
        return self.tables.get(spec.path)

    # -- engine steps ---------------------------------------------------------------------

    def _prepare(self, spec: SinkSpec, data: DataFrame | pa.Table,
                 rows_hint: int | None = None) -> DataFrame | pa.Table:
        """Appends of a DataFrame stay Spark-native (staged Parquet, one delta-rs commit),
        except tiny batches (``rows_hint <= arrow_max_rows``), which, like merges, go through
        ``toArrow()``."""
        if isinstance(data, pa.Table):
            return as_nullable(data)
        tiny = rows_hint is not None and rows_hint <= self.arrow_max_rows
        if not tiny and (spec.materialized == "append" or rows_hint is not None):
            return data  # a pyspark DataFrame, written by Spark itself
        return as_nullable(data.toArrow())

    def _append(self, spec: SinkSpec, data: Any, batch_id: int) -> tuple[int, int | None]:
        if not isinstance(data, pa.Table):
            return self._append_staged(spec, data, batch_id)
        if data.num_rows == 0:
            return 0, None
        self._before_commit(spec, batch_id)
        table = self._open(spec)  # written through this object, its version is the new one
        try:
            write_deltalake(spec.path if table is None else table, data, mode="append",
                            storage_options=delta_options(spec.path) if table is None else None,
                            partition_by=list(spec.partition_by) or None,
                            commit_properties=_commit_properties(spec, batch_id))
        except _ENGINE_ERRORS as e:
            self.tables.forget(spec.path)  # its state after a failed commit is not trusted
            raise SinkError(f"model {spec.model}: appending batch {batch_id} to "
                            f"{spec.path} failed: {e}") from e
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        if table is None:
            table = open_delta(spec.path)
        return data.num_rows, table.version()

    def _append_staged(self, spec: SinkSpec, df: DataFrame, batch_id: int, *,
                       written: bool = False) -> tuple[int, int | None]:
        """Spark writes the files (executors), delta-rs commits them with the app txn
        (``written``: Spark has already written them, unpartitioned, for this batch)."""
        schema = delta_schema_json(df.schema.jsonValue())
        table = self._open(spec)
        if table is not None:
            check_table_schema(table, schema, partition_by=spec.partition_by, model=spec.model)
        indexed = _indexed_columns(table)
        # Spark errors propagate as they are: the batch names the model that failed.
        if not written:
            write_staged(df, table_path=spec.path, app_id=spec.app_id, batch_id=batch_id,
                         partition_by=spec.partition_by)
        try:
            staged = collect_staged(spec.path, spec.app_id, batch_id,
                                    partition_by=spec.partition_by, indexed_columns=indexed)
            if not staged.actions:  # no rows: no commit (and nothing left behind)
                remove_staged(spec.path, spec.app_id, batch_id, prune_empty=True)
                return 0, None
        except _ENGINE_ERRORS + (OSError,) as e:
            raise SinkError(f"model {spec.model}: reading the files staged for batch "
                            f"{batch_id} in {spec.path} failed: {e}") from e
        self._before_commit(spec, batch_id)
        try:
            version = commit_staged(spec.path, staged, schema_json=schema, table=table,
                                    partition_by=spec.partition_by,
                                    commit_properties=_commit_properties(spec, batch_id))
        except _ENGINE_ERRORS + (OSError,) as e:
            self.tables.forget(spec.path)
            raise SinkError(f"model {spec.model}: committing batch {batch_id} to "
                            f"{spec.path} failed: {e}") from e
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        return staged.rows, version

    def _merge(self, spec: SinkSpec, data: Any, batch_id: int) -> tuple[int, int | None]:
        if not isinstance(data, pa.Table):
            return self._merge_staged(spec, data, batch_id)
        _check_unique(spec, data, batch_id)
        if data.num_rows == 0:
            return 0, None
        target = self._open(spec)
        if target is None:  # first batch: the merge is a plain create
            return self._append(spec, data, batch_id)
        self._execute_merge(spec, target, data, data.column_names, batch_id)
        return data.num_rows, target.version()

    def _merge_staged(self, spec: SinkSpec, df: DataFrame,
                      batch_id: int) -> tuple[int, int | None]:
        """A big batch's merge: Spark stages the source as Parquet, delta-rs merges it as a
        stream (the module docstring)."""
        target = self._open(spec)
        write_staged(df, table_path=spec.path, app_id=spec.app_id, batch_id=batch_id,
                     partition_by=spec.partition_by if target is None else ())
        try:
            source = staged_dataset(spec.path, spec.app_id, batch_id)
            columns = source.schema.names
            _check_keys_present(spec, columns)
            _check_unique(spec, source.to_table(columns=list(spec.unique_key)), batch_id)
            rows = source.count_rows()
        except _ENGINE_ERRORS + (OSError,) as e:
            raise SinkError(f"model {spec.model}: reading the merge source staged for batch "
                            f"{batch_id} in {spec.path} failed: {e}") from e
        if rows == 0:
            remove_staged(spec.path, spec.app_id, batch_id, prune_empty=True)
            return 0, None
        if target is None:  # first batch: the merge is a plain create, the staged files
            return self._append_staged(spec, df, batch_id, written=True)  # committed in place
        self._execute_merge(spec, target, source.scanner().to_reader(), columns, batch_id)
        remove_staged(spec.path, spec.app_id, batch_id, prune_empty=True)  # never table files
        return rows, target.version()

    def _execute_merge(self, spec: SinkSpec, target: DeltaTable, source: Any,
                       columns: Sequence[str], batch_id: int) -> None:
        """:func:`_execute_merge`; a failed merge's table state is forgotten."""
        try:
            _execute_merge(spec, target, source, columns, batch_id, self._before_commit)
        except BaseException:
            self.tables.forget(spec.path)
            raise


def _execute_merge(spec: SinkSpec, target: DeltaTable, source: Any, columns: Sequence[str],
                   batch_id: int, before_commit: Callable[[SinkSpec, int], None]) -> None:
    """MERGE ``source`` (an Arrow table or a stream of record batches, ``columns`` its
    columns) into ``target`` on the unique key, with the batch's transaction in the commit."""
    try:
        merger = target.merge(source, predicate=merge_predicate(spec.unique_key),
                              source_alias="source", target_alias="target",
                              streamed_exec=True,
                              commit_properties=_commit_properties(spec, batch_id))
        if spec.sequence_by is not None:  # change data capture (runner/sinks/cdc.py)
            clauses = merge_clauses(spec, columns)
            merger = (merger.when_matched_delete(predicate=clauses.delete_when)
                      .when_matched_update(updates=clauses.update_set,
                                           predicate=clauses.update_when)
                      .when_not_matched_insert(updates=clauses.insert_values,
                                               predicate=clauses.insert_when))
        else:
            updates = _matched_updates(spec, columns)
            if updates:
                merger = merger.when_matched_update(updates=updates,
                                                    predicate=spec.merge_condition)
            merger = merger.when_not_matched_insert_all()
        before_commit(spec, batch_id)
        merger.execute()
    except _ENGINE_ERRORS as e:
        raise SinkError(f"model {spec.model}: merging batch {batch_id} into "
                        f"{spec.path} failed: {e}") from e
    failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)


def as_nullable(table: pa.Table) -> pa.Table:
    """``table`` with every field (nested too) nullable, as delta-spark creates tables.

    Spark marks some result columns NOT NULL; a Delta table created from such a schema would
    reject a later batch that has a null there. Only the schema changes, not the data.
    """
    schema = pa.schema([_nullable_field(f) for f in table.schema],
                       metadata=table.schema.metadata)
    return table if schema.equals(table.schema) else table.cast(schema)


def _nullable_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, _nullable_type(f.type), nullable=True, metadata=f.metadata)


def _nullable_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_nullable_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field, _nullable_field(t.item_field))
    if pa.types.is_large_list(t):
        return pa.large_list(_nullable_field(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(_nullable_field(t.value_field))
    return t


def _indexed_columns(table: DeltaTable | None) -> int:
    """The table's ``delta.dataSkippingNumIndexedCols`` (Delta's default: 32)."""
    if table is None:
        return 32
    value = table.metadata().configuration.get("delta.dataSkippingNumIndexedCols")
    try:
        return int(value) if value is not None else 32
    except ValueError:
        return 32


def _commit_properties(spec: SinkSpec, batch_id: int) -> CommitProperties:
    return CommitProperties(
        app_transactions=[Transaction(app_id=spec.app_id, version=batch_id)],
        custom_metadata=commit_tags(spec.app_id, batch_id),
    )


def _matched_updates(spec: SinkSpec, columns: Sequence[str]) -> dict[str, str]:
    """Column -> expression for a key match: ``merge_update``, or every non-key column."""
    if spec.merge_update is not None:
        return {quote_column(c): e for c, e in spec.merge_update.items()}
    return {quote_column(c): f"source.{quote_column(c)}"
            for c in columns if c not in spec.unique_key}


def _check_keys_present(spec: SinkSpec, columns: Sequence[str]) -> None:
    """Raise :class:`SinkError` when a ``unique_key`` column is not in the model's output."""
    missing = [k for k in spec.unique_key if k not in columns]
    if missing:
        raise SinkError(f"model {spec.model}: unique_key column(s) {', '.join(missing)} "
                        f"not in the model's output (columns: {', '.join(columns)})")


def _check_unique(spec: SinkSpec, data: pa.Table, batch_id: int) -> None:
    """Raise :class:`SinkError` when the merge source has two rows for one key (``data``: the
    source, or its key columns)."""
    _check_keys_present(spec, data.column_names)
    if data.num_rows < 2:
        return
    keys = list(spec.unique_key)
    try:
        counts = data.select(keys).group_by(keys).aggregate([([], "count_all")])
    except pa.ArrowException as e:
        raise SinkError(f"model {spec.model}: cannot check unique_key "
                        f"({', '.join(keys)}) for duplicates: {e}") from e
    dupes = counts.filter(pc.greater(counts["count_all"], 1))
    if dupes.num_rows:
        row = dupes.slice(0, 1).to_pylist()[0]
        raise duplicate_key_error(spec, tuple(row[k] for k in keys), row["count_all"],
                                  batch_id)
