"""Spark-native appends of the ``rs`` engine: Spark writes Parquet, delta-rs commits it.

Tables are read back independently: deltalake (through the dataset: ``to_pyarrow_table()``
aborted the interpreter at exit, exit 134), and Polars, DuckDB and Spark where they are installed. Footer statistics are unit-tested on
Parquet files written by pyarrow (no Spark).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from runner.errors import SinkError
from runner.failpoints import FailpointError
from runner.sinks import RsWriter, SinkSpec
from runner.sinks.schema import delta_schema_json
from runner.sinks.staged import STAGING_DIR, file_stats, staging_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

UTC = dt.UTC
T0 = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)

EVENTS_SQL = """
SELECT id,
       concat('evt_', id) AS eventId,
       TIMESTAMP'2024-05-01 12:00:00.123456' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts,
       named_struct('userId', concat('u', id % 3), 'country', CAST(NULL AS STRING)) AS user,
       CASE WHEN id % 4 = 0 THEN NULL ELSE array(named_struct('code', 'E1')) END AS errors,
       CASE WHEN id % 3 = 0 THEN 'de' WHEN id % 3 = 1 THEN 'a b:c%d/e' END AS country,
       CAST(id AS DECIMAL(10, 2)) AS amount
FROM range({start}, {stop})
"""


@pytest.fixture
def writer() -> RsWriter:
    return RsWriter()




def events(spark: SparkSession, start: int, stop: int, partitions: int = 2) -> DataFrame:
    return spark.sql(EVENTS_SQL.format(start=start, stop=stop)).repartition(partitions)


def spec(tmp_path: Path, model: str = "m", **kwargs: Any) -> SinkSpec:
    kwargs.setdefault("app_id", f"pipe.{model}.q1")
    return SinkSpec(model=model, path=str(tmp_path / model), **kwargs)


def read(path: str, **kwargs: Any) -> pa.Table:
    return DeltaTable(path).to_pyarrow_dataset().to_table(use_threads=False, **kwargs)


def ids(path: str) -> list[int]:
    return sorted(read(path).column("id").to_pylist())


def log_actions(path: str, kind: str) -> list[dict[str, Any]]:
    out = []
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if kind in action:
                out.append(action[kind])
    return out


def parquet_files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*.parquet")}


# -- the append path -------------------------------------------------------------------------


@pytest.mark.spark
def test_append_commits_spark_files_with_txn_stats_and_tags(spark: SparkSession,
                                                            writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    result = writer.write(s, events(spark, 0, 10), 0)
    assert (result.rows, result.skipped, result.version) == (10, False, 0)
    table = DeltaTable(s.path)
    assert table.transaction_version(s.app_id) == 0
    commit = table.history(1)[0]
    assert commit["runner.app_id"] == s.app_id and commit["runner.batch_id"] == "0"
    adds = log_actions(s.path, "add")
    assert len(adds) == 2  # one file per Spark task
    assert all(a["path"].startswith(f"{STAGING_DIR}/pipe.m.q1/0/part-") for a in adds)
    assert all((Path(s.path) / a["path"]).is_file() for a in adds)
    stats = [json.loads(a["stats"]) for a in adds]
    assert sum(st["numRecords"] for st in stats) == 10
    assert min(st["minValues"]["id"] for st in stats) == 0
    assert max(st["maxValues"]["id"] for st in stats) == 9
    # timestamps to the millisecond: min rounded down, max rounded up (never too narrow)
    assert min(st["minValues"]["ts"] for st in stats) == "2024-05-01T12:00:00.123Z"
    assert max(st["maxValues"]["ts"] for st in stats) == "2024-05-01T12:00:09.124Z"
    assert sum(st["nullCount"]["user"]["country"] for st in stats) == 10
    assert sum(st["nullCount"]["country"] for st in stats) == 3  # ids 2, 5, 8
    assert all("errors" not in st["nullCount"] for st in stats)  # arrays: no stats
    assert all("amount" not in st["minValues"] for st in stats)  # decimals: null count only
    assert sum(st["nullCount"]["amount"] for st in stats) == 0
    # Delta schema from Spark's: all nullable, timestamp is Delta's UTC timestamp
    fields = {f.name: f for f in table.schema().fields}
    assert str(fields["ts"].type) == 'PrimitiveType("timestamp")'
    assert all(f.nullable for f in table.schema().fields)


@pytest.mark.spark
def test_timestamps_are_utc_micros_even_if_the_session_says_int96(
        spark: SparkSession, writer: RsWriter, tmp_path: Path):
    key = "spark.sql.parquet.outputTimestampType"
    before = spark.conf.get(key)
    spark.conf.set(key, "INT96")
    try:
        s = spec(tmp_path)
        writer.write(s, events(spark, 0, 3, partitions=1), 0)
    finally:
        spark.conf.set(key, before)
    table = read(s.path).sort_by("id")
    assert table.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert table.column("ts").to_pylist()[0] == T0
    assert table.column("ts").to_pylist()[2] == T0 + dt.timedelta(seconds=2)
    data_file = Path(s.path) / log_actions(s.path, "add")[0]["path"]
    ts = pq.read_metadata(data_file).schema.column(2)
    assert ts.name == "ts" and ts.physical_type == "INT64"
    assert "isAdjustedToUTC=true, timeUnit=microseconds" in str(ts.logical_type)


@pytest.mark.spark
def test_stats_never_exclude_a_matching_row(spark: SparkSession, writer: RsWriter,
                                            tmp_path: Path):
    """A filter on the exact (sub-millisecond) last instant still finds its row."""
    s = spec(tmp_path)
    writer.write(s, events(spark, 0, 10), 0)
    last = T0 + dt.timedelta(seconds=9)
    hits = read(s.path, filter=pc.field("ts") >= pa.scalar(last, pa.timestamp("us", "UTC")))
    assert hits.column("id").to_pylist() == [9]
    first = read(s.path, filter=pc.field("ts") <= pa.scalar(T0, pa.timestamp("us", "UTC")))
    assert first.column("id").to_pylist() == [0]


@pytest.mark.spark
def test_replayed_batch_is_skipped(spark: SparkSession, writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    writer.write(s, events(spark, 0, 4), 0)
    replay = writer.write(s, events(spark, 0, 4), 0)
    assert replay.skipped and replay.rows == 0 and replay.version is None
    assert writer.write(s, events(spark, 4, 6), 1).version == 1
    assert writer.write(s, events(spark, 4, 6), 1).skipped
    assert writer.write(s, events(spark, 90, 99), 0).skipped  # a lower batch id too
    assert ids(s.path) == list(range(6))
    assert DeltaTable(s.path).version() == 1
    assert not (Path(s.path) / STAGING_DIR / "pipe.m.q1" / "2").exists()


@pytest.mark.spark
def test_crash_between_staging_and_commit_is_invisible_and_replay_cleans_up(
        spark: SparkSession, writer: RsWriter, tmp_path: Path, armed: Any):
    s = spec(tmp_path, model="orders")
    writer.write(s, events(spark, 0, 4), 0)
    armed("sink.before_commit:orders@1")
    with pytest.raises(FailpointError):
        writer.write(s, events(spark, 4, 8, partitions=3), 1)
    staged = Path(staging_path(s.path, s.app_id, 1))
    crashed_files = parquet_files(staged)
    assert len(crashed_files) == 3  # written by Spark...
    assert writer.committed_version(s) == 0  # ...but never committed:
    assert ids(s.path) == [0, 1, 2, 3]  # invisible to readers
    assert DeltaTable(s.path).version() == 0
    armed("")
    result = writer.write(s, events(spark, 4, 8, partitions=2), 1)  # the replay
    assert (result.rows, result.skipped, result.version) == (4, False, 1)
    assert ids(s.path) == list(range(8))
    # the crashed attempt's files are gone; what is left is exactly what the log names
    in_log = {a["path"].split("/", 3)[3] for a in log_actions(s.path, "add")
              if a["path"].startswith(f"{STAGING_DIR}/pipe.orders.q1/1/")}
    assert parquet_files(staged) == in_log and len(in_log) == 2
    assert not crashed_files & in_log
    assert writer.write(s, events(spark, 4, 8), 1).skipped


@pytest.mark.spark
def test_crash_after_commit_then_replay_is_skipped(spark: SparkSession, writer: RsWriter,
                                                   tmp_path: Path, armed: Any):
    s = spec(tmp_path, model="orders")
    armed("sink.after_commit:orders@0=raise")
    with pytest.raises(FailpointError):
        writer.write(s, events(spark, 0, 4), 0)
    armed("")
    assert writer.write(s, events(spark, 0, 4), 0).skipped
    assert ids(s.path) == [0, 1, 2, 3]
    assert all((Path(s.path) / a["path"]).is_file() for a in log_actions(s.path, "add"))


@pytest.mark.spark
def test_partition_by_hive_folders_and_partition_values(spark: SparkSession,
                                                        writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, partition_by=["country"])
    writer.write(s, events(spark, 0, 9), 0)
    writer.write(s, events(spark, 9, 12), 1)
    table = DeltaTable(s.path)
    assert table.metadata().partition_columns == ["country"]
    adds = log_actions(s.path, "add")
    assert {a["partitionValues"]["country"] for a in adds} == {"de", "a b:c%d/e", None}
    assert all("country" not in json.loads(a["stats"])["minValues"] for a in adds)
    folders = {p.name for p in (Path(staging_path(s.path, s.app_id, 0))).iterdir()
               if p.is_dir()}
    assert folders == {"country=de", "country=a b%3Ac%25d%2Fe",
                       "country=__HIVE_DEFAULT_PARTITION__"}
    rows = read(s.path).to_pylist()
    assert len(rows) == 12
    assert all(r["country"] == {0: "de", 1: "a b:c%d/e", 2: None}[r["id"] % 3] for r in rows)
    de = read(s.path, filter=pc.field("country") == "de").column("id").to_pylist()
    assert sorted(de) == [0, 3, 6, 9]
    with pytest.raises(SinkError, match="partition_by"):
        writer.write(spec(tmp_path, partition_by=["eventId"]), events(spark, 0, 1), 2)


@pytest.mark.spark
def test_partition_column_starting_with_underscore(spark: SparkSession, writer: RsWriter,
                                                   tmp_path: Path):
    s = spec(tmp_path, partition_by=["_day"])
    writer.write(s, spark.sql("SELECT id, CAST(id % 2 AS STRING) AS _day FROM range(4)"), 0)
    assert sorted(read(s.path).column("id").to_pylist()) == [0, 1, 2, 3]
    assert {a["partitionValues"]["_day"] for a in log_actions(s.path, "add")} == {"0", "1"}


@pytest.mark.spark
def test_empty_batch_commits_nothing_and_leaves_nothing(spark: SparkSession,
                                                        writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    result = writer.write(s, events(spark, 0, 0), 0)
    assert (result.rows, result.skipped, result.version) == (0, False, None)
    assert not Path(s.path).exists()  # no table, no staging folder
    writer.write(s, events(spark, 0, 2), 1)
    assert writer.write(s, events(spark, 0, 0), 2).version is None
    assert DeltaTable(s.path).version() == 0
    assert not Path(staging_path(s.path, s.app_id, 2)).exists()


@pytest.mark.spark
def test_schema_change_is_refused_before_writing(spark: SparkSession, writer: RsWriter,
                                                 tmp_path: Path):
    s = spec(tmp_path, model="orders")
    writer.write(s, spark.sql("SELECT id, CAST(id AS INT) AS n FROM range(3)"), 0)
    other = spark.sql("SELECT id, CAST(id AS STRING) AS n, 1 AS extra FROM range(3)")
    with pytest.raises(SinkError, match="model orders: .*new column.*extra.*n: table"):
        writer.write(s, other, 1)
    assert not Path(staging_path(s.path, s.app_id, 1)).exists()
    with pytest.raises(SinkError, match="VOID"):
        writer.write(s, spark.sql("SELECT id, NULL AS n FROM range(1)"), 1)


@pytest.mark.spark
def test_arrow_and_spark_appends_share_one_table(spark: SparkSession, writer: RsWriter,
                                                 tmp_path: Path):
    s = spec(tmp_path)
    first = events(spark, 0, 3)
    writer.write(s, first.toArrow(), 0)  # created through write_deltalake
    writer.write(s, events(spark, 3, 6), 1)  # appended Spark-native
    assert ids(s.path) == list(range(6))


@pytest.mark.spark
def test_merge_source_of_a_small_or_unknown_batch_goes_through_arrow(
        spark: SparkSession, writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "target.n + source.n"})
    writer.write(s, spark.sql("SELECT 'a' AS k, 1L AS n"), 0)
    writer.write(s, spark.sql("SELECT 'a' AS k, 2L AS n UNION ALL SELECT 'b', 5L"), 1,
                 rows_hint=2)
    assert not Path(s.path, STAGING_DIR).exists()
    assert sorted(read(s.path).to_pylist(), key=lambda r: r["k"]) == [
        {"k": "a", "n": 3}, {"k": "b", "n": 5}]


@pytest.mark.spark
def test_merge_source_of_a_big_batch_is_staged_and_streamed(spark: SparkSession,
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch):
    """Above ``arrow_max_rows`` the merge source never reaches the driver (``toArrow`` is
    never called): Spark stages it, delta-rs merges the Parquet as a stream; the result, the
    replay skip and the duplicate-key refusal are those of the Arrow path, and the staging
    folder is gone after each commit."""
    from runner.errors import DuplicateKeyError

    def collected(self: Any) -> Any:
        raise AssertionError("the merge source was collected to the driver")

    monkeypatch.setattr(type(spark.range(1)), "toArrow", collected)  # the concrete class
    w = RsWriter(arrow_max_rows=1)
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "target.n + source.n"})
    rows = "SELECT concat('k', id % 50) AS k, 1L AS n FROM range({}, {})"
    first = w.write(s, spark.sql(rows.format(0, 50)), 0, rows_hint=50)  # creates the table
    assert (first.rows, first.version) == (50, 0)
    second = w.write(s, spark.sql(rows.format(0, 50) + " UNION ALL SELECT 'new', 7L"), 1,
                     rows_hint=51)
    assert (second.rows, second.skipped, second.version) == (51, False, 1)
    assert not Path(staging_path(s.path, s.app_id, 1)).exists()
    assert w.write(s, spark.sql(rows.format(0, 50)), 1, rows_hint=50).skipped
    table = {r["k"]: r["n"] for r in read(s.path).to_pylist()}
    assert len(table) == 51 and table["new"] == 7
    assert {table[f"k{i}"] for i in range(50)} == {2}
    assert DeltaTable(s.path).transaction_version(s.app_id) == 1
    with pytest.raises(DuplicateKeyError, match="k3"):
        w.write(s, spark.sql("SELECT 'k3' AS k, 1L AS n UNION ALL SELECT 'k3', 2L"), 2,
                rows_hint=2)
    with pytest.raises(SinkError, match="unique_key column.*k.*not in the model's output"):
        w.write(s, spark.sql("SELECT 'x' AS other, 1L AS n"), 2, rows_hint=2)
    assert DeltaTable(s.path).version() == 1  # neither wrote

    # A partitioned merge table created by a staged batch: partitioned as declared.
    part = spec(tmp_path, model="pm", materialized="merge", unique_key=["k"],
                partition_by=["p"])
    two = "SELECT concat('k', id) AS k, id % 2 AS p, id AS n FROM range({}, {})"
    w.write(part, spark.sql(two.format(0, 4)), 0, rows_hint=4)
    w.write(part, spark.sql(two.format(2, 6)), 1, rows_hint=4)
    assert DeltaTable(part.path).metadata().partition_columns == ["p"]
    assert sorted((r["k"], r["p"], r["n"]) for r in read(part.path).to_pylist()) == [
        (f"k{i}", i % 2, i) for i in range(6)]


@pytest.mark.spark
def test_tiny_batches_go_through_arrow(spark: SparkSession, tmp_path: Path):
    w = RsWriter(arrow_max_rows=100)
    s = spec(tmp_path)
    assert w.write(s, events(spark, 0, 5), 0, rows_hint=5).rows == 5
    assert not Path(s.path, STAGING_DIR).exists()  # write_deltalake wrote it
    assert w.write(s, events(spark, 5, 10), 1, rows_hint=101).rows == 5
    assert Path(staging_path(s.path, s.app_id, 1)).is_dir()  # Spark wrote it
    assert w.write(s, events(spark, 10, 12), 2).version == 2  # size unknown: Spark
    assert ids(s.path) == list(range(12))


# -- other readers ---------------------------------------------------------------------------


@pytest.fixture
def written(spark: SparkSession, tmp_path: Path) -> SinkSpec:
    s = spec(tmp_path, partition_by=["country"])
    RsWriter().write(s, events(spark, 0, 6), 0)
    RsWriter().write(s, events(spark, 6, 9), 1)
    return s


@pytest.mark.spark
def test_readable_by_polars(written: SinkSpec):
    pl = pytest.importorskip("polars")
    frame = pl.read_delta(written.path).sort("id")
    assert frame["id"].to_list() == list(range(9))
    assert str(frame.schema["ts"]) == "Datetime(time_unit='us', time_zone='UTC')"
    assert frame["ts"][0] == T0
    assert frame.filter(pl.col("country") == "de")["id"].to_list() == [0, 3, 6]


@pytest.mark.spark
def test_readable_by_duckdb_from_the_log_file_list(written: SinkSpec):
    duckdb = pytest.importorskip("duckdb")
    files = DeltaTable(written.path).file_uris()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rows = con.execute("SELECT id, ts FROM read_parquet(?) ORDER BY id", [files]).fetchall()
    assert [r[0] for r in rows] == list(range(9))
    assert rows[0][1] == T0


@pytest.mark.spark
def test_readable_by_spark_from_the_log_file_list(spark: SparkSession, written: SinkSpec):
    """Without the delta-spark jars, Spark reads the Parquet files the log names."""
    files = DeltaTable(written.path).file_uris()
    frame = spark.read.parquet(*files)
    rows = frame.select("id", "ts", "user.userId").orderBy("id").collect()
    assert [r.id for r in rows] == list(range(9))
    assert rows[0].ts.replace(tzinfo=UTC) == T0.replace(tzinfo=UTC)  # session is UTC
    assert rows[1].userId == "u1"


# -- footer statistics (no Spark) ------------------------------------------------------------


def _footer(tmp_path: Path, table: pa.Table, **kwargs: Any) -> pq.FileMetaData:
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, **kwargs)
    return pq.read_metadata(path)


def test_file_stats_bounds(tmp_path: Path):
    long = "x" * 40
    table = pa.table({
        "i": pa.array([3, None, 1], pa.int64()),
        "f": pa.array([1.5, float("nan"), -2.0]),
        "s": pa.array(["b", long, "a"]),
        "ts": pa.array([T0, T0 + dt.timedelta(microseconds=1500), None],
                       pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([dt.datetime(2024, 1, 1)] * 3, pa.timestamp("us")),
        "d": pa.array([dt.date(2024, 1, 2), dt.date(2024, 1, 1), None]),
        "b": pa.array([True, False, None]),
        "st": pa.array([{"x": 1}, None, {"x": 5}], pa.struct([("x", pa.int32())])),
        "l": pa.array([[1], None, [2]], pa.list_(pa.int64())),
    })
    stats = file_stats(_footer(tmp_path, table, row_group_size=2))  # two row groups
    assert stats["numRecords"] == 3
    assert stats["minValues"] == {"i": 1, "s": "a", "ts": "2024-05-01T12:00:00.123Z",
                                  "d": "2024-01-01", "st": {"x": 1}, "f": -2.0}
    assert stats["maxValues"] == {"i": 3, "ts": "2024-05-01T12:00:00.125Z",
                                  "d": "2024-01-02", "st": {"x": 5}, "f": 1.5}
    # strings longer than 32 characters: no max (a prefix would be too small)
    assert "s" not in stats["maxValues"]
    assert stats["nullCount"] == {"i": 1, "f": 0, "s": 0, "ts": 1, "ntz": 0, "d": 1, "b": 1,
                                  "st": {"x": 1}}


def test_file_stats_respects_indexed_column_count(tmp_path: Path):
    table = pa.table({f"c{i}": [i] for i in range(5)})
    stats = file_stats(_footer(tmp_path, table), indexed_columns=2)
    assert list(stats["minValues"]) == ["c0", "c1"]
    assert len(file_stats(_footer(tmp_path, table), indexed_columns=-1)["minValues"]) == 5


def test_file_stats_without_statistics(tmp_path: Path):
    stats = file_stats(_footer(tmp_path, pa.table({"a": [1, 2]}), write_statistics=False))
    assert stats == {"numRecords": 2, "minValues": {}, "maxValues": {}, "nullCount": {}}


def test_delta_schema_from_spark_json():
    spark_json = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {"comment": "x"}},
        {"name": "tags", "type": {"type": "array", "elementType": "string",
                                  "containsNull": False}, "nullable": False, "metadata": {}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": {
            "type": "struct", "fields": [{"name": "ts", "type": "timestamp",
                                          "nullable": False, "metadata": {}}]},
            "valueContainsNull": False}, "nullable": True, "metadata": {}},
    ]}
    schema = delta_schema_json(spark_json)
    assert schema["fields"][0] == {"name": "id", "type": "long", "nullable": True,
                                   "metadata": {}}
    assert schema["fields"][1]["type"]["containsNull"] is True
    value = schema["fields"][2]["type"]
    assert value["valueContainsNull"] is True
    assert value["valueType"]["fields"][0]["nullable"] is True
    with pytest.raises(SinkError, match="column x has type VOID"):
        delta_schema_json({"type": "struct", "fields": [
            {"name": "x", "type": "void", "nullable": True, "metadata": {}}]})


def test_vacuum_reclaims_batch_files_after_optimize(tmp_path: Path):
    """Batch folders are not hidden (no leading ``_``): VACUUM sees what OPTIMIZE removed."""
    from deltalake import CommitProperties, Transaction

    from runner.sinks.staged import collect_staged, commit_staged

    path = str(tmp_path / "t")
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    for batch in range(3):
        folder = Path(staging_path(path, "app.m.q", batch))
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([batch], pa.int64())}), folder / "part-0.parquet")
        table = DeltaTable(path) if DeltaTable.is_deltatable(path) else None
        commit_staged(path, collect_staged(path, "app.m.q", batch), schema_json=schema,
                      table=table, partition_by=(),
                      commit_properties=CommitProperties(
                          app_transactions=[Transaction("app.m.q", batch)]))
    DeltaTable(path).optimize.compact()
    doomed = DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False,
                                     dry_run=True)
    assert sorted(doomed) == [f"{STAGING_DIR}/app.m.q/{b}/part-0.parquet" for b in range(3)]
