"""Change data capture with full history (``stored_as_scd_type=2``).

The table holds one row per version of a key: the columns of the change that opened it,
``valid_from`` (that change's ``sequence_by`` value) and ``valid_to`` (the value of the change
that closed it: the next change of a tracked column, or a delete; NULL while current). A change
that leaves the tracked columns (``track_history_column_list``; default every non-key column
but the sequence column) as they are opens nothing.

So that a late change lands in history where its sequence puts it, whatever the batch cuts,
history is *recomputed* for the keys a batch touches, from their whole change log:

1. the batch's changes, one per (key, sequence) (a delete first, then the greatest other
   columns: :func:`runner.sinks.cdc.tie_break_columns`, so exact duplicates collapse), are
   merged into the change log, a side Delta table inside the table's folder,
   ``<table>/_runner_changes`` (hidden from Delta readers, VACUUM and OPTIMIZE like every
   ``_``-prefixed folder; dropped with the table), exactly once by the model's app id; a
   (key, sequence) already in the log is replaced only by a change that wins the same
   tie-break (a delete over a change, else greater columns), so the log holds the same change
   whether two of one (key, sequence) came in one batch or two, in either order;
2. the log of the touched keys is read back and their versions computed (:func:`history`);
3. one MERGE on (key, ``valid_from``) writes those versions and deletes every other row of the
   touched keys: each row the table can hold starts at a sequence value in the log, so a
   "delete" marker for each (key, sequence) of the log that opens no version covers them all.

Every step is a function of the change log, which only grows and does not depend on the cuts:
a replay, a kill between steps, a rebuild give the same table. The cost per batch grows with
the touched keys' history (read back in step 2), not with the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp

from runner.sinks.base import SinkSpec, quote_column
from runner.sinks.cdc import (
    DELETE_COLUMN,
    HELPER_COLUMNS,
    CdcMerge,
    greater_than_target,
    latest_changes,
    tie_break_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from runner.sinks.base import DeltaWriter

__all__ = ["CHANGES_DIR", "VALID_FROM", "VALID_TO", "changes_path", "history", "history_merge",
           "prepare"]

CHANGES_DIR = "_runner_changes"
VALID_FROM, VALID_TO = "valid_from", "valid_to"
_OPENS = "__runner_opens"


def changes_path(spec: SinkSpec) -> str:
    return f"{spec.path.rstrip('/')}/{CHANGES_DIR}"


def _q(name: str) -> str:
    return quote_column(name)


def prepare(writer: DeltaWriter, spec: SinkSpec, changes: DataFrame, batch_id: int,
            rows_hint: int | None) -> tuple[SinkSpec, DataFrame]:
    """Steps 1-2 of the module docstring; the MERGE's spec and source (or, where the table
    does not exist yet, an append spec and the versions)."""
    from pyspark.sql import functions as F

    from runner.sinks.tables import table_version

    seq = str(spec.sequence_by)
    ties = tie_break_columns(spec, changes.schema)
    log_spec = replace(spec, path=changes_path(spec), unique_key=(*spec.unique_key, seq),
                       sequence_by=None, apply_as_deletes=None, scd_type=1,
                       merge_condition=_wins(ties).sql(dialect="spark"))
    distinct = latest_changes(replace(spec, unique_key=log_spec.unique_key, tie_break=ties),
                              changes, batch_id)
    writer.write(log_spec, distinct, batch_id, rows_hint=rows_hint)
    log = _read_log(spec, distinct)
    versions = history(spec, log)
    main = replace(spec, unique_key=(*spec.unique_key, VALID_FROM))
    if table_version(spec.path) is None:
        first = versions.filter(~F.col(DELETE_COLUMN)).drop(DELETE_COLUMN)
        return replace(main, materialized="append"), first
    return main, versions


def _wins(ties: Sequence[str]) -> exp.Expr:
    """The change log's MERGE condition: the batch's change replaces the logged change of the
    same (key, sequence) when it wins the tie-break of :func:`latest_changes` (a delete over a
    change, else the greater ``ties``), the order one batch applies."""
    source, target = (exp.column(DELETE_COLUMN, table=t, quoted=True) for t in ("source",
                                                                                 "target"))
    delete_over_change = exp.and_(exp.EQ(this=source, expression=exp.true()),
                                  exp.EQ(this=target, expression=exp.false()))
    same_kind = exp.EQ(this=source.copy(), expression=target.copy())
    return exp.or_(exp.paren(delete_over_change),
                   exp.paren(exp.and_(same_kind, greater_than_target(ties))))


def _read_log(spec: SinkSpec, batch: DataFrame) -> DataFrame:
    """The change log of the keys ``batch`` touches (read with delta-rs; one key column: only
    those keys' rows leave the files)."""
    import pyarrow.dataset as ds

    from runner.sinks.delta import open_delta
    from runner.sinks.tables import table_version

    if table_version(changes_path(spec)) is None:  # no change yet: an empty batch
        return batch.limit(0)
    dataset = open_delta(changes_path(spec)).to_pyarrow_dataset()  # with its storage options
    keys = list(spec.unique_key)
    if len(keys) == 1:
        touched = batch.select(_q(keys[0])).distinct().toArrow().column(0).combine_chunks()
        # compared as the batch's type: delta-rs' dataset may type the column string_view
        # while a file's statistics are string, which pyarrow cannot compare
        wanted = ds.field(keys[0]).cast(touched.type).isin(touched)
        rows = dataset.to_table(filter=wanted, use_threads=False)
    else:
        rows = dataset.to_table(use_threads=False)
    session = batch.sparkSession
    frame = session.createDataFrame(rows)
    if len(keys) > 1:
        frame = frame.join(batch.select(*(_q(k) for k in keys)).distinct(), on=keys, how="semi")
    return frame.select(*(_q(c) for c in batch.columns))


def history(spec: SinkSpec, log: DataFrame) -> DataFrame:
    """The versions of the keys in ``log`` (one change per key and sequence, with
    ``__runner_delete``), plus a delete marker (``__runner_delete`` true, ``valid_from`` its
    sequence) for every change that opens no version."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    seq = str(spec.sequence_by)
    columns = [c for c in log.columns if c not in HELPER_COLUMNS]
    tracked = list(spec.track_history) if spec.track_history is not None else [
        c for c in columns if c not in spec.unique_key and c != seq]
    order = Window.partitionBy(*(F.col(_q(k)) for k in spec.unique_key)).orderBy(F.col(_q(seq)))
    values = F.struct(*(F.col(_q(c)) for c in tracked))
    deleted = F.col(DELETE_COLUMN)
    opens = ~deleted & (F.lag(deleted).over(order).isNull() | F.lag(deleted).over(order)
                        | ~values.eqNullSafe(F.lag(values).over(order)))
    marked = log.withColumn(_OPENS, opens)
    bounds = (marked.filter(F.col(_OPENS) | deleted)
              .withColumn(VALID_TO, F.lead(F.col(_q(seq))).over(order)))
    versions = bounds.filter(F.col(_OPENS)).select(
        *(F.col(_q(c)) for c in columns), F.col(_q(seq)).alias(VALID_FROM), F.col(VALID_TO),
        F.lit(False).alias(DELETE_COLUMN))
    markers = marked.filter(~F.col(_OPENS)).select(
        *(F.col(_q(k)) for k in spec.unique_key), F.col(_q(seq)).alias(VALID_FROM),
        F.lit(True).alias(DELETE_COLUMN))
    return versions.unionByName(markers, allowMissingColumns=True)


def history_merge(spec: SinkSpec, columns: Sequence[str]) -> CdcMerge:
    """The MERGE of :func:`history`'s rows on (key, ``valid_from``): markers delete, versions
    update or insert (``spec.unique_key`` already ends with ``valid_from``)."""
    marker = exp.column(DELETE_COLUMN, table="source", quoted=True)
    is_marker = exp.EQ(this=marker, expression=exp.true()).sql(dialect="spark")
    is_version = exp.EQ(this=marker.copy(), expression=exp.false()).sql(dialect="spark")
    values = {_q(c): f"source.{_q(c)}" for c in columns if c not in HELPER_COLUMNS}
    keys = {_q(k) for k in spec.unique_key}
    return CdcMerge(delete_when=is_marker, update_when=is_version,
                    update_set={c: v for c, v in values.items() if c not in keys},
                    insert_when=is_version, insert_values=values)
