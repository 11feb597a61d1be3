"""The ``spark`` engine: Delta commits through delta-spark (distributed, no Arrow transfer).

Appends to an existing table commit through one explicit delta-spark transaction
(:class:`_Transaction`, below), the table's first append through the DataFrame writer's
idempotency options (``txnAppId``/``txnVersion``); merges use ``DeltaTable.merge`` with the
session confs ``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` set around it, under
a process-wide lock because session confs are shared by the sink threads. delta-spark itself
skips a transaction version it has already committed; the runner checks first as well, so a
skipped write is reported as skipped.

pyspark, py4j and delta-spark are imported inside the methods: importing this module needs
neither a JVM nor the delta-spark jars.

Why appends do not use the DataFrame writer once the table exists: with ``txnAppId`` set,
delta-spark 4.4 asks the read snapshot for the app's transaction version
(``DeltaCommand.hasBeenExecuted`` -> ``OptimisticTransaction.txnVersion`` ->
``SnapshotState.transactions``), and that map is built by a full state reconstruction of the
table (three Spark jobs, "Compute snapshot for version: N") on every batch, although the
version's checksum file already holds the transactions (delta-io/delta#6929; the fix, backport
#7670, is not in 4.4.0): on a small batch those jobs take most of the batch's time
(``bench.kafka_bench --only rate``, the spark engine). :class:`_Transaction` does what
``WriteIntoDelta.run`` does, minus that look-up: it opens the transaction, reads the app's
version through delta-rs AT THE TRANSACTION'S READ VERSION (the same answer, read from the log
without a job), registers the app id as read (``readTxn``, what ``txnVersion`` does: a
concurrent commit of the same app id after the read version makes this commit fail with
delta-spark's ``ConcurrentTransactionException``), writes the files with ``WriteIntoDelta``
(schema checks, stats, the ``SetTransaction`` action from the same options) and commits them
with the ``SetTransaction`` in the SAME commit. What other readers see is unchanged: the same
actions, the same commitInfo (operation WRITE, userMetadata, metrics), checksum files as
before. Between writing the files and committing them it asks the writer's permit (the
checkpoint lease's check, :mod:`runner.checkpoint.lease`): the check is right before the
commit, however long the files took.

Checkpoints are the runner's, not delta-spark's. delta-spark 4.4 does two things at every
version that is a multiple of the table's ``delta.checkpointInterval`` (10 by default): inside
the commit it computes commit statistics (``numOfFiles``, ``sizeInBytes``) from the whole table
state, three Spark jobs with no setting to skip them, and after it its post-commit hook writes
the checkpoint with more jobs. Both stall the batch for seconds. So the tables this writer
creates get ``delta.checkpointInterval`` = :data:`TABLE_CHECKPOINT_INTERVAL` (1000, a backstop
for other writers), the explicit transaction drops the checkpoint hook (the checksum hook
stays), and the runner checkpoints every :data:`CHECKPOINT_EVERY` (10) versions itself, once
the commit is in, with delta-rs from the log, without a job: the same classic checkpoint, the
app's ``SetTransaction`` in it, readable by delta-spark. Where delta-rs cannot (a table feature
it does not support), delta-spark's own ``DeltaLog.checkpoint()`` runs instead. A checkpoint
that fails fails nothing: the commit stands, the log stays readable (Delta's rule). Tables
created before (or by the ``rs`` engine) keep their interval, so delta-spark still computes
the statistics at their tenth commits until ``ALTER TABLE delta.`<path>` SET TBLPROPERTIES
('delta.checkpointInterval' = '1000')``. Measurements: docs/KAFKA.md.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from deltalake import DeltaTable as RsTable
from deltalake.exceptions import DeltaError

from runner.errors import SinkError
from runner.failpoints import failpoint
from runner.sinks.base import (
    DeltaWriter,
    SinkSpec,
    app_id_of_commit,
    batch_id_of_commit,
    commit_tags,
    duplicate_key_error,
    merge_predicate,
    quote_column,
)
from runner.sinks.changes import merge_clauses, prepare
from runner.sinks.conf import DELTA_SESSION_CONF, jvm_class_loads
from runner.sinks.delta import open_delta
from runner.sinks.open_tables import OpenTables
from runner.sinks.rs import RsWriter
from runner.spark_client import is_remote
from runner.spark_errors import delta_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

__all__ = ["SparkWriter", "delta_spark_available"]

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"

#: The table property that decides where delta-spark checkpoints (and computes its commit
#: statistics from the whole state), and the value the tables this writer creates get.
CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"
TABLE_CHECKPOINT_INTERVAL = 1000
#: The runner checkpoints each table at every version that is a multiple of this (Delta's
#: default interval), with delta-rs.
CHECKPOINT_EVERY = 10

#: Session confs carry the merge's transaction: one merge at a time per process.
_MERGE_LOCK = threading.Lock()


def delta_spark_available(spark: SparkSession | None) -> bool:
    """True when ``io.delta.tables.DeltaTable`` is loadable in the session's JVM; over Spark
    Connect (no JVM to ask), when the server runs Delta's SQL extension."""
    if spark is not None and is_remote(spark):
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
        return DELTA_SESSION_CONF["spark.sql.extensions"] in extensions
    return jvm_class_loads(spark, "io.delta.tables.DeltaTable")


class SparkWriter(DeltaWriter):
    """Delta writer on delta-spark; see the module docstring."""

    engine: ClassVar[str] = "spark"
    _changes = prepare  # change data capture (runner/sinks/changes.py)

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        # The Delta log is read through delta-rs: the exact txn state, cheap, no Spark job.
        self._log = RsWriter()

    def committed_version(self, spec: SinkSpec) -> int | None:
        try:
            return self._log.committed_version(spec)
        except (DeltaError, OSError):  # a location delta-rs cannot open: ask Spark
            return self._history_version(spec)

    def drop(self, spec: SinkSpec) -> None:
        self._log.tables.forget(spec.path)
        super().drop(spec)

    def foreign_app_ids(self, spec: SinkSpec) -> set[str]:
        try:
            return self._log.foreign_app_ids(spec)
        except (DeltaError, OSError):
            found = {app_id_of_commit(c) for c in self._history(spec)}
            return {a for a in found if a is not None and a != spec.app_id}

    # -- engine steps ---------------------------------------------------------------------

    def _prepare(self, spec: SinkSpec, data: DataFrame | pa.Table,  # noqa: ARG002 - the engines' hook signature
                 rows_hint: int | None = None) -> DataFrame:  # noqa: ARG002 - see above
        """An Arrow table becomes a DataFrame: delta-spark writes DataFrames only."""
        return self._spark.createDataFrame(data) if isinstance(data, pa.Table) else data

    def _append(self, spec: SinkSpec, data: DataFrame, batch_id: int) -> tuple[int, int | None]:
        writer = (data.write.format("delta")
                  .option("txnAppId", spec.app_id)
                  .option("txnVersion", str(batch_id))
                  .option("userMetadata", commit_tags(spec.app_id, batch_id)["userMetadata"])
                  .mode("append"))
        if spec.partition_by:
            writer = writer.partitionBy(*spec.partition_by)
        # applies only where this write creates the table (delta-spark's own rule)
        writer = writer.option(CHECKPOINT_INTERVAL_PROPERTY, str(TABLE_CHECKPOINT_INTERVAL))
        with _wrapped(spec, "appending", batch_id):
            txn = _Transaction.start(data.sparkSession, spec, batch_id, data, self._log.tables)
            if txn is not None:  # the table exists: one explicit transaction, no state job
                if txn.committed():
                    return 0, None  # committed since the runner's own check: skipped
                version = txn.write_and_commit(lambda: self._before_commit(spec, batch_id))
                failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
                return txn.rows_written(version, "numOutputRows"), version
            self._before_commit(spec, batch_id)
            writer.save(spec.path)  # a new table: its (empty) state costs nothing to read
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        return self._last_commit(spec, data.sparkSession, batch_id, "numOutputRows")

    def _merge(self, spec: SinkSpec, data: DataFrame, batch_id: int) -> tuple[int, int | None]:
        from delta.tables import DeltaTable

        _check_unique(spec, data, batch_id)
        spark = data.sparkSession
        # First batch: a plain create. Asked of delta-rs, not of delta-spark's isDeltaTable,
        # which takes any `_delta_log` folder for a table: a table dropped from S3 (a rebuild)
        # leaves S3A's directory marker `_delta_log/` (object_store cannot delete a key ending
        # in "/"), and the merge then found no table (DELTA_TABLE_NOT_FOUND).
        if self._log.tables.get(spec.path) is None:
            return self._append(spec, data, batch_id)
        confs = {TXN_APP_ID_CONF: spec.app_id, TXN_VERSION_CONF: str(batch_id),
                 USER_METADATA_CONF: commit_tags(spec.app_id, batch_id)["userMetadata"]}
        with _MERGE_LOCK:
            try:
                for key, value in confs.items():
                    spark.conf.set(key, value)
                with _wrapped(spec, "merging", batch_id):
                    merger = (DeltaTable.forPath(spark, spec.path).alias("target")
                              .merge(data.alias("source"), merge_predicate(spec.unique_key)))
                    if spec.sequence_by is not None:  # change data capture (sinks/cdc.py)
                        clauses = merge_clauses(spec, data.columns)
                        merger = (merger.whenMatchedDelete(condition=clauses.delete_when)
                                  .whenMatchedUpdate(condition=clauses.update_when,
                                                     set={**clauses.update_set})
                                  .whenNotMatchedInsert(condition=clauses.insert_when,
                                                        values={**clauses.insert_values}))
                    elif spec.merge_update is not None:
                        merger = merger.whenMatchedUpdate(
                            condition=spec.merge_condition,
                            set={quote_column(c): e for c, e in spec.merge_update.items()})
                    else:
                        merger = merger.whenMatchedUpdateAll(condition=spec.merge_condition)
                    if spec.sequence_by is None:
                        merger = merger.whenNotMatchedInsertAll()
                    self._before_commit(spec, batch_id)
                    merger.execute()
            finally:
                for key in confs:
                    spark.conf.unset(key)
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        rows, version = self._last_commit(spec, spark, batch_id, "numSourceRows")
        # DeltaTable.merge keeps delta-spark's checkpoint hook: it checkpointed the versions
        # its table's interval names (delta-rs would find that checkpoint there and write
        # nothing: measured; the check saves reading the log for it)
        if version is not None and version % CHECKPOINT_EVERY == 0 and (
                version % _table_interval(spec.path, self._log.tables) != 0):
            _checkpoint(spec.path, version, self._log.tables)
        return rows, version

    # -- reading back ---------------------------------------------------------------------

    def _last_commit(self, spec: SinkSpec, spark: SparkSession, batch_id: int,
                     rows_metric: str) -> tuple[int, int | None]:
        """(rows, version) of the latest commit if it is this batch's; else (0, None)."""
        from delta.tables import DeltaTable

        last = DeltaTable.forPath(spark, spec.path).history(1).collect()
        if not last or not _is_batch_commit(last[0], spec.app_id, batch_id):
            return 0, None  # delta-spark found the txn already committed and wrote nothing
        metrics = last[0]["operationMetrics"] or {}
        return int(metrics.get(rows_metric, 0)), int(last[0]["version"])

    def _history(self, spec: SinkSpec) -> list[dict[str, Any]]:
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(self._spark, spec.path):
            return []
        rows = DeltaTable.forPath(self._spark, spec.path).history().select(
            "version", "userMetadata").collect()
        return [r.asDict() for r in rows]

    def _history_version(self, spec: SinkSpec) -> int | None:
        batches = [batch_id_of_commit(c) for c in self._history(spec)
                   if app_id_of_commit(c) == spec.app_id]
        return max((b for b in batches if b is not None), default=None)


class _Transaction:
    """One append as an explicit delta-spark transaction; see the module docstring.

    The JVM classes are delta-spark 4.4's (``DeltaLog``, ``OptimisticTransaction``,
    ``WriteIntoDelta``, ``DeltaOperations.Write``). :meth:`start` answers None, and the
    DataFrame writer is used, where the table does not exist yet, or where those classes do
    not have the signatures used here (another delta-spark version): py4j finds that out
    before anything is written.
    """

    def __init__(self, spark: SparkSession, spec: SinkSpec, batch_id: int, txn: Any,
                 steps: dict[str, Any], tables: OpenTables) -> None:
        self._spark, self._spec, self._batch_id = spark, spec, batch_id
        self._txn, self._steps, self._tables = txn, steps, tables
        self.read_version = int(txn.readVersion())

    @classmethod
    def start(cls, spark: SparkSession, spec: SinkSpec, batch_id: int,
              data: DataFrame, tables: OpenTables | None = None) -> _Transaction | None:
        """Open the transaction (reads the table's latest version: protocol and metadata come
        from its checksum file, no job) and build the write; None: use the DataFrame writer."""
        from py4j.protocol import Py4JError, Py4JJavaError

        jvm = spark._jvm  # noqa: SLF001 - py4j
        jspark = spark._jsparkSession  # noqa: SLF001 - py4j
        try:
            delta = jvm.org.apache.spark.sql.delta  # type: ignore[union-attr]
            log = delta.DeltaLog.forTable(jspark, spec.path)
            txn = log.startTransaction()
            if int(txn.readVersion()) < 0:
                return None
            utils = jvm.org.apache.spark.api.python.PythonUtils  # type: ignore[union-attr]
            none = getattr(getattr(jvm.scala, "None$"), "MODULE$")  # type: ignore[union-attr]
            append = jvm.org.apache.spark.sql.SaveMode.Append  # type: ignore[union-attr]
            user_metadata = commit_tags(spec.app_id, batch_id)["userMetadata"]
            options = delta.DeltaOptions(
                utils.toScalaMap({"txnAppId": spec.app_id, "txnVersion": str(batch_id),
                                  "userMetadata": user_metadata}),
                jspark.sessionState().conf())
            partition_by = utils.toSeq(list(spec.partition_by))
            steps = {
                "command": delta.commands.WriteIntoDelta(
                    log, append, options, partition_by, utils.toScalaMap({}),
                    data._jdf, none, none, False),  # noqa: SLF001 - py4j
                "operation": getattr(delta, "DeltaOperations$Write")(
                    append, jvm.scala.Some(partition_by), none,  # type: ignore[union-attr]
                    jvm.scala.Some(user_metadata), none, none, none, none, none),  # type: ignore[union-attr]
                "active": getattr(getattr(delta, "OptimisticTransaction$"), "MODULE$"),
                "session": getattr(jvm, "org.apache.spark.sql.classic.SparkSession"),
                "read_txn": txn.readTxn(), "none": none, "jspark": jspark, "log": log}
        except Py4JJavaError:
            raise
        except Py4JError:  # a class or signature this code does not know: nothing written
            return None
        return cls(spark, spec, batch_id, txn, steps, tables or OpenTables())

    def committed(self) -> bool:
        """True when the table, at the transaction's read version, holds this batch; else the
        app id is registered as read, so a later commit of it conflicts (as ``txnVersion``
        would register it)."""
        version = self._log_at(self.read_version).transaction_version(self._spec.app_id)
        if version is not None and version >= self._batch_id:
            return True
        self._steps["read_txn"].append(self._spec.app_id)
        return False

    def write_and_commit(self, before_commit: Callable[[], None]) -> int | None:
        """Write the files and commit them with the batch's ``SetTransaction``; the version.
        ``before_commit`` runs between the two (the lease's permit: right before the commit,
        not before the write, which may take long)."""
        steps = self._steps
        # The session is active on this (sink pool) thread, as the DataFrame writer makes it:
        # Delta's post-commit work (a checkpoint every tenth commit, snapshot state read from a
        # checkpoint) runs in its own pool and takes the caller's active session.
        steps["session"].setActiveSession(steps["jspark"])
        steps["active"].setActive(self._txn)  # as DeltaLog.withNewTransaction does
        try:
            tagged = steps["command"].writeAndReturnCommitData(self._txn, steps["jspark"],
                                                               steps["none"], False)
            own_checkpoint = self._drop_checkpoint_hook()
            before_commit()
            committed = self._txn.commitIfNeeded(tagged.actions(), steps["operation"],
                                                 tagged.stringTags())
        finally:
            steps["active"].clearActive()
        version = int(committed.get()) if committed.isDefined() else None
        # with its hook kept (not reachable), delta-spark checkpointed its interval's versions
        if version is not None and version % CHECKPOINT_EVERY == 0 and (
                own_checkpoint or version % _table_interval(self._spec.path, self._tables) != 0):
            _checkpoint(self._spec.path, version, self._tables, steps["log"])
        return version

    def rows_written(self, version: int | None, rows_metric: str) -> int:
        """The rows metric of commit ``version`` (this transaction's), read from the log."""
        if version is None:
            return 0
        commits = self._log_at(version).history(1)
        metrics = (commits[0].get("operationMetrics") or {}) if commits else {}
        return int(metrics.get(rows_metric, 0))

    def _log_at(self, version: int) -> RsTable:
        """The table's log at ``version`` through delta-rs (:func:`_log_at`)."""
        return _log_at(self._spec.path, version, self._tables)

    def _drop_checkpoint_hook(self) -> bool:
        """Remove delta-spark's post-commit checkpoint hook from this transaction; False (the
        hook stays, delta-spark checkpoints as usual) where its hooks are not reachable."""
        from py4j.protocol import Py4JError

        try:
            hooks = self._txn.postCommitHooks()
            for i in range(int(hooks.size())):
                if str(hooks.apply(i).name()) == "Post commit checkpoint trigger":
                    hooks.remove(i)
                    return True
        except Py4JError:
            pass
        return False



def _log_at(path: str, version: int, tables: OpenTables) -> RsTable:
    """The table's log at ``version`` through delta-rs: the kept open table when it is at that
    version (:mod:`runner.sinks.open_tables`), else the table opened there."""
    kept = tables.get(path)
    if kept is not None and kept.version() == version:
        return kept
    return open_delta(path, version)


def _table_interval(path: str, tables: OpenTables) -> int:
    """The table's ``delta.checkpointInterval`` (Delta's default: 10)."""
    table = tables.get(path)
    value = (table.metadata().configuration.get(CHECKPOINT_INTERVAL_PROPERTY)
             if table is not None else None)
    try:
        return max(1, int(value)) if value is not None else CHECKPOINT_EVERY
    except ValueError:
        return CHECKPOINT_EVERY


def _checkpoint(path: str, version: int, tables: OpenTables, log: Any = None) -> None:
    """Write the checkpoint of ``version`` with delta-rs; else, given delta-spark's ``log``,
    with delta-spark (the latest version); a failure is harmless (the module docstring)."""
    from py4j.protocol import Py4JError

    try:
        _log_at(path, version, tables).create_checkpoint()
        return
    except (DeltaError, OSError, ValueError):
        pass
    if log is not None:
        try:
            log.checkpoint()
        except Py4JError:
            pass


def _is_batch_commit(row: Row, app_id: str, batch_id: int) -> bool:
    commit = {"userMetadata": row["userMetadata"]}
    return app_id_of_commit(commit) == app_id and batch_id_of_commit(commit) == batch_id


def _check_unique(spec: SinkSpec, data: DataFrame, batch_id: int) -> None:
    """Raise :class:`SinkError` when the merge source has two rows for one key."""
    from pyspark.sql import functions as F

    missing = [k for k in spec.unique_key if k not in data.columns]
    if missing:
        raise SinkError(f"model {spec.model}: unique_key column(s) {', '.join(missing)} "
                        f"not in the model's output (columns: {', '.join(data.columns)})")
    keys = [F.col(quote_column(k)).alias(k) for k in spec.unique_key]
    dupes = (data.groupBy(*keys).agg(F.count(F.lit(1)).alias("__runner_rows"))
             .filter(F.col("__runner_rows") > 1).limit(1).collect())
    if dupes:
        row = dupes[0]
        raise duplicate_key_error(spec, tuple(row[k] for k in spec.unique_key),
                                  int(row["__runner_rows"]), batch_id)


@contextmanager
def _wrapped(spec: SinkSpec, doing: str, batch_id: int) -> Iterator[None]:
    """Turn delta-spark's own errors raised inside into a :class:`SinkError` naming the model
    and table. Any other error (Spark is lazy: a model's runtime error, e.g. ``DIVIDE_BY_ZERO``,
    surfaces inside the write) passes through unchanged, for the batch to report against the
    model, as it does on the ``rs`` engine."""
    try:
        yield
    except Exception as e:
        cause = delta_error(e)
        if cause is not None:
            raise SinkError(f"model {spec.model}: {doing} batch {batch_id} ({spec.path}) "
                            f"failed: {cause}") from e
        raise
