"""run_batch does no avoidable pass: one Spark job for the parse (it fills the cache and counts
the batch), one per sink write, no ``count()``, no dead-letter job without dead letters,
persist only for two or more consumers, the parse pruned to the fields the models read."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from runner.compile.plan import Plan, Step
from runner.compile.reads import reads_of
from runner.project.config import ModelConfig
from runner.runtime.batches.batch import CACHE_COMPRESSION, BatchPlan, prepare, run_batch
from runner.sinks import RsWriter, SinkSpec
from runner.sinks.staged import STAGING_DIR

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = ("eventId STRING NOT NULL, ts TIMESTAMP, "
          "request STRUCT<endpoint: STRING, latency_ms: INT>, amount DOUBLE, note STRING")
TS = '"ts":"2024-05-01T10:00:00Z"'
LINES = [
    '{"eventId":"a",' + TS + ',"request":{"endpoint":"/x","latency_ms":5}}',
    '{"eventId":"b",' + TS + ',"request":{"endpoint":"/y","latency_ms":7},"amount":"abc"}',
    '{"eventId":"c",' + TS + ',"request":{"endpoint":"/x","latency_ms":"slow"}}',
    "not json",
    '{"eventId":"d",' + TS + ',"request":{"endpoint":"/y","latency_ms":1}}',
]


def step(name: str, sql: str, depends_on: tuple[str, ...] = ()) -> Step:
    return Step(name=name, path=f"models/{name}.sql", sql=sql, config=ModelConfig(),
                depends_on=depends_on, columns=(), reads=reads_of(sql))


def batch_plan(tmp_path: Path, steps: list[Step], used: tuple[str, ...] | None,
               writer: RsWriter | None = None) -> BatchPlan:
    plan = Plan(project="p", source_type="files", schema_ddl=SCHEMA, dead_letter="_dead",
                steps=tuple(steps), used_fields=used)
    sinks = {s.name: SinkSpec(model=s.name, path=str(tmp_path / s.name), app_id=f"p.{s.name}.q")
             for s in steps}
    dead = SinkSpec(model="_dead", path=str(tmp_path / "_dead"), app_id="p._dead.q")
    return BatchPlan(plan=plan, sinks=sinks, dead_letter=dead,
                     metadata_columns={"_source_file": "STRING"}, writer=writer or RsWriter(),
                     parse_only_used_fields=used is not None)


def raw(spark: SparkSession, lines: list[str]) -> Any:
    return spark.createDataFrame([(line, "f.json") for line in lines],
                                 "value STRING, _source_file STRING")


def jobs(spark: SparkSession) -> set[int]:
    tracker = spark.sparkContext.statusTracker()
    return set(tracker.getJobIdsForGroup(None))


def rows(path: Path) -> list[dict[str, Any]]:
    return DeltaTable(str(path)).to_pyarrow_dataset().to_table(use_threads=False).to_pylist()


@pytest.mark.spark
@pytest.mark.parametrize("arrow_max_rows", [0, 10_000], ids=["spark-native", "tiny-arrow"])
def test_one_job_per_sink_counts_observed_and_pruned_parse(spark: SparkSession,
                                                           tmp_path: Path,
                                                           arrow_max_rows: int) -> None:
    steps = [step("slow", "SELECT eventId, request.latency_ms AS ms FROM parsed_events"),
             step("ends", "SELECT eventId, request.endpoint AS endpoint FROM parsed_events")]
    bp = batch_plan(tmp_path, steps, used=("request",),
                    writer=RsWriter(arrow_max_rows=arrow_max_rows))
    before = jobs(spark)
    result = run_batch(bp, raw(spark, LINES), 0)
    ran = jobs(spark) - before
    # the parse (cache fill + counts), then one write job per sink (two models, the dead
    # letters): no count() and no other action
    assert len(ran) == 4, ran
    assert (result.input_rows, result.dead_letters) == (5, 2)
    assert result.rows_by_model == {"slow": 3, "ends": 3}
    # "amount": "abc" is in a field no model reads: the record is valid (pruned parse)
    assert sorted(r["eventId"] for r in rows(tmp_path / "slow")) == ["a", "b", "d"]
    dead = {r["raw"]: r["reason"] for r in rows(tmp_path / "_dead")}
    assert dead == {LINES[2]: 'field request.latency_ms: expected INT, got "slow"',
                    "not json": "invalid JSON"}
    # no model reads _source_file: the cache keeps it for dead rows only, and they have it
    assert {r["_source_file"] for r in rows(tmp_path / "_dead")} == {"f.json"}
    assert not spark.catalog.isCached("parsed_events")  # unpersisted at the end
    assert (tmp_path / "slow" / STAGING_DIR).is_dir() == (arrow_max_rows == 0)


@pytest.mark.spark
def test_the_dead_letter_commit_overlaps_the_models(spark: SparkSession, tmp_path: Path,
                                                    armed: Any) -> None:
    """The dead letters are written in the batch's pool with the models, not before them: held
    2 s before its commit, the dead-letter table commits after both models did. (The batch's
    orchestration is engine-independent: delta-rs sinks here.)"""
    steps = [step("slow", "SELECT eventId, request.latency_ms AS ms FROM parsed_events"),
             step("ends", "SELECT eventId, request.endpoint AS endpoint FROM parsed_events")]
    bp = batch_plan(tmp_path, steps, used=None)
    armed("sink.before_commit:_dead@0=sleep:2")
    result = run_batch(bp, raw(spark, LINES), 0)
    assert (result.input_rows, result.dead_letters) == (5, 3)  # "amount": "abc" too
    assert sorted(result.rows_by_model) == ["ends", "slow"]  # the batch reports its models
    committed = {n: DeltaTable(str(tmp_path / n)).history(1)[0]["timestamp"]
                 for n in ("slow", "ends", "_dead")}
    assert committed["_dead"] > max(committed["slow"], committed["ends"]), committed
    assert len(rows(tmp_path / "_dead")) == 3


@pytest.mark.spark
def test_no_dead_rows_commits_no_dead_letter_table(spark: SparkSession,
                                                   tmp_path: Path) -> None:
    bp = batch_plan(tmp_path, [step("m", "SELECT eventId FROM parsed_events")], ("eventId",),
                    writer=RsWriter(arrow_max_rows=0))
    before = jobs(spark)
    result = run_batch(bp, raw(spark, [LINES[0], LINES[4]]), 0)
    assert len(jobs(spark) - before) == 2  # the parse, the model: no dead-letter write job
    assert (result.input_rows, result.dead_letters) == (2, 0)
    assert not (tmp_path / "_dead").exists()


@pytest.mark.spark
def test_replay_after_dead_letters_committed_still_counts(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    steps = [step("m", "SELECT eventId FROM parsed_events")]
    bp = batch_plan(tmp_path, steps, ("eventId",))
    RsWriter().write(bp.dead_letter, raw(spark, ["x"]).selectExpr(
        "value AS raw", "'r' AS reason", "7L AS _batch_id", "_source_file"), 7)
    result = run_batch(bp, raw(spark, LINES), 7)  # the dead-letter sink is skipped
    assert result.writes[0].model == "m" and not result.writes[0].skipped
    assert (result.input_rows, result.dead_letters) == (5, 1)  # "slow": request not parsed
    assert len(rows(tmp_path / "_dead")) == 1  # not written twice


@pytest.mark.spark
def test_select_star_parses_every_field(spark: SparkSession, tmp_path: Path) -> None:
    bp = batch_plan(tmp_path, [step("m", "SELECT * FROM parsed_events")], None)
    result = run_batch(bp, raw(spark, LINES), 0)
    assert (result.input_rows, result.dead_letters) == (5, 3)  # "amount": "abc" is dead now
    assert {"amount", "note", "_batch_id"} <= set(rows(tmp_path / "m")[0])


@pytest.mark.spark
def test_metadata_reaches_a_model_that_reads_it(spark: SparkSession, tmp_path: Path) -> None:
    steps = [step("files", "SELECT eventId, _source_file AS f FROM parsed_events")]
    run_batch(batch_plan(tmp_path, steps, None), raw(spark, [LINES[0], LINES[4]]), 0)
    assert [r["f"] for r in rows(tmp_path / "files")] == ["f.json", "f.json"]


@pytest.mark.spark
def test_prepare_caches_batches_uncompressed_and_rows_stay_exact(spark: SparkSession,
                                                                  tmp_path: Path) -> None:
    # Engine-independent (the session's cache, not a Delta engine): written once, through rs.
    steps = [step("m", "SELECT eventId, request.endpoint AS e FROM parsed_events"),
             step("n", "SELECT eventId FROM parsed_events")]
    bp = batch_plan(tmp_path, steps, None)
    assert not spark.sparkContext.getConf().contains(CACHE_COMPRESSION)
    try:
        prepare(bp)
        assert spark.conf.get(CACHE_COMPRESSION) == "false"
        result = run_batch(bp, raw(spark, LINES), 0)
    finally:
        spark.conf.unset(CACHE_COMPRESSION)  # the shared session's default again
    assert (result.input_rows, result.dead_letters) == (5, 3)
    assert sorted((r["eventId"], r["e"]) for r in rows(tmp_path / "m")) == [("a", "/x"),
                                                                            ("d", "/y")]
    assert {r["raw"] for r in rows(tmp_path / "_dead")} == {LINES[1], LINES[2], "not json"}
