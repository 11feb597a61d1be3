"""Spark-native appends committed by delta-rs: the ``rs`` engine's append path.

Spark writes a model's batch as Parquet files with its own writer (on the executors, in
parallel, no rows through the driver) into a folder of the table directory that belongs to one
(app id, batch id)::

    <table>/batches/<app id>/<batch id>/[<col>=<value>/...]part-*.parquet

The driver then lists those files, reads their Parquet footers (row counts, min/max/null
counts) and commits them to the Delta log through delta-rs as add actions, together with the
application transaction, in ONE commit. Until that commit the files are invisible: Delta
readers read only the files the log names. A batch that crashed before its commit left files
that no commit names; the replay (same app id, same batch id) deletes the batch's folder before
Spark writes again, so they never pile up. Committed files stay where they were written (a
rename is a copy on object stores): the folder is a namespace, and its files are ordinary table
files from then on.

The folder name deliberately does not start with ``_``: Delta's VACUUM (delta-rs and
delta-spark) skips ``_``-prefixed folders, so files there that a later OPTIMIZE removes from the
table would never be reclaimed (``tests/spark/test_staged_append.py`` checks that VACUUM
reclaims them).

This module imports no pyspark at import time; the Spark DataFrame is duck-typed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions

from runner.errors import SinkError
from runner.sinks.delta import open_delta
from runner.sinks.tables import STAGING_DIR
from runner.storage.objects import SCHEMES, ObjectPath
from runner.storage.ops import as_location, delta_options

if TYPE_CHECKING:
    from deltalake import CommitProperties
    from pyspark.sql import DataFrame

__all__ = [
    "STAGING_DIR",
    "StagedFiles",
    "collect_staged",
    "commit_staged",
    "file_stats",
    "remove_staged",
    "staged_dataset",
    "staging_path",
    "write_staged",
]

#: Top-level folder, inside the table directory, of the files Spark writes for a batch.

_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_DEFAULT_INDEXED_COLS = 32  # Delta's default delta.dataSkippingNumIndexedCols
_STRING_STATS_CHARS = 32  # like delta-spark: bounds of longer strings are prefixes
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class StagedFiles:
    """The Parquet files Spark wrote for one batch, ready to commit.

    Attributes:
        actions: one Delta add action per non-empty file (path relative to the table).
        rows: total rows, from the footers.
        files: number of files (empty ones included) found in the staging folder.
    """

    actions: tuple[AddAction, ...]
    rows: int
    files: int


def staging_path(table_path: str, app_id: str, batch_id: int) -> str:
    """The folder of batch ``batch_id`` of ``app_id`` inside the table at ``table_path``."""
    return f"{table_path.rstrip('/')}/{_relative_staging(app_id, batch_id)}"


def _relative_staging(app_id: str, batch_id: int) -> str:
    return f"{STAGING_DIR}/{_UNSAFE.sub('_', app_id)}/{batch_id}"


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem for ``path`` (local paths, ``file://``, ``s3://``, ...) and the
    path inside it. S3 gets the bucket's settings (:mod:`runner.storage.settings`: the
    environment and project.yml's ``storage:``), as delta-rs and Spark do."""
    if "://" not in path:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    where = as_location(path)
    if isinstance(where, ObjectPath) and SCHEMES[where.scheme] == "s3":
        return _s3_filesystem(where), f"{where.bucket}/{where.key}"
    fs, inner = pafs.FileSystem.from_uri(path)
    return fs, str(inner)


def _s3_filesystem(where: ObjectPath) -> pafs.FileSystem:
    from runner.storage.settings import storage_settings

    opts = storage_settings(str(where), where.options).resolved_options()
    kwargs: dict[str, Any] = {"access_key": opts.get("aws_access_key_id"),
                              "secret_key": opts.get("aws_secret_access_key"),
                              "session_token": opts.get("aws_session_token"),
                              "region": opts.get("aws_region")}
    endpoint = opts.get("aws_endpoint")
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        kwargs.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v})


def remove_staged(table_path: str, app_id: str, batch_id: int, *,
                  prune_empty: bool = False) -> None:
    """Delete batch ``batch_id``'s staging folder (what a crashed attempt left); no error when
    there is none. Never call this for a committed batch: its files are table files.

    Args:
        prune_empty: also remove the folders above it, up to the table directory itself,
            that this leaves empty (after a batch of no rows: no table appears then).
    """
    fs, path = _filesystem(staging_path(table_path, app_id, batch_id))
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        fs.delete_dir(path)
    if not prune_empty:
        return
    _, table = _filesystem(table_path)
    folder = path
    while True:
        folder = folder.rsplit("/", 1)[0]
        if len(folder) < len(table.rstrip("/")) or not folder:
            return
        listing = fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        if listing or fs.get_file_info(folder).type != pafs.FileType.Directory:
            return
        fs.delete_dir(folder)


def staged_dataset(table_path: str, app_id: str, batch_id: int) -> Any:
    """The Parquet files of batch ``batch_id``'s staging folder as a ``pyarrow.dataset``
    (Spark's ``_SUCCESS`` and ``.crc`` files left out; ``<col>=<value>`` folders as columns):
    read lazily, batch by batch."""
    import pyarrow.dataset as pads

    fs, path = _filesystem(staging_path(table_path, app_id, batch_id))
    return pads.dataset(path, format="parquet", filesystem=fs, partitioning="hive")


def write_staged(df: DataFrame, *, table_path: str, app_id: str, batch_id: int,
                 partition_by: Sequence[str] = ()) -> str:
    """Write ``df`` as Parquet into the batch's staging folder, replacing what a crashed
    attempt of the same batch left there. Runs one Spark job (the executors write).

    Timestamps are written as ``TIMESTAMP_MICROS`` (never INT96): the session's
    ``spark.sql.parquet.outputTimestampType`` is set to it when it says otherwise.

    Returns:
        The staging folder.
    """
    spark = df.sparkSession
    if spark.conf.get("spark.sql.parquet.outputTimestampType", "") != "TIMESTAMP_MICROS":
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    remove_staged(table_path, app_id, batch_id)
    target = staging_path(table_path, app_id, batch_id)
    writer = (df.write.mode("overwrite").format("parquet")
              # Tasks move their files straight into the folder (no second rename at job
              # commit), no _SUCCESS marker: the Delta commit is what makes files visible.
              .option("mapreduce.fileoutputcommitter.algorithm.version", "2")
              .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false"))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(target)
    return target


def collect_staged(table_path: str, app_id: str, batch_id: int, *,
                   partition_by: Sequence[str] = (),
                   indexed_columns: int = _DEFAULT_INDEXED_COLS) -> StagedFiles:
    """List the batch's staged Parquet files and build their add actions from the footers.

    Files of no rows are left out (Spark writes one schema-only file for an empty result).
    Hidden names (``_SUCCESS``, ``.crc`` checksums, ``_temporary``) are ignored.
    """
    fs, root = _filesystem(table_path)
    relative = _relative_staging(app_id, batch_id)
    base = f"{root.rstrip('/')}/{relative}"
    if fs.get_file_info(base).type == pafs.FileType.NotFound:
        return StagedFiles((), 0, 0)
    actions: list[AddAction] = []
    rows = files = 0
    for info in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        if info.type != pafs.FileType.File:
            continue
        inside = info.path[len(base):].lstrip("/")
        parts = inside.split("/")
        hidden = [p for p in parts[:-1] if p.startswith(("_", ".")) and "=" not in p]
        if hidden or parts[-1].startswith(("_", ".")) or not parts[-1].endswith(".parquet"):
            continue  # _temporary/, .crc, _SUCCESS; partition folders (col=...) are kept
        files += 1
        with fs.open_input_file(info.path) as f:
            metadata = pq.ParquetFile(f).metadata
        if metadata.num_rows == 0:
            continue
        rows += metadata.num_rows
        actions.append(AddAction(
            path=f"{relative}/{inside}",  # delta-rs percent-encodes it in the log
            size=info.size,
            partition_values=_partition_values(parts[:-1], partition_by, inside),
            modification_time=info.mtime_ns // 1_000_000 if info.mtime_ns else 0,
            data_change=True,
            stats=json.dumps(file_stats(metadata, indexed_columns=indexed_columns),
                             separators=(",", ":")),
        ))
    return StagedFiles(tuple(actions), rows, files)


def _partition_values(dirs: list[str], partition_by: Sequence[str],
                      where: str) -> dict[str, str | None]:
    """``{column: value}`` from Hive-style ``col=value`` folders (Spark's escaping undone)."""
    values: dict[str, str | None] = {}
    for d in dirs:
        key, sep, value = d.partition("=")
        if not sep:
            raise SinkError(f"unexpected folder {d!r} in staged file {where}")
        raw = unquote(value)
        values[unquote(key)] = None if raw == _HIVE_NULL else raw
    if list(values) != list(partition_by):
        raise SinkError(f"staged file {where} has partition folders {list(values)}, "
                        f"expected {list(partition_by)}")
    return values


# -- statistics -----------------------------------------------------------------------------


def file_stats(metadata: pq.FileMetaData, *,
               indexed_columns: int = _DEFAULT_INDEXED_COLS) -> dict[str, Any]:
    """Delta per-file statistics from a Parquet footer.

    ``numRecords``, and for the first ``indexed_columns`` leaf columns (negative: all) outside
    arrays and maps: ``nullCount``, and ``minValues``/``maxValues`` where every row group
    has them. Nested struct fields nest, as in delta-spark and delta-rs. Bounds are kept only
    where they stay exact or conservative in JSON: timestamps (UTC) to the millisecond (min
    rounded down, max up), strings up to 32 characters (longer: the min's prefix, no max),
    numbers, dates; not booleans, decimals, binary, NaN/infinite floats or TIMESTAMP_NTZ.
    """
    stats: dict[str, Any] = {"numRecords": metadata.num_rows,
                             "minValues": {}, "maxValues": {}, "nullCount": {}}
    schema = metadata.schema.to_arrow_schema()
    groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
    budget = indexed_columns if indexed_columns >= 0 else math.inf
    for index, path, dtype in _leaves(schema):
        if budget <= 0:
            break
        if path is None:  # inside an array or a map: no statistics in Delta
            continue
        budget -= 1
        columns = [(g.num_rows, g.column(index).statistics) for g in groups]
        if all(s is not None and s.has_null_count for _, s in columns):
            _put(stats["nullCount"], path, sum(s.null_count for _, s in columns))
        ranged = [s for n, s in columns
                  if not (s is not None and s.has_null_count and s.null_count == n)]
        if not ranged or not all(s is not None and s.has_min_max for s in ranged):
            continue  # all null (no bounds), or a row group without statistics (unknown)
        low = _bound(min(s.min for s in ranged), dtype, upper=False)
        high = _bound(max(s.max for s in ranged), dtype, upper=True)
        if low is not None:
            _put(stats["minValues"], path, low)
        if high is not None:
            _put(stats["maxValues"], path, high)
    return stats


def _leaves(schema: pa.Schema) -> Iterator[tuple[int, tuple[str, ...] | None, pa.DataType]]:
    """(Parquet leaf column index, field path or None inside a list/map, type), in the
    footer's depth-first column order (which no dotted name can confuse)."""
    counter = iter(range(1 << 30))

    def walk(t: pa.DataType, path: tuple[str, ...] | None
             ) -> Iterator[tuple[int, tuple[str, ...] | None, pa.DataType]]:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                child = t.field(i)
                yield from walk(child.type, None if path is None else (*path, child.name))
        elif pa.types.is_map(t):
            yield from walk(t.key_type, None)
            yield from walk(t.item_type, None)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            yield from walk(t.value_type, None)
        else:
            yield next(counter), path, t

    for f in schema:
        yield from walk(f.type, (f.name,))


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for name in path[:-1]:
        tree = tree.setdefault(name, {})
    tree[path[-1]] = value


def _bound(value: Any, dtype: pa.DataType, *, upper: bool) -> Any:
    """``value`` as a Delta statistics JSON value, or None when not representable safely."""
    if value is None or pa.types.is_boolean(dtype) or pa.types.is_decimal(dtype):
        return None
    if pa.types.is_timestamp(dtype):
        if dtype.tz is None or not isinstance(value, dt.datetime):
            return None  # TIMESTAMP_NTZ (or a nanosecond value pyarrow left as int)
        return _millis(value, upper=upper)
    if pa.types.is_date(dtype) and isinstance(value, dt.date):
        return value.isoformat()
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        if not isinstance(value, str):
            return None
        if len(value) <= _STRING_STATS_CHARS:
            return value
        return None if upper else value[:_STRING_STATS_CHARS]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # binary, intervals, anything exotic
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _millis(value: dt.datetime, *, upper: bool) -> str:
    """An instant as ``YYYY-MM-DDTHH:MM:SS.mmmZ``, rounded down (min) or up (max)."""
    value = value.astimezone(dt.UTC)
    micros = value.microsecond
    floor = value.replace(microsecond=micros - micros % 1000)
    if upper and micros % 1000:
        floor += dt.timedelta(milliseconds=1)
    return floor.strftime("%Y-%m-%dT%H:%M:%S.") + f"{floor.microsecond // 1000:03d}Z"


# -- commit ---------------------------------------------------------------------------------


def commit_staged(table_path: str, staged: StagedFiles, *, schema_json: Mapping[str, Any],
                  table: DeltaTable | None, partition_by: Sequence[str],
                  commit_properties: CommitProperties) -> int:
    """Commit the staged files as one Delta append carrying ``commit_properties`` (the app
    transaction and the runner's tags); create the table when there is none.

    Args:
        table: the table as opened (and checked with
            :func:`runner.sinks.schema.check_table_schema`) before the write, or None when
            there was none: then the table is created with ``schema_json``.

    Returns:
        The committed table version.
    """
    if table is None:
        create_table_with_add_actions(
            table_path, Schema.from_json(json.dumps(schema_json)), list(staged.actions),
            mode="append", partition_by=list(partition_by) or None,
            storage_options=delta_options(table_path), commit_properties=commit_properties)
        return open_delta(table_path).version()
    table.create_write_transaction(
        list(staged.actions), mode="append", schema=table.schema(),
        partition_by=list(partition_by) or None, commit_properties=commit_properties)
    table.update_incremental()  # the object still shows the version it was opened at
    return table.version()
