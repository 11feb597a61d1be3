"""Evolving a running pipeline, end to end on the shared SparkSession: models added to a
checkpoint that processed several batches are backfilled from its history (an append model
that refs an existing model, an accumulating merge), ``backfill=false`` starts at the next
batch, ``--full-refresh --select`` rebuilds one table, a removed model's table is left in
place, and a backfill cut short anywhere resumes exactly. Every table is compared with the
independent reference (``tests/support/reference.py``); the tables a backfill must not touch
keep their Delta versions."""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from runner.build import compile_project
from runner.checkpoint.registry import load_registry
from runner.demo import write_demo_files
from runner.errors import ConfigError, ExecutionError, SourceError
from runner.events import ModelJoining, ModelRebuilding, ModelRetired
from runner.failpoints import FailpointError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.base import batch_id_of_commit
from runner.sinks.tables import read_table
from tests.support.events import Recorder
from tests.support.projects import (
    BASE_YML,
    ENDPOINT_COUNTS,
    EXAMPLE_FILES,
    SLOW_REQUESTS,
    write_project,
)
from tests.support.reference import DEAD, actual_tables, expected_tables, valid_event

pytestmark = pytest.mark.spark

YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))
LIVE = ("request_logs", "error_events", "performance_metrics", DEAD)
NEW = ("endpoint_counts", "slow_requests")


def _project(tmp_path: Path, batches: int = 3, *, engine: str = "rs"):
    """The example project after ``batches`` micro-batches (one file of 200 events each)."""
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=YML, engine=engine)
    (root / "incoming").mkdir()
    for _ in range(batches):
        _feed(root)
    project = load_project(root)
    assert _run(project).batches == batches
    return project


def _feed(root: Path) -> None:
    write_demo_files(root / "incoming", events=200, files=1, poison_every=40)


def _add(project, files: dict[str, str]):
    write_project(project.root, files, project_yml=(project.root / "project.yml").read_text())
    return load_project(project.root)


def _run(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _versions(project, names=LIVE) -> dict[str, int]:
    return {n: DeltaTable(str(project.table_path(n))).version() for n in names}


def assert_exact(project, names) -> None:
    expected = expected_tables(project.root / "incoming", names)
    actual = actual_tables(project.warehouse)
    for name in names:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (f"{name}: {sum(lost.values())} rows lost, "
                                        f"{sum(extra.values())} extra, e.g. "
                                        f"{list((lost or extra).items())[:3]}")


# The spark engine's run is nightly (30 s on the CI machine; the suite's 25-minute budget).
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_new_models_are_backfilled_then_join_the_stream(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    before = _versions(project)
    project = _add(project, {"models/endpoint_counts.sql": ENDPOINT_COUNTS,
                             "models/slow_requests.sql": SLOW_REQUESTS,
                             "models/late.sql": """
        {{ config(backfill=false) }}
        SELECT eventId FROM parsed_events
    """})
    events = Recorder()
    summary = _run(project, report=events)
    progress, batches = events.backfill, events.batches
    # No new input: only the backfill ran, one batch per original batch, nothing else written.
    assert summary.batches == 0 and not batches
    assert [(p.batch_id, p.done) for p in progress] == [(0, False), (1, False), (2, False),
                                                        (2, True)]
    assert progress[-1].models == NEW and progress[-1].input_rows == 600
    assert progress[-1].rows_by_model["endpoint_counts"] > 0
    assert _versions(project) == before
    assert not project.table_path("late").exists()
    joining = {e.model: e for e in events.of(ModelJoining)}
    assert joining["endpoint_counts"] == ModelJoining(
        "endpoint_counts", "new", "backfill", start=0, committed=2, next_batch=3)
    assert (joining["late"].status, joining["late"].action, joining["late"].next_batch) == \
        ("new", "no_backfill", 3)
    assert_exact(project, LIVE + NEW)
    # Batches carry their original ids: the merge committed 0, 1 and 2 (one merge each).
    history = DeltaTable(str(project.table_path("endpoint_counts"))).history()
    assert sorted(b for b in map(batch_id_of_commit, history) if b is not None) == \
        [0, 1, 2]

    # The stream goes on with every model from the next batch; late has that batch only.
    _feed(project.root)
    events = Recorder()
    summary = _run(project, report=events)
    assert [b.batch_id for b in events.batches] == [3] and not events.backfill
    assert_exact(project, LIVE + NEW)
    assert len(read_table(str(project.table_path("late")))) == 200 - 5
    assert {m: e.state for m, e in load_registry(project.checkpoint).items()} == \
        dict.fromkeys(["endpoint_counts", "error_events", "late", "performance_metrics",
                       "request_logs", "slow_requests"], "live")

    # --full-refresh --select: one table dropped and rebuilt, everything else as it was. The
    # model gained a column: refused without the rebuild, the rebuilt table has it.
    project = _add(project, {"models/endpoint_counts.sql": ENDPOINT_COUNTS.replace(
        "'target.errors + source.errors'",
        "'target.errors + source.errors', 'slowest': 'greatest(target.slowest, source.slowest)'"
    ).replace("AS errors\n", "AS errors, max(request.latency_ms) AS slowest\n")})
    # (a merge model whose definition changed is refused before its schema is compared:
    # runner/runtime/start/definitions.py; the schema refusal itself: tests/spark/test_schema_change.py)
    with pytest.raises(ConfigError, match="(?s)model endpoint_counts: its definition changed "
                                          ".*--full-refresh --select endpoint_counts"):
        _run(project)
    before = _versions(project, LIVE + ("slow_requests", "late"))
    events = Recorder()
    _run(project, rebuild=["endpoint_counts"], report=events)
    assert ModelRebuilding("endpoint_counts", committed=3) in events
    assert _versions(project, LIVE + ("slow_requests", "late")) == before
    table = DeltaTable(str(project.table_path("endpoint_counts")))
    history = table.history()
    assert sorted(map(batch_id_of_commit, history)) == [0, 1, 2, 3]  # a new table
    assert_exact(project, LIVE + NEW)
    slowest = {r["endpoint"]: r["slowest"] for r in read_table(table.table_uri).to_pylist()}
    events_by_endpoint: dict[str, int] = {}
    for line in (project.root / "incoming").glob("*.json"):
        for event in map(valid_event, line.read_text().splitlines()):
            if event is not None:
                e = event["request"]["endpoint"]
                events_by_endpoint[e] = max(events_by_endpoint.get(e, 0),
                                            event["request"]["latency_ms"])
    assert slowest == events_by_endpoint

    # A removed model: its table stays, the start-up says so; the rest goes on.
    (project.root / "models" / "slow_requests.sql").unlink()
    project = load_project(project.root)
    _feed(project.root)
    events = Recorder()
    frozen = _versions(project, ("slow_requests",))
    _run(project, report=events)
    [retired] = events.of(ModelRetired)
    assert (retired.model, retired.table) == \
        ("slow_requests", str(project.table_path("slow_requests")))
    assert _versions(project, ("slow_requests",)) == frozen
    assert_exact(project, LIVE + ("endpoint_counts",))

    # A rename that keeps the old rows (docs/AE_GUIDE.md): move the table with the file and
    # start the renamed model without a backfill; it goes on from the next batch.
    rows = len(read_table(str(project.table_path("late"))))
    (project.root / "models" / "late.sql").rename(project.root / "models" / "late_v2.sql")
    project.table_path("late").rename(project.table_path("late_v2"))
    project = load_project(project.root)
    _feed(project.root)
    events = Recorder()
    _run(project, report=events)
    assert [(e.model, e.status, e.action) for e in events.of(ModelJoining)] == \
        [("late_v2", "new", "no_backfill")]
    # its table moved away: forgotten
    assert ("late", None) in [(e.model, e.table) for e in events.of(ModelRetired)]
    assert len(read_table(str(project.table_path("late_v2")))) == rows + 195
    assert "late" not in load_registry(project.checkpoint)


POINTS = ("sink.after_commit:endpoint_counts@1", "backfill.after_commit:slow_requests@0",
          "backfill.before_live", "backfill.after_live", "backfill.start")


# On delta-spark this takes 45 s (ten restarts): `slow`, for the suite's 15-minute budget. The
# backfill's writes on delta-spark run in the default suite in the test above; the resume logic
# each failpoint exercises is the same on both engines.
@pytest.mark.parametrize("engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)])
def test_a_backfill_cut_short_anywhere_resumes_exactly(tmp_path, armed, engine, request) -> None:
    """Each failpoint in turn stops the backfill (the first time as new models, then as
    rebuilds); the next start-up, unarmed and without --full-refresh, finishes it."""
    if engine == "spark":
        request.getfixturevalue("delta_spark")
    project = _project(tmp_path, engine=engine)
    project = _add(project, {"models/endpoint_counts.sql": ENDPOINT_COUNTS,
                             "models/slow_requests.sql": SLOW_REQUESTS})
    before = _versions(project)
    for i, point in enumerate(POINTS):
        armed(f"{point}=raise")
        with pytest.raises((FailpointError, ExecutionError), match=point.split("@")[0]):
            _run(project, rebuild=NEW if i else ())
        armed("")
        events = Recorder()
        _run(project, report=events)
        progress = events.backfill
        done = [p for p in progress if p.done]
        if point.startswith(("sink.", "backfill.after_commit")):  # resumed after the commit
            assert min(p.batch_id for p in progress) >= 1 and done, point
        elif point == "backfill.start":  # the rebuild's drop had not happened: all again
            assert [p.batch_id for p in progress if not p.done] == [0, 1, 2], point
        else:  # every batch was written: nothing left to do
            assert not progress, point
        assert_exact(project, LIVE + NEW)
        assert _versions(project) == before, point


def test_replayed_files_give_the_stream_s_rows(spark, tmp_path) -> None:
    """The files of a past batch read again (a name with a space: URI-encoded in the source
    log) give the rows and ``_source_file`` values the stream gave."""
    from runner.sources.files import read_files_stream
    from runner.sources.history import file_batches
    from runner.sources.replay import read_files

    incoming = tmp_path / "in"
    incoming.mkdir()
    (incoming / "a b.json").write_text('{"x": 1}\n\n{"x": 2}\r\n')
    (incoming / "c.json").write_text('{"x": 3}\n')
    seen = []
    query = (read_files_stream(spark, path=str(incoming), max_files_per_trigger=None)
             .writeStream.option("checkpointLocation", str(tmp_path / "cp"))
             .foreachBatch(lambda df, _: seen.extend(map(tuple, df.collect())))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    (past,) = file_batches(tmp_path / "cp", through=0)
    again = [tuple(r) for r in read_files(spark, past).collect()]
    assert sorted(again) == sorted(seen) and len(seen) == 3
    (incoming / "c.json").unlink()
    with pytest.raises(SourceError, match="c.json that batch 0 read is gone"):
        read_files(spark, past)
