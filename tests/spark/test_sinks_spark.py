"""Delta writers fed by Spark DataFrames.

- The ``rs`` engine's ``write(df)`` path (``toArrow``) and engine selection run everywhere.
- The ``spark`` engine (delta-spark) runs where the io.delta JVM classes are on the classpath
  (``scripts/setup.sh`` fetches them); skipped with the reason where they are not, and an error
  under ``RUNNER_REQUIRE_JARS=1`` (CI).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from runner.errors import ConfigError, LeaseLostError, SinkError
from runner.failpoints import FailpointError
from runner.sinks import (
    DeltaWriter,
    RsWriter,
    SinkSpec,
    SparkWriter,
    delta_spark_available,
    make_writer,
)
from runner.sinks.base import commit_tags
from runner.sinks.spark import _check_unique

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark

UTC = dt.UTC
NO_JARS = "delta-spark JVM jars not on the classpath (run scripts/setup.sh)"


def spec(tmp_path: Path, model: str = "m", **kwargs: Any) -> SinkSpec:
    kwargs.setdefault("app_id", f"pipe-{model}-q1")
    return SinkSpec(model=model, path=str(tmp_path / model), **kwargs)


def read(path: str, sort_by: str = "k") -> list[dict[str, Any]]:
    table = DeltaTable(path).to_pyarrow_dataset().to_table(use_threads=False)
    return table.sort_by(sort_by).to_pylist()


def counts(spark: SparkSession, rows: list[tuple[str, int]]) -> DataFrame:
    return spark.createDataFrame(rows, "k STRING, n BIGINT")


# -- everywhere -----------------------------------------------------------------------------


def test_probe_and_engine_choice_do_not_crash(spark: SparkSession):
    available = delta_spark_available(spark)
    assert isinstance(available, bool)
    # The suite's session runs on a local master: auto writes with rs there, jars or not.
    assert spark.sparkContext.master.startswith("local[")
    assert make_writer("auto", spark).engine == "rs"
    if available:
        assert make_writer("spark", spark).engine == "spark"
    if not available:
        with pytest.raises(ConfigError, match="io.delta.tables.DeltaTable"):
            make_writer("spark", spark)


def test_rs_writes_spark_timestamps_as_utc(spark: SparkSession, tmp_path: Path):
    df = spark.sql("""
        SELECT 'a' AS k, CAST('2024-05-01T14:00:00+02:00' AS TIMESTAMP) AS ts,
               CAST(1 AS BIGINT) AS n
    """)
    s = spec(tmp_path)
    assert RsWriter().write(s, df, 0).rows == 1
    assert str(DeltaTable(s.path).schema().fields[1].type) == 'PrimitiveType("timestamp")'
    assert read(s.path)[0]["ts"] == dt.datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert RsWriter().write(s, df, 0).skipped


def test_spark_duplicate_key_check_names_model_and_key(spark: SparkSession, tmp_path: Path):
    s = spec(tmp_path, model="daily_users", materialized="merge", unique_key=["user_id"])
    df = spark.createDataFrame([("u1", 1), ("u42", 2), ("u42", 3)], "user_id STRING, n INT")
    with pytest.raises(SinkError, match=r"^model daily_users: merge source has 2 rows for "
                                        r"unique_key \(user_id\)='u42' in batch 3"):
        _check_unique(s, df, 3)
    _check_unique(s, df.dropDuplicates(["user_id"]), 3)


# -- the spark engine (needs the delta-spark jars) ------------------------------------------


@pytest.fixture
def writer(spark: SparkSession) -> DeltaWriter:
    if not delta_spark_available(spark):
        pytest.skip(NO_JARS)
    return SparkWriter(spark)




def test_append_replay_is_skipped(writer: DeltaWriter, spark: SparkSession, tmp_path: Path):
    s = spec(tmp_path, partition_by=["k"])
    first = writer.write(s, counts(spark, [("a", 1), ("b", 2)]), 0)
    assert (first.rows, first.skipped, first.version) == (2, False, 0)
    assert DeltaTable(s.path).transaction_version(s.app_id) == 0
    assert writer.write(s, counts(spark, [("a", 1), ("b", 2)]), 0).skipped
    assert writer.write(s, counts(spark, [("c", 3)]), 1).version == 1
    assert writer.write(s, counts(spark, [("z", 9)]), 0).skipped
    assert [r["k"] for r in read(s.path)] == ["a", "b", "c"]
    assert DeltaTable(s.path).metadata().partition_columns == ["k"]


def test_accumulating_merge_is_exactly_once(writer: DeltaWriter, spark: SparkSession,
                                            tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "target.n + source.n"})
    writer.write(s, counts(spark, [("a", 1)]), 0)
    result = writer.write(s, counts(spark, [("a", 2), ("b", 5)]), 1)
    assert (result.rows, result.skipped) == (2, False)
    assert writer.write(s, counts(spark, [("a", 2), ("b", 5)]), 1).skipped
    assert [(r["k"], r["n"]) for r in read(s.path)] == [("a", 3), ("b", 5)]
    assert DeltaTable(s.path).transaction_version(s.app_id) == 1
    assert spark.conf.get("spark.databricks.delta.write.txnAppId", None) is None


def test_merge_condition_and_overwrite(writer: DeltaWriter, spark: SparkSession,
                                       tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_condition="source.n > target.n")
    writer.write(s, counts(spark, [("a", 5), ("b", 5)]), 0)
    writer.write(s, counts(spark, [("a", 1), ("b", 9), ("c", 1)]), 1)
    assert [(r["k"], r["n"]) for r in read(s.path)] == [("a", 5), ("b", 9), ("c", 1)]


def test_null_key_matches_null_key(writer: DeltaWriter, spark: SparkSession, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "target.n + source.n"})
    for batch_id in range(3):
        writer.write(s, counts(spark, [("a", 1), (None, 1)]), batch_id)  # type: ignore[list-item]
    rows = DeltaTable(s.path).to_pyarrow_dataset().to_table(use_threads=False).to_pylist()
    assert sorted((r["k"] or "", r["n"]) for r in rows) == [("", 3), ("a", 3)]


def test_merge_duplicate_key_and_bad_expression(writer: DeltaWriter, spark: SparkSession,
                                                tmp_path: Path):
    s = spec(tmp_path, model="totals", materialized="merge", unique_key=["k"],
             merge_update={"n": "target.nope + source.n"})
    with pytest.raises(SinkError, match=r"unique_key \(k\)='a'"):
        writer.write(s, counts(spark, [("a", 1), ("a", 2)]), 0)
    writer.write(s, counts(spark, [("a", 1)]), 0)
    with pytest.raises(SinkError, match="^model totals: merging batch 1 .*DELTA_MERGE_UNRESOLVED"):
        writer.write(s, counts(spark, [("a", 1)]), 1)
    assert writer.committed_version(s) == 0


def test_foreign_app_ids_across_engines(writer: DeltaWriter, spark: SparkSession,
                                        tmp_path: Path):
    mine = spec(tmp_path, app_id="pipe-m-q2")
    RsWriter().write(spec(tmp_path, app_id="pipe-m-q1"), counts(spark, [("a", 1)]), 0)
    writer.write(mine, counts(spark, [("b", 2)]), 0)
    assert writer.foreign_app_ids(mine) == {"pipe-m-q1"}
    assert RsWriter().foreign_app_ids(spec(tmp_path, app_id="pipe-m-q1")) == {"pipe-m-q2"}


def test_failpoint_after_commit_then_replay_skipped(writer: DeltaWriter, spark: SparkSession,
                                                    tmp_path: Path, armed: Any):
    s = spec(tmp_path, model="orders")
    writer.write(s, counts(spark, [("a", 1)]), 0)
    armed("sink.after_commit:orders@1=raise")
    with pytest.raises(FailpointError):
        writer.write(s, counts(spark, [("b", 2)]), 1)
    assert writer.write(s, counts(spark, [("b", 2)]), 1).skipped
    assert [r["k"] for r in read(s.path)] == ["a", "b"]


# -- appends as one explicit transaction (runner/sinks/spark.py: _Transaction) ---------------
# spark engine only: they test how delta-spark commits (its jobs, its conflict check).


def _jobs_in(spark: SparkSession, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_append_skips_the_state_reconstruction(writer: DeltaWriter, spark: SparkSession,
                                               tmp_path: Path):
    """The DataFrame writer with txnAppId runs delta-spark's state reconstruction
    ("Compute snapshot for version N", 3 jobs) on every append; the explicit transaction
    runs the write's one job, and its commit looks the same to other readers."""
    plain, mine = spec(tmp_path, model="plain"), spec(tmp_path, model="mine", partition_by=["k"])
    for s in (plain, mine):
        writer.write(s, counts(spark, [("a", 1)]), 0)
    sc = spark.sparkContext
    try:
        sc.setJobGroup("plain-append", "plain")
        (counts(spark, [("b", 2)]).write.format("delta").option("txnAppId", plain.app_id)
         .option("txnVersion", "1").mode("append").save(plain.path))
        sc.setJobGroup("runner-append", "runner")
        result = writer.write(mine, counts(spark, [("b", 2), ("c", 3)]), 1)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert _jobs_in(spark, "plain-append") >= 3 + 1
    assert _jobs_in(spark, "runner-append") == 1  # the write; its rows come from the log
    assert (result.rows, result.skipped, result.version) == (2, False, 1)
    table = DeltaTable(mine.path)
    assert table.transaction_version(mine.app_id) == 1
    last = table.history(1)[0]
    assert last["operation"] == "WRITE"
    assert last["operationParameters"]["mode"] == "Append"
    assert last["operationParameters"]["partitionBy"] == '["k"]'
    assert last["operationMetrics"]["numOutputRows"] == "2"
    assert last["userMetadata"] == commit_tags(mine.app_id, 1)["userMetadata"]
    assert (Path(mine.path) / "_delta_log" / "00000000000000000001.crc").is_file()
    assert [(r["k"], r["n"]) for r in read(mine.path)] == [("a", 1), ("b", 2), ("c", 3)]


def test_append_of_a_batch_committed_meanwhile_is_skipped(writer: SparkWriter,
                                                          spark: SparkSession, tmp_path: Path):
    """The batch's transaction reads the app's version at its own read version: a batch
    committed after the runner's first check (another process) is skipped, not written twice."""
    s = spec(tmp_path)
    writer.write(s, counts(spark, [("a", 1)]), 0)
    (counts(spark, [("b", 2)]).write.format("delta").option("txnAppId", s.app_id)
     .option("txnVersion", "1").mode("append").save(s.path))
    assert writer._append(s, counts(spark, [("b", 2)]), 1) == (0, None)  # past the check
    assert [(r["k"], r["n"]) for r in read(s.path)] == [("a", 1), ("b", 2)]
    assert DeltaTable(s.path).version() == 1


def test_append_conflicts_with_a_concurrent_commit_of_its_batch(writer: SparkWriter,
                                                                spark: SparkSession,
                                                                tmp_path: Path):
    """Registering the app id as read keeps delta-spark's own guard: a commit of the same app
    id after the transaction's read version makes this commit fail, nothing is written twice."""
    from runner.sinks.spark import _Transaction

    s = spec(tmp_path)
    writer.write(s, counts(spark, [("a", 1)]), 0)
    txn = _Transaction.start(spark, s, 1, counts(spark, [("b", 2)]))
    assert txn is not None and not txn.committed()
    (counts(spark, [("b", 2)]).write.format("delta").option("txnAppId", s.app_id)
     .option("txnVersion", "1").mode("append").save(s.path))
    with pytest.raises(Exception, match="ConcurrentTransaction|DELTA_CONCURRENT_TRANSACTION"):
        txn.write_and_commit(lambda: None)
    assert [(r["k"], r["n"]) for r in read(s.path)] == [("a", 1), ("b", 2)]
    assert DeltaTable(s.path).transaction_version(s.app_id) == 1


def test_an_append_asks_its_permit_after_writing_its_files_right_before_the_commit(
        writer: SparkWriter, spark: SparkSession, tmp_path: Path):
    """The permit (the checkpoint lease's check) is asked at the commit, not before a write
    that may take long: the batch's files are already there when it refuses, and nothing is
    committed."""
    s = spec(tmp_path)
    writer.write(s, counts(spark, [("a", 1)]), 0)
    files = lambda: len(list(Path(s.path).rglob("*.parquet")))  # noqa: E731
    before, seen = files(), []

    def refuse() -> None:
        seen.append(files())
        raise LeaseLostError("stopped writing: the lease was taken")

    writer.permit = refuse  # an instance attribute: the fixture makes a writer per test
    with pytest.raises(LeaseLostError, match="stopped writing"):
        writer.write(s, counts(spark, [("b", 2)]), 1)
    assert len(seen) == 1 and seen[0] > before  # asked once, after the files were written
    assert DeltaTable(s.path).version() == 0 and [r["k"] for r in read(s.path)] == ["a"]


def test_no_auto_compaction_inside_a_batch(writer: DeltaWriter, spark: SparkSession,
                                           tmp_path: Path):
    """runner/sinks/conf.py turns delta-spark's auto-compaction off for the session, even on
    a table whose property asks for it: compaction is `runner maintain`'s, never a batch's.
    The control table (the setting unset) shows the property would compact here."""
    from runner.sinks.conf import DELTA_SESSION_CONF

    key = "spark.databricks.delta.autoCompact.enabled"
    assert spark.conf.get(key) == DELTA_SESSION_CONF[key] == "false"
    defaults = {"spark.databricks.delta.properties.defaults.autoOptimize.autoCompact": "true",
                "spark.databricks.delta.autoCompact.minNumFiles": "2"}
    try:
        for k, v in defaults.items():
            spark.conf.set(k, v)
        ours, control = spec(tmp_path, model="ours"), spec(tmp_path, model="control")
        for batch_id in range(3):
            assert writer.write(ours, counts(spark, [(f"k{batch_id}", batch_id)]), batch_id).rows
        assert writer.write(ours, counts(spark, [("k2", 2)]), 2).skipped
        spark.conf.unset(key)
        for batch_id in range(3):
            writer.write(control, counts(spark, [(f"k{batch_id}", batch_id)]), batch_id)
    finally:
        spark.conf.set(key, "false")
        for k in defaults:
            spark.conf.unset(k)
    assert DeltaTable(ours.path).metadata().configuration["delta.autoOptimize.autoCompact"] == \
        "true"
    assert {c["operation"] for c in DeltaTable(ours.path).history()} == {"WRITE"}
    assert "OPTIMIZE" in {c["operation"] for c in DeltaTable(control.path).history()}
    for s in (ours, control):
        assert [(r["k"], r["n"]) for r in read(s.path)] == [("k0", 0), ("k1", 1), ("k2", 2)]
    assert DeltaTable(ours.path).transaction_version(ours.app_id) == 2


def test_merges_are_checkpointed_every_tenth_version(writer: SparkWriter, spark: SparkSession,
                                                    tmp_path: Path):
    """A merge model's table is checkpointed by the runner every tenth version too (its table
    asks delta-spark for a checkpoint only every 1000th)."""
    s = spec(tmp_path, materialized="merge", unique_key=("k",))
    for batch_id in range(11):
        writer.write(s, counts(spark, [("a", batch_id), (f"k{batch_id}", 1)]), batch_id)
    log = Path(s.path) / "_delta_log"
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 10
    assert DeltaTable(s.path).transaction_version(s.app_id) == 10
    assert {r["k"]: r["n"] for r in read(s.path)}["a"] == 10


# Nightly (19 s on the CI machine; the suite's 25-minute budget): checkpoints every tenth
# version stay in the default suite (test_merges_are_checkpointed_every_tenth_version).
@pytest.mark.slow
def test_an_older_table_keeps_delta_sparks_checkpoints(writer: SparkWriter, spark: SparkSession,
                                                       tmp_path: Path):
    """A merge table created before the runner set the interval (10, delta-spark's default):
    delta-spark's own hook checkpoints its tenth version (Hadoop's ``.crc`` beside it shows
    whose it is), the runner leaves that version to it, and delta-spark reads the table from
    that checkpoint alone."""
    s = spec(tmp_path, materialized="merge", unique_key=("k",))
    counts(spark, [("a", 0)]).write.format("delta").save(s.path)  # an older table, version 0
    for batch_id in range(10):
        writer.write(s, counts(spark, [("a", batch_id + 1), (f"k{batch_id}", 1)]), batch_id)
    log = Path(s.path) / "_delta_log"
    assert DeltaTable(s.path).version() == 10
    assert (log / ".00000000000000000010.checkpoint.parquet.crc").is_file()  # delta-spark's
    for v in range(10):
        (log / f"{v:020d}.json").unlink()
        (log / f"{v:020d}.crc").unlink(missing_ok=True)
    rows = {r["k"]: r["n"] for r in spark.read.format("delta").load(s.path).collect()}
    assert rows["a"] == 10 and len(rows) == 11


def test_the_tenth_commit_is_checkpointed_by_delta_rs_and_keeps_the_batch(
        writer: SparkWriter, spark: SparkSession, tmp_path: Path):
    """Every tenth commit's Delta checkpoint is written by delta-rs, not by delta-spark's
    post-commit Spark jobs (Hadoop's local file system leaves a ``.crc`` beside what Spark
    writes; delta-rs does not). The checkpoint carries the batch's transaction: with the
    commits before it gone (log cleanup), delta-spark still reads the table and a replay of the
    batch is still skipped.

    The tenth commit also runs no more Spark jobs than any other (the write's one): the table
    was created with ``delta.checkpointInterval`` 1000, so delta-spark does not compute its
    commit statistics from the whole table state there (3 more jobs with the interval at 10).
    """
    s = spec(tmp_path)
    for batch_id in range(10):
        writer.write(s, counts(spark, [(f"k{batch_id}", batch_id)]), batch_id)
    assert DeltaTable(s.path).metadata().configuration["delta.checkpointInterval"] == "1000"
    sc = spark.sparkContext
    try:
        sc.setJobGroup("tenth-commit", "tenth")
        assert writer.write(s, counts(spark, [("k10", 10)]), 10).version == 10
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert _jobs_in(spark, "tenth-commit") == 1
    log = Path(s.path) / "_delta_log"
    assert (log / "00000000000000000010.checkpoint.parquet").is_file()
    assert not (log / ".00000000000000000010.checkpoint.parquet.crc").exists()
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 10
    for v in range(10):
        (log / f"{v:020d}.json").unlink()
        (log / f"{v:020d}.crc").unlink(missing_ok=True)
    assert spark.read.format("delta").load(s.path).count() == 11
    assert spark.read.format("delta").option("versionAsOf", 10).load(s.path).count() == 11
    assert writer.write(s, counts(spark, [("k10", 10)]), 10).skipped
    assert DeltaTable(s.path).transaction_version(s.app_id) == 10
    assert len(read(s.path)) == 11


@pytest.mark.parametrize("engine", ["spark", "rs"])
def test_a_small_batch_is_one_task_and_one_file_per_table(spark: SparkSession, tmp_path: Path,
                                                          engine: str):
    """A batch of at most ONE_TASK_MAX_ROWS input rows (the hint) is written by one task: one
    data file per table, not one per source partition. Without the hint it is not. On
    ``rs`` the Spark-native path (arrow_max_rows 0) is the one that writes files from tasks."""
    if engine == "spark" and not delta_spark_available(spark):
        pytest.skip(NO_JARS)
    writer = SparkWriter(spark) if engine == "spark" else RsWriter(arrow_max_rows=0)
    df = counts(spark, [("a", 1), ("b", 2), ("c", 3)]).repartition(3)
    hinted, unhinted = spec(tmp_path, model="hinted"), spec(tmp_path, model="unhinted")
    writer.write(hinted, df, 0, rows_hint=3)
    writer.write(unhinted, df, 0)
    assert len(DeltaTable(hinted.path).file_uris()) == 1
    assert len(DeltaTable(unhinted.path).file_uris()) == 3
    assert len(read(hinted.path)) == len(read(unhinted.path)) == 3
