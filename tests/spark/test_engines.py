"""The two Delta engines against each other: parallel merges keep their own transactions on
delta-spark, tables change hands between engines on one checkpoint, and Spark SQL reads
every table the runner writes with the right types.

These tests need both engines at once, so they are not parametrized by ``delta_engine``; they
are skipped without delta-spark's jars (and fail under ``RUNNER_REQUIRE_JARS=1``, as in CI).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from runner.build import compile_project
from runner.checkpoint.query_id import read_query_id
from runner.demo import write_demo_files
from runner.errors import ExecutionError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.base import APP_ID_KEY, BATCH_ID_KEY, app_id
from tests.support.events import results_into
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import DEAD, actual_tables, expected_tables

# Skipped without delta-spark; under RUNNER_REQUIRE_JARS=1 (CI) that is a failure instead.
pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("delta_spark")]

#: A second accumulating merge, so two merges run in one batch on two sink threads.
COUNTRY_COUNTS = """
{{ config(materialized='merge', unique_key='country',
          merge_update={'events': 'target.events + source.events'}) }}
SELECT coalesce(user.country, '?') AS country, count(*) AS events
FROM parsed_events
GROUP BY coalesce(user.country, '?')
"""
MODELS = {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS,
          "models/country_counts.sql": COUNTRY_COUNTS}
TABLES = ("request_logs", "error_events", "performance_metrics", "endpoint_counts", DEAD)


def project_models(project) -> list[str]:
    """The project's model names (every table but the dead letters)."""
    return sorted(p.stem for p in (project.root / "models").glob("*.sql"))


def _project(tmp_path: Path, engine: str):
    yml = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
           + "parallelism: 4\n")
    root = write_project(tmp_path / "proj", MODELS, project_yml=yml, engine=engine)
    (root / "incoming").mkdir()
    return load_project(root)


def _switch(project, engine: str):
    yml = project.root / "project.yml"
    text = yml.read_text()
    current = next(line for line in text.splitlines() if line.startswith("  engine: "))
    yml.write_text(text.replace(current + "\n", f"  engine: {engine}\n"))
    return load_project(project.root)


def _run(project, **kw):
    batches: list = []
    run_stream(project, compile_project(project).plan, mode="available_now",
               trigger="1 second", report=results_into(batches), **kw)
    return batches


def _country_reference(incoming: Path) -> dict[str, int]:
    from tests.support.reference import valid_event

    counts: dict[str, int] = {}
    for f in sorted(incoming.glob("*.json")):
        for line in f.read_text().splitlines():
            event = valid_event(line) if line.strip() else None
            if event is not None:
                country = (event.get("user") or {}).get("country")
                country = "?" if country is None else country  # coalesce(user.country, '?')
                counts[country] = counts.get(country, 0) + 1
    return counts


def _check(project) -> None:
    expected = expected_tables(project.root / "incoming")
    actual = actual_tables(project.warehouse)
    for name in TABLES:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, f"{name}: lost {list(lost)[:3]}, extra {list(extra)[:3]}"
    rows = (DeltaTable(str(project.table_path("country_counts"))).to_pyarrow_dataset()
            .to_table(use_threads=False).to_pylist())
    assert {r["country"]: r["events"] for r in rows} == _country_reference(
        project.root / "incoming")


def _txn(project, model: str) -> int | None:
    query_id = read_query_id(project.checkpoint)
    return DeltaTable(str(project.table_path(model))).transaction_version(
        app_id(project.config.name, model, query_id))


def test_parallel_merges_keep_their_own_transactions_on_delta_spark(tmp_path, armed) -> None:
    """delta-spark takes a MERGE's transaction from session confs shared by the sink threads
    (delta-io/delta#3934): two merges of one batch, written in parallel, must each record
    their own (app id, batch id), and a replay must skip exactly the committed ones."""
    project = _project(tmp_path, "spark")
    for batch in range(2):
        write_demo_files(project.root / "incoming", events=600, files=1, poison_every=100)
        _run(project)
        for model in ("endpoint_counts", "country_counts"):
            assert _txn(project, model) == batch, model
            history = DeltaTable(str(project.table_path(model))).history(1)[0]
            meta = json.loads(history["userMetadata"])
            assert meta[BATCH_ID_KEY] == batch and model in meta[APP_ID_KEY], (model, meta)
    _check(project)

    # Batch 2 fails right after endpoint_counts committed; country_counts ran beside it and
    # may or may not have committed. The replay skips exactly what committed.
    write_demo_files(project.root / "incoming", events=600, files=1, poison_every=100)
    armed("sink.after_commit:endpoint_counts@2=raise")
    with pytest.raises(ExecutionError, match="failpoint"):
        _run(project)
    armed("")
    committed = {m for m in ("endpoint_counts", "country_counts") if _txn(project, m) == 2}
    assert "endpoint_counts" in committed
    replay = _run(project)
    assert [b.batch_id for b in replay] == [2]
    skipped_merges = {m for m in ("endpoint_counts", "country_counts")
                      if m in replay[0].skipped}
    assert skipped_merges == committed
    _check(project)


@pytest.mark.parametrize("first", ["rs", "spark"])
def test_tables_change_hands_between_engines_on_one_checkpoint(tmp_path, first, armed) -> None:
    """Switching delta.engine between runs of one checkpoint loses and duplicates nothing:
    both engines keep the same application transactions in the same Delta log."""
    second = "spark" if first == "rs" else "rs"
    project = _project(tmp_path, first)
    for engine in (first, second):
        project = _switch(project, engine)
        write_demo_files(project.root / "incoming", events=500, files=1, poison_every=90)
        batches = _run(project)
        assert len(batches) == 1
        _check(project)
    # Batch 2 commits every table on the first engine and dies before Spark's commit log;
    # the second engine replays it and skips every table.
    project = _switch(project, first)
    write_demo_files(project.root / "incoming", events=500, files=1, poison_every=90)
    armed("batch.after_ledger@2=raise")
    with pytest.raises(ExecutionError, match="failpoint"):
        _run(project)
    armed("")
    project = _switch(project, second)
    replay = _run(project)
    assert [b.batch_id for b in replay] == [2]
    assert set(replay[0].skipped) == set(project_models(project))
    _check(project)


def test_spark_sql_reads_every_table_with_the_right_types(tmp_path, spark) -> None:
    """Spark (the delta reader and the table's history; not SQL by path, which the runner's
    session turns off: docs/SECURITY.md) reads what either engine wrote, the dead-letter table
    included; TIMESTAMP columns are UTC instants."""
    from delta.tables import DeltaTable as SparkDeltaTable
    from pyspark.sql.types import TimestampType

    project = _project(tmp_path, "rs")
    write_demo_files(project.root / "incoming", events=300, files=1, poison_every=50)
    _run(project)
    project = _switch(project, "spark")
    write_demo_files(project.root / "incoming", events=300, files=1, poison_every=50)
    _run(project)
    _check(project)
    expected = expected_tables(project.root / "incoming")
    for name in (*TABLES, "country_counts"):
        path = project.table_path(name)
        df = spark.read.format("delta").load(str(path))
        assert df.count() == DeltaTable(str(path)).to_pyarrow_dataset().count_rows(), name
        if name in expected:
            assert df.count() == sum(expected[name].values()), name
        history = SparkDeltaTable.forPath(spark, str(path)).history().collect()
        batches = {json.loads(h["userMetadata"]).get(BATCH_ID_KEY) for h in history
                   if h["userMetadata"]}
        assert batches and batches <= {0, 1, None}, (name, batches)
    logs = spark.read.format("delta").load(str(project.table_path("request_logs")))
    ts_fields = [f.name for f in logs.schema.fields if isinstance(f.dataType, TimestampType)]
    assert ts_fields, logs.schema
    # The same instants through Spark and through delta-rs (microseconds since the epoch, UTC).
    column = ts_fields[0]
    via_spark = sorted(r[0] for r in logs.selectExpr(f"unix_micros(`{column}`)").collect()
                       if r[0] is not None)
    via_rs = sorted(int(v.replace(tzinfo=dt.UTC).timestamp() * 1_000_000)
                    if v.tzinfo is None else int(v.timestamp() * 1_000_000)
                    for v in DeltaTable(str(project.table_path("request_logs")))
                    .to_pyarrow_dataset().to_table(columns=[column], use_threads=False)
                    .column(column).to_pylist() if v is not None)
    assert via_spark == via_rs and via_spark
    dead = spark.read.format("delta").load(str(project.table_path(DEAD))).select(
        "raw", "reason", "_batch_id")
    assert dead.count() == sum(expected[DEAD].values())
    assert all(r["reason"] for r in dead.collect())
