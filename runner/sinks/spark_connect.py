"""The ``spark`` engine over Spark Connect: delta-spark on the server, no JVM in reach.

A Connect client has no ``DeltaTable`` (the Delta Connect plugin is not assumed on the
server), no ``DeltaLog`` and no py4j, so :class:`SparkConnectWriter` overrides what
:class:`~runner.sinks.spark.SparkWriter` does through them:

- appends go through the DataFrame writer with ``txnAppId`` / ``txnVersion`` (delta-spark
  skips a version it has committed: a replay writes nothing);
- merges (and change data capture) are one SQL ``MERGE INTO``, built as a sqlglot tree, into a
  temporary view the writer registers for the table's location in the batch's session (SQL
  reads no table by path: ``spark.sql.runSQLOnFiles=false``), from a view of the model's
  frame, with the session's ``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` set
  around it, under the process's merge lock (session settings are shared by the sink threads);
- the commit just made, its rows and the table's history are read through delta-rs from the
  log, and checkpoints are delta-rs' (no ``DeltaLog.checkpoint()`` to fall back on).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import sqlglot
from deltalake.exceptions import DeltaError
from sqlglot import exp

from runner.failpoints import failpoint
from runner.sinks.base import (
    SinkSpec,
    app_id_of_commit,
    batch_id_of_commit,
    commit_tags,
    merge_predicate,
    quote_column,
)
from runner.sinks.changes import merge_clauses
from runner.sinks.delta import open_delta
from runner.sinks.spark import (
    _MERGE_LOCK,
    CHECKPOINT_EVERY,
    CHECKPOINT_INTERVAL_PROPERTY,
    TABLE_CHECKPOINT_INTERVAL,
    TXN_APP_ID_CONF,
    TXN_VERSION_CONF,
    USER_METADATA_CONF,
    SparkWriter,
    _check_unique,
    _table_interval,
    _wrapped,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SparkConnectWriter", "merge_statement"]


def _parse(sql: str) -> exp.Expr:
    return sqlglot.parse_one(sql, dialect="spark")


def _assignments(values: Mapping[str, str]) -> list[exp.Expr]:
    return [exp.EQ(this=_parse(quote_column(c)), expression=_parse(v))
            for c, v in values.items()]


def merge_statement(spec: SinkSpec, columns: list[str], *, target: str, source: str) -> str:
    """The model's MERGE as Spark SQL, from a sqlglot tree: the same clauses as
    :class:`~runner.sinks.spark.SparkWriter`'s ``DeltaTable.merge`` (``target``/``source``
    aliases over the views ``target`` and ``source``).

    >>> from runner.sinks.base import SinkSpec
    >>> spec = SinkSpec(model="m", path="/t", app_id="p.m.q", materialized="merge",
    ...                 unique_key=("id",))
    >>> sql = merge_statement(spec, ["id", "v"], target="t", source="s")
    >>> for part in sql.split(" WHEN "):
    ...     print(part)
    MERGE INTO t AS target USING s AS source ON (target.`id` IS NOT DISTINCT FROM source.`id`)
    MATCHED THEN UPDATE SET *
    NOT MATCHED THEN INSERT *
    """
    whens: list[exp.When] = []

    def cond(text: str | None) -> exp.Expr | None:
        return _parse(text) if text else None

    if spec.sequence_by is not None:  # change data capture (sinks/cdc.py)
        clauses = merge_clauses(spec, columns)
        insert = clauses.insert_values
        whens = [
            exp.When(matched=True, source=False, condition=cond(clauses.delete_when),
                     then=exp.var("DELETE")),
            exp.When(matched=True, source=False, condition=cond(clauses.update_when),
                     then=exp.Update(expressions=_assignments(clauses.update_set))),
            exp.When(matched=False, source=False, condition=cond(clauses.insert_when),
                     then=exp.Insert(this=exp.Tuple(expressions=[_parse(quote_column(c))
                                                                 for c in insert]),
                                     expression=exp.Tuple(expressions=[
                                         _parse(v) for v in insert.values()])))]
    else:
        update = (exp.Update(expressions=_assignments(spec.merge_update))
                  if spec.merge_update is not None else exp.Update(expressions=[exp.Star()]))
        whens = [exp.When(matched=True, source=False, condition=cond(spec.merge_condition),
                          then=update),
                 exp.When(matched=False, source=False, then=exp.Insert(this=exp.Star()))]
    statement = exp.Merge(
        this=exp.Table(this=exp.to_identifier(target), alias=exp.TableAlias(
            this=exp.to_identifier("target"))),
        using=exp.Table(this=exp.to_identifier(source), alias=exp.TableAlias(
            this=exp.to_identifier("source"))),
        on=_parse(merge_predicate(spec.unique_key)), whens=exp.Whens(expressions=whens))
    return statement.sql(dialect="spark")


def _view(kind: str, spec: SinkSpec) -> str:
    digest = hashlib.sha256(f"{spec.path}\0{spec.app_id}".encode()).hexdigest()[:16]
    return f"__runner_{kind}_{digest}"


class SparkConnectWriter(SparkWriter):
    """delta-spark through a Connect session; see the module docstring."""

    def _append(self, spec: SinkSpec, data: DataFrame, batch_id: int) -> tuple[int, int | None]:
        writer = (data.write.format("delta")
                  .option("txnAppId", spec.app_id)
                  .option("txnVersion", str(batch_id))
                  .option("userMetadata", commit_tags(spec.app_id, batch_id)["userMetadata"])
                  .option(CHECKPOINT_INTERVAL_PROPERTY, str(TABLE_CHECKPOINT_INTERVAL))
                  .mode("append"))
        if spec.partition_by:
            writer = writer.partitionBy(*spec.partition_by)
        with _wrapped(spec, "appending", batch_id), self._raced(spec, batch_id) as raced:
            self._before_commit(spec, batch_id)
            writer.save(spec.path)
        if raced:
            return 0, None
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        return self._connect_commit(spec, batch_id, "numOutputRows")

    def _merge(self, spec: SinkSpec, data: DataFrame, batch_id: int) -> tuple[int, int | None]:
        _check_unique(spec, data, batch_id)
        spark = data.sparkSession
        if self._log.tables.get(spec.path) is None:  # first batch: a plain create
            return self._append(spec, data, batch_id)
        target, source = _view("target", spec), _view("source", spec)
        confs = {TXN_APP_ID_CONF: spec.app_id, TXN_VERSION_CONF: str(batch_id),
                 USER_METADATA_CONF: commit_tags(spec.app_id, batch_id)["userMetadata"]}
        statement = merge_statement(spec, list(data.columns), target=target, source=source)
        with _MERGE_LOCK:
            try:
                spark.read.format("delta").load(spec.path).createOrReplaceTempView(target)
                data.createOrReplaceTempView(source)
                for key, value in confs.items():
                    spark.conf.set(key, value)
                with _wrapped(spec, "merging", batch_id), self._raced(spec, batch_id) as raced:
                    self._before_commit(spec, batch_id)
                    spark.sql(statement).collect()
            finally:
                for key in confs:
                    spark.conf.unset(key)
                _drop_views(spark, target, source)
        if raced:
            return 0, None
        failpoint(f"sink.after_commit:{spec.model}", batch_id=batch_id)
        rows, version = self._connect_commit(spec, batch_id, "numSourceRows")
        if version is not None and version % CHECKPOINT_EVERY == 0 and (
                version % _table_interval(spec.path, self._log.tables) != 0):
            _checkpoint_rs(spec.path, version)
        return rows, version

    @contextmanager
    def _raced(self, spec: SinkSpec, batch_id: int) -> Iterator[list[bool]]:
        """Yields a flag set when delta-spark refused the commit as a concurrent transaction
        of the same app id and the batch is in the table now: another attempt of this batch
        committed it meanwhile (a killed client's query still running on the server when the
        next start replays the batch), so this one is skipped, as a replay is."""
        flag: list[bool] = []
        try:
            yield flag
        except Exception as e:
            if _CONCURRENT not in str(e):
                raise
            committed = self.committed_version(spec)
            if committed is None or committed < batch_id:
                raise
            flag.append(True)

    def _connect_commit(self, spec: SinkSpec, batch_id: int,
                        rows_metric: str) -> tuple[int, int | None]:
        """(rows, version) of the table's latest commit, read by delta-rs, if it is this
        batch's; else (0, None): delta-spark found the batch committed and wrote nothing."""
        last = open_delta(spec.path).history(1)
        if not last:
            return 0, None
        commit: dict[str, Any] = last[0]
        if app_id_of_commit(commit) != spec.app_id or batch_id_of_commit(commit) != batch_id:
            return 0, None
        metrics = commit.get("operationMetrics") or {}
        return int(metrics.get(rows_metric, 0)), int(commit["version"])

    def _history(self, spec: SinkSpec) -> list[dict[str, Any]]:
        table = None
        try:
            table = open_delta(spec.path)
        except (DeltaError, OSError):
            return []
        return [{"version": c.get("version"), "userMetadata": c.get("userMetadata")}
                for c in table.history()]


#: delta-spark's words for a commit of an app id's version that another commit beat.
_CONCURRENT = "DELTA_CONCURRENT_TRANSACTION"


def _checkpoint_rs(path: str, version: int) -> None:
    """delta-rs' checkpoint of ``version``; a failure is harmless (Delta's rule)."""
    try:
        open_delta(path, version).create_checkpoint()
    except (DeltaError, OSError, ValueError):
        pass


def _drop_views(spark: SparkSession, *views: str) -> None:
    for view in views:
        spark.catalog.dropTempView(view)
