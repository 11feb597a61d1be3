"""Change data capture on a merge model (SCD type 1): ``sequence_by``, ``apply_as_deletes``.

A CDC model yields *changes*, any number per key in a batch. Per key, the change with the
greatest ``sequence_by`` value wins, whatever the order and the batches they arrive in; at
equal sequence values a delete wins, and between two changes that are not deletes the one
whose other columns are greatest (:func:`tie_break_columns`: compared one by one in name
order, NULL lowest), so that the same changes give the same table in one batch or in two,
in either order. The table holds the live rows only, so any Delta reader
sees the current state; the deletes are remembered as *tombstones* (key, sequence) in a side
Delta table inside the table's folder, ``<table>/_runner_tombstones`` (Delta readers, VACUUM
and OPTIMIZE ignore ``_``-prefixed folders; a ``--full-refresh`` drops it with the table).

Per batch (:meth:`runner.sinks.base.DeltaWriter.write`):

1. :func:`latest_changes`: the latest change per key, with ``__runner_delete`` (the
   ``apply_as_deletes`` predicate, NULL as false); a NULL sequence value fails the model.
2. the tombstones of the batch's deletes are merged into the side table, keeping the greatest
   sequence per key: an ordinary merge sink (:func:`tombstone_spec`), with the model's app id,
   so it is exactly once by the same (app id, batch id) protocol as every table.
3. :func:`with_tombstones`: the latest changes with ``__runner_tombstone``, the key's
   tombstone sequence (NULL: none), then one MERGE into the table (:func:`cdc_merge`): a
   delete at least as new as the row deletes it, a newer change updates it, and a change of an
   absent key is inserted only when newer than its tombstone. Where the table does not exist
   yet, the rows that MERGE would insert are appended (:func:`first_rows`).

Every step keeps "the greatest sequence wins" (a max), so the result of a whole change log is
the same for any cut of it into batches, any replay, and either order of steps 2 and 3 (a
replay after step 2 committed reads the batch's own tombstones, which are older than any change
of the batch that step 3 inserts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sqlglot import exp

from runner.errors import NullSequenceError
from runner.sinks.base import SinkSpec, quote_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from runner.sinks.base import DeltaWriter

__all__ = ["DELETE_COLUMN", "HELPER_COLUMNS", "TOMBSTONE_COLUMN", "TOMBSTONES_DIR", "CdcMerge",
           "cdc_merge", "first_rows", "greater_than_target", "latest_changes", "prepare",
           "read_tombstones", "tie_break_columns", "tombstone_path", "tombstone_spec",
           "tombstones_of", "with_tombstones"]

#: The side table's folder inside the model's table folder.
TOMBSTONES_DIR = "_runner_tombstones"
DELETE_COLUMN = "__runner_delete"
TOMBSTONE_COLUMN = "__runner_tombstone"
HELPER_COLUMNS = (DELETE_COLUMN, TOMBSTONE_COLUMN)


def tombstone_path(spec: SinkSpec) -> str:
    """Where the tombstones of ``spec``'s table live (a folder inside the table's)."""
    return f"{spec.path.rstrip('/')}/{TOMBSTONES_DIR}"


def _col(table: str | None, name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True),
                      table=exp.to_identifier(table) if table else None)


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def prepare(writer: DeltaWriter, spec: SinkSpec, changes: DataFrame, batch_id: int,
            rows_hint: int | None) -> tuple[SinkSpec, DataFrame]:
    """Steps 1-3 of the module docstring: the tombstones written, then the MERGE's spec and
    source (or, where the table does not exist yet, an append spec and its rows)."""
    from runner.sinks.tables import table_version

    spec = replace(spec, tie_break=tie_break_columns(spec, changes.schema))
    latest = latest_changes(spec, changes, batch_id)
    source = with_tombstones(spec, latest, read_tombstones(spec, changes.sparkSession))
    writer.write(tombstone_spec(spec), tombstones_of(spec, latest), batch_id,
                 rows_hint=rows_hint)
    if table_version(spec.path) is None:
        return first_rows(spec, source)
    return spec, source


def tombstone_spec(spec: SinkSpec) -> SinkSpec:
    """The tombstones' sink: a merge on the model's key keeping the greatest sequence."""
    seq = str(spec.sequence_by)
    newer = exp.GT(this=_col("source", seq), expression=_col("target", seq))
    return SinkSpec(model=spec.model, path=tombstone_path(spec), app_id=spec.app_id,
                    materialized="merge", unique_key=spec.unique_key,
                    merge_condition=_sql(newer))


def tie_break_columns(spec: SinkSpec, schema: StructType) -> tuple[str, ...]:
    """The columns that decide between two changes of one key with one sequence value, in the
    order they are compared: every column but the key, the sequence and the helpers, by name
    (a model that reorders its SELECT keeps its order), except those no engine can order (a
    map, or a struct or array holding one). The order is the same in Spark's window (one batch)
    and in either engine's MERGE condition (across batches): :func:`greater_than_target`."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    def orderable(t: object) -> bool:
        if isinstance(t, MapType):
            return False
        if isinstance(t, ArrayType):
            return orderable(t.elementType)
        if isinstance(t, StructType):
            return all(orderable(f.dataType) for f in t.fields)
        return True

    skip = {*spec.unique_key, str(spec.sequence_by), *HELPER_COLUMNS}
    return tuple(sorted(f.name for f in schema.fields
                        if f.name not in skip and orderable(f.dataType)))


def greater_than_target(columns: Sequence[str]) -> exp.Expr:
    """``source`` > ``target`` over ``columns`` compared one by one (the first that differs
    decides; NULL below every value), as SQL both engines read; FALSE when all are equal:
    per column ``COALESCE(s > t, s IS NOT NULL AND t IS NULL) OR ((s <=> t) AND <the rest>)``.

    >>> "COALESCE(source.`a` > target.`a`" in greater_than_target(["a"]).sql(dialect="spark")
    True
    """
    if not columns:
        return exp.false()
    s, t = _col("source", columns[0]), _col("target", columns[0])
    greater = exp.func("COALESCE", exp.GT(this=s, expression=t),
                       exp.and_(exp.not_(exp.Is(this=s.copy(), expression=exp.null())),
                                exp.Is(this=t.copy(), expression=exp.null())))
    same = exp.NullSafeEQ(this=s.copy(), expression=t.copy())
    return exp.paren(exp.or_(greater, exp.and_(exp.paren(same),
                                               exp.paren(greater_than_target(columns[1:])))))


def latest_changes(spec: SinkSpec, changes: DataFrame, batch_id: int) -> DataFrame:
    """Per key the change with the greatest sequence value (at equal values a delete first,
    then the greatest :attr:`~runner.sinks.base.SinkSpec.tie_break` columns), with
    ``__runner_delete``, computed once (a local checkpoint: the later steps read it several
    times).

    Raises:
        NullSequenceError: a change has no sequence value (the model's fault: parked).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    seq = F.col(_sql(_col(None, str(spec.sequence_by))))
    is_delete = (F.coalesce(F.expr(spec.apply_as_deletes), F.lit(False))
                 if spec.apply_as_deletes else F.lit(False))
    keys = [F.col(_sql(_col(None, k))) for k in spec.unique_key]
    # NULLs first: a key with a NULL sequence value keeps it, for the check below
    ties = [F.col(_sql(_col(None, c))).desc_nulls_last() for c in spec.tie_break]
    order = Window.partitionBy(*keys).orderBy(seq.desc_nulls_first(),
                                              F.col(DELETE_COLUMN).desc(), *ties)
    latest = (changes.withColumn(DELETE_COLUMN, is_delete)
              .withColumn("__runner_rank", F.row_number().over(order))
              .filter(F.col("__runner_rank") == 1).drop("__runner_rank")
              .localCheckpoint(eager=True))  # computed once; read by every later step
    if latest.filter(seq.isNull()).limit(1).count():
        raise NullSequenceError(
            f"model {spec.model}: a change in batch {batch_id} has a NULL sequence_by value "
            f"({spec.sequence_by}); every change needs one to be ordered",
            hint=f"filter such rows out in the model, or coalesce {spec.sequence_by} to a value")
    return latest


def tombstones_of(spec: SinkSpec, latest: DataFrame) -> DataFrame:
    """The batch's tombstones: key and sequence of every winning delete."""
    from pyspark.sql import functions as F

    return latest.filter(F.col(DELETE_COLUMN)).select(
        *(F.col(_sql(_col(None, c))) for c in (*spec.unique_key, str(spec.sequence_by))))


def with_tombstones(spec: SinkSpec, latest: DataFrame, tombstones: DataFrame | None) -> DataFrame:
    """``latest`` with ``__runner_tombstone``: its key's tombstone sequence, NULL if none
    (``tombstones``: the side table's rows, None when it has none)."""
    from pyspark.sql import functions as F

    seq_type = latest.schema[str(spec.sequence_by)].dataType
    if tombstones is None:
        return latest.withColumn(TOMBSTONE_COLUMN, F.lit(None).cast(seq_type))
    renamed = tombstones.select(
        *(F.col(_sql(_col(None, k))).alias(f"__runner_key{i}")
          for i, k in enumerate(spec.unique_key)),
        F.col(_sql(_col(None, str(spec.sequence_by)))).cast(seq_type).alias(TOMBSTONE_COLUMN))
    on = [latest[_sql(_col(None, k))].eqNullSafe(renamed[f"__runner_key{i}"])
          for i, k in enumerate(spec.unique_key)]
    joined = latest.join(renamed, on=on, how="left")
    return joined.drop(*(f"__runner_key{i}" for i in range(len(spec.unique_key))))


def first_rows(spec: SinkSpec, source: DataFrame) -> tuple[SinkSpec, DataFrame]:
    """What a MERGE of ``source`` into an empty table would insert, as an append (it creates
    the table): the live changes newer than their tombstones, without the helper columns."""
    from pyspark.sql import functions as F

    seq = F.col(_sql(_col(None, str(spec.sequence_by))))
    tomb = F.col(TOMBSTONE_COLUMN)
    live = source.filter(~F.col(DELETE_COLUMN) & (tomb.isNull() | (seq > tomb)))
    return replace(spec, materialized="append"), live.drop(*HELPER_COLUMNS)


@dataclass(frozen=True)
class CdcMerge:
    """The clauses of a CDC model's MERGE, as SQL both engines read (``source``/``target``
    aliases); in this order, the first whose condition holds applies."""

    delete_when: str
    update_when: str
    update_set: dict[str, str]
    insert_when: str
    insert_values: dict[str, str]


def cdc_merge(spec: SinkSpec, columns: Sequence[str]) -> CdcMerge:
    """The MERGE clauses of ``spec`` for a source with ``columns`` (helper columns included)."""
    seq = str(spec.sequence_by)
    model_columns = [c for c in columns if c not in HELPER_COLUMNS]
    is_delete = exp.EQ(this=_col("source", DELETE_COLUMN), expression=exp.true())
    not_delete = exp.EQ(this=_col("source", DELETE_COLUMN), expression=exp.false())
    newer = exp.paren(exp.or_(  # newer, or as new and greater (the tie-break)
        exp.GT(this=_col("source", seq), expression=_col("target", seq)),
        exp.and_(exp.EQ(this=_col("source", seq), expression=_col("target", seq)),
                 greater_than_target(spec.tie_break))))
    as_new = exp.GTE(this=_col("source", seq), expression=_col("target", seq))
    tomb = _col("source", TOMBSTONE_COLUMN)
    after_tomb = exp.paren(exp.or_(exp.Is(this=tomb, expression=exp.null()),
                                   exp.GT(this=_col("source", seq), expression=tomb.copy())))
    values = {c: _sql(_col("source", c)) for c in model_columns}
    return CdcMerge(
        delete_when=_sql(exp.and_(is_delete, as_new)),
        update_when=_sql(exp.and_(not_delete.copy(), newer)),
        update_set={quote_column(c): v for c, v in values.items() if c not in spec.unique_key},
        insert_when=_sql(exp.and_(not_delete.copy(), after_tomb)),
        insert_values={quote_column(c): v for c, v in values.items()})


def read_tombstones(spec: SinkSpec, session: SparkSession) -> DataFrame | None:
    """The side table's tombstones as a DataFrame (read with delta-rs, which either engine's
    tables open with), or None when there are none yet."""
    from runner.sinks.tables import read_table, table_version

    path = tombstone_path(spec)
    if table_version(path) is None:
        return None
    rows = read_table(path)
    return session.createDataFrame(rows) if rows.num_rows else None
