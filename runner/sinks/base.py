"""The Delta writer interface shared by both engines, and the exactly-once protocol.

Every commit a writer makes carries an application transaction ``(spec.app_id, batch_id)`` in
the same atomic commit, plus a tag naming the app id in the commit info. Before writing, a
writer skips a sink whose table already records a version ``>= batch_id`` for that app id, so a
replayed micro-batch never writes twice (appends and merges alike). :class:`DeltaWriter.write`
implements that protocol once; an engine supplies how to append, how to merge, and how to
find the committed version.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from runner.errors import ConfigError, DuplicateKeyError, SinkError
from runner.failpoints import failpoint
from runner.sinks.tables import check_droppable
from runner.storage.ops import as_location, rmtree

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from runner.compile.plan import Plan

__all__ = [
    "APP_ID_KEY",
    "ONE_TASK_MAX_ROWS",
    "BATCH_ID_KEY",
    "SinkSpec",
    "WriteResult",
    "DeltaWriter",
    "app_id",
    "app_id_of_commit",
    "batch_id_of_commit",
    "commit_tags",
    "duplicate_key_error",
    "merge_predicate",
    "quote_column",
    "sink_specs",
]

#: Commit-info keys the runner adds to every commit it makes (delta-rs custom metadata).
APP_ID_KEY = "runner.app_id"
BATCH_ID_KEY = "runner.batch_id"


@dataclass(frozen=True)
class SinkSpec:
    """Where and how one model (or the dead-letter table) is written.

    Lists passed for ``unique_key``/``partition_by`` are normalised to tuples.
    """

    model: str
    path: str
    app_id: str
    materialized: Literal["append", "merge", "kafka"] = "append"
    unique_key: tuple[str, ...] = ()
    merge_update: Mapping[str, str] | None = field(default=None, hash=False)
    merge_condition: str | None = None
    partition_by: tuple[str, ...] = ()
    #: Change data capture (:mod:`runner.sinks.cdc`): the column ordering the changes, and
    #: the SQL predicate marking a change as a delete.
    sequence_by: str | None = None
    apply_as_deletes: str | None = None
    scd_type: Literal[1, 2] = 1
    track_history: tuple[str, ...] | None = None
    #: The columns that order two changes of one key with one sequence value (greatest wins,
    #: NULL lowest, column by column): :func:`runner.sinks.cdc.tie_break_columns`.
    tie_break: tuple[str, ...] = ()
    #: materialized='kafka': the topic (None: each row's ``topic`` column routes it)
    topic: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "unique_key", _as_tuple(self.unique_key))
        object.__setattr__(self, "partition_by", _as_tuple(self.partition_by))
        if self.materialized not in ("append", "merge", "kafka"):
            raise SinkError(f"model {self.model}: unknown materialization "
                            f"{self.materialized!r} (expected 'append', 'merge' or 'kafka')")
        if self.materialized == "merge" and not self.unique_key:
            raise SinkError(f"model {self.model}: a merge model needs a unique_key")
        if not self.app_id:
            raise SinkError(f"model {self.model}: empty Delta application id")


def app_id(pipeline: str, model: str, run_id: str) -> str:
    """The Delta application id of one table: unique per (pipeline, model, ``run_id``).

    The stream's ``run_id`` is its checkpoint's query id: a new checkpoint restarts batch ids
    at 0, so it must never reuse the app ids of another.

    >>> app_id("app_events", "request_logs", "0b5c")
    'app_events.request_logs.0b5c'
    """
    return f"{pipeline}.{model}.{run_id}"


def sink_specs(plan: Plan, *, table_path: Callable[[str], str],
               run_id: str) -> tuple[dict[str, SinkSpec], SinkSpec]:
    """Every model's sink, by model name, and the dead-letter table's.

    Args:
        plan: the compiled plan: its models' materialization, keys and partitioning.
        table_path: table name -> where its Delta table lives.
        run_id: the third part of every :func:`app_id`.
    """
    sinks = {}
    for step in plan.steps:
        c = step.config
        sinks[step.name] = SinkSpec(
            model=step.name, path=table_path(step.name),
            app_id=app_id(plan.project, step.name, run_id), materialized=c.materialized,
            unique_key=c.unique_key, merge_update=c.merge_update,
            merge_condition=c.merge_condition, partition_by=c.partition_by,
            sequence_by=c.sequence_by, apply_as_deletes=c.apply_as_deletes,
            scd_type=c.stored_as_scd_type, track_history=c.track_history_column_list,
            topic=c.topic)
    dead = SinkSpec(model=plan.dead_letter, path=table_path(plan.dead_letter),
                    app_id=app_id(plan.project, plan.dead_letter, run_id))
    return sinks, dead


#: A batch of at most this many input rows is written by one Spark task per table (a
#: ``coalesce(1)`` of the model's rows, no shuffle): on a small batch each task's fixed cost
#: (scheduling, a Parquet writer, on delta-spark a file and its statistics) outweighs the
#: work, several concurrent model writes share the cores anyway, and each batch adds one file
#: per table rather than one per source partition (docs/KAFKA.md).
ONE_TASK_MAX_ROWS = 10_000


@dataclass(frozen=True)
class WriteResult:
    """What one sink write did in one micro-batch."""

    model: str
    rows: int
    skipped: bool
    version: int | None
    seconds: float


class DeltaWriter(ABC):
    """Writes micro-batch results to Delta tables, exactly once per (app id, batch id).

    Subclasses implement :meth:`_append`, :meth:`_merge`, :meth:`committed_version` and
    :meth:`foreign_app_ids`, and may override :meth:`_prepare`; :meth:`write` is the shared
    skip-then-write protocol.
    """

    engine: ClassVar[str]
    #: Called right before each commit: raises when this process may no longer write (the
    #: checkpoint's lease in an object store was lost or is about to expire:
    #: :meth:`runner.checkpoint.lease.ObjectLease.check`). The stream sets it.
    permit: Callable[[], None] = staticmethod(lambda: None)

    def _before_commit(self, spec: SinkSpec, batch_id: int) -> None:
        failpoint(f"sink.before_commit:{spec.model}", batch_id=batch_id)
        self.permit()

    def write(self, spec: SinkSpec, data: DataFrame | pa.Table, batch_id: int, *,
              rows_hint: int | None = None) -> WriteResult:
        """Write ``data`` as batch ``batch_id`` of ``spec``, or skip it if already committed.

        Args:
            data: the rows: a Spark DataFrame (what the stream writes), or an Arrow table.
            rows_hint: about how many rows the batch's input had, when known (an engine may
                pick its way of writing by size); None when unknown.

        Raises:
            SinkError: the table could not be written (names the model).
        """
        started = time.perf_counter()
        if batch_id < 0:
            raise SinkError(f"model {spec.model}: negative batch id {batch_id}")
        committed = self.committed_version(spec)
        if committed is not None and committed >= batch_id:
            return WriteResult(spec.model, 0, True, None, time.perf_counter() - started)
        if rows_hint is not None and rows_hint <= ONE_TASK_MAX_ROWS and _is_dataframe(data):
            data = data.coalesce(1)  # a small batch: one task and one file per table
        if spec.sequence_by is not None:
            spec, data = self._changes(spec, data, batch_id, rows_hint)
        prepared = self._prepare(spec, data, rows_hint)
        if spec.materialized == "merge":
            rows, version = self._merge(spec, prepared, batch_id)
        else:
            rows, version = self._append(spec, prepared, batch_id)
        return WriteResult(spec.model, rows, False, version, time.perf_counter() - started)

    @abstractmethod
    def _changes(self, spec: SinkSpec, data: DataFrame | pa.Table, batch_id: int,
                 rows_hint: int | None) -> tuple[SinkSpec, DataFrame]:
        """A change-data-capture model's batch: its side table written (tombstones, or the
        change log of SCD 2), then the spec and rows to write. The engines take
        :func:`runner.sinks.changes.prepare` (which needs this module: not imported here)."""

    @abstractmethod
    def committed_version(self, spec: SinkSpec) -> int | None:
        """The table's transaction version for ``spec.app_id``; None if absent or no table."""

    @abstractmethod
    def foreign_app_ids(self, spec: SinkSpec) -> set[str]:
        """Runner app ids recorded in the table's commits other than ``spec.app_id``."""

    def refuse_foreign_tables(self, specs: Iterable[SinkSpec], *, hint: str,
                              run_id: str | None = None) -> None:
        """Refuse, before anything is written, a table holding batches of another checkpoint:
        batch ids restart at 0 under a new checkpoint (a ``--full-refresh`` makes one), so
        writing there would write that data a second time. With ``run_id`` (this checkpoint's
        query id), batches that other models of this checkpoint wrote (a table moved with
        its renamed model) are not foreign.

        Raises:
            ConfigError: names the table, its model and the other app id (exit 2).
        """
        for spec in specs:
            foreign = {a for a in self.foreign_app_ids(spec)
                       if run_id is None or not a.endswith(f".{run_id}")}
            if foreign:
                raise ConfigError(
                    f"table {spec.path} of model {spec.model} already holds batches of another "
                    f"checkpoint (app id {sorted(foreign)[0]}); this checkpoint restarts at "
                    "batch 0 and would write that data again", hint=hint)

    def drop(self, spec: SinkSpec) -> None:
        """Remove the table (``--full-refresh``); a missing table is not an error, a folder that
        holds something else is (:func:`runner.sinks.tables.check_droppable`)."""
        check_droppable({spec.model: spec.path})
        self.permit()
        rmtree(as_location(spec.path))

    # -- engine steps ---------------------------------------------------------------------

    def _prepare(self, spec: SinkSpec, data: DataFrame | pa.Table,  # noqa: ARG002 - the engines' hook; the base keeps the data as is
                 rows_hint: int | None = None) -> Any:  # noqa: ARG002 - see above
        """Turn the caller's data into what the engine writes (called only when not skipped)."""
        return data

    @abstractmethod
    def _append(self, spec: SinkSpec, data: Any, batch_id: int) -> tuple[int, int | None]:
        """Append ``data`` with the app transaction; return (rows, committed version)."""

    @abstractmethod
    def _merge(self, spec: SinkSpec, data: Any, batch_id: int) -> tuple[int, int | None]:
        """Merge ``data`` on ``spec.unique_key`` with the app transaction; (rows, version)."""


# -- helpers shared by the engines ---------------------------------------------------------


def _is_dataframe(data: object) -> bool:
    """A Spark DataFrame (not an Arrow table), without importing pyspark here."""
    return type(data).__module__.startswith("pyspark.")


def commit_tags(app_id: str, batch_id: int) -> dict[str, str]:
    """Commit-info entries tagging a runner commit.

    ``runner.app_id``/``runner.batch_id`` are top-level commit-info keys (delta-rs keeps custom
    metadata there); ``userMetadata`` repeats them as JSON because it is the one free-form
    field that delta-spark also writes (``option("userMetadata")``) and shows in ``history()``.
    """
    return {
        APP_ID_KEY: app_id,
        BATCH_ID_KEY: str(batch_id),
        "userMetadata": json.dumps({APP_ID_KEY: app_id, BATCH_ID_KEY: batch_id}),
    }


def _user_metadata(commit: Mapping[str, Any]) -> dict[str, Any]:
    """The runner's tags as delta-spark keeps them: JSON in ``userMetadata`` ({} if none)."""
    meta = commit.get("userMetadata")
    if isinstance(meta, str) and meta.startswith("{"):
        try:
            parsed = json.loads(meta)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def app_id_of_commit(commit: Mapping[str, Any]) -> str | None:
    """The runner app id a commit info was tagged with, by either engine; None if untagged."""
    for app_id in (commit.get(APP_ID_KEY), _user_metadata(commit).get(APP_ID_KEY)):
        if isinstance(app_id, str) and app_id:
            return app_id
    return None


def batch_id_of_commit(commit: Mapping[str, Any]) -> int | None:
    """The batch id a commit info was tagged with, by either engine (delta-rs keeps it as a
    top-level string, delta-spark as a number in ``userMetadata``); None if untagged."""
    for value in (commit.get(BATCH_ID_KEY), _user_metadata(commit).get(BATCH_ID_KEY)):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def quote_column(name: str) -> str:
    """Backtick-quote a column name for a SQL expression (both engines accept backticks)."""
    return "`" + name.replace("`", "``") + "`"


def merge_predicate(unique_key: Iterable[str]) -> str:
    """``target.k <=> source.k AND ...`` over every key column, as SQL both engines read.

    Keys match null-safely (``IS NOT DISTINCT FROM``, Spark's ``<=>``): a NULL key is a key
    like any other, so a row whose key is NULL merges into the NULL row instead of inserting
    a new one in every batch (``=`` is never true for NULL).
    """
    from sqlglot import exp

    def column(table: str, name: str) -> exp.Column:
        return exp.Column(this=exp.to_identifier(name, quoted=True),
                          table=exp.to_identifier(table))

    # parenthesised: delta-rs' SQL parser binds IS NOT DISTINCT FROM more loosely than AND
    matches = [exp.paren(exp.NullSafeEQ(this=column("target", k), expression=column("source", k)))
               for k in unique_key]
    return exp.and_(*matches).sql(dialect="spark")


def duplicate_key_error(spec: SinkSpec, key_values: tuple[Any, ...], count: int,
                        batch_id: int) -> DuplicateKeyError:
    """The error for a merge source that has ``count`` rows for one key."""
    columns = ", ".join(spec.unique_key)
    value = repr(key_values[0]) if len(key_values) == 1 else repr(tuple(key_values))
    return DuplicateKeyError(
        f"model {spec.model}: merge source has {count} rows for unique_key ({columns})={value} "
        f"in batch {batch_id}; a merge model must yield one row per key "
        f"(GROUP BY the key or filter row_number() = 1)"
    )


def _as_tuple(value: Iterable[str] | str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)
