"""`runner stream` end to end on a real local SparkSession; tables read back with delta-rs.

The reference for every check is computed here, in plain Python, from the input lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.demo import POISON, write_demo_files
from runner.errors import ConfigError, ExecutionError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.events import results_into
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import DEAD, actual_tables, expected_tables

pytestmark = pytest.mark.spark



def _project(tmp_path: Path, extra: dict[str, str] | None = None, *, engine: str = "rs"):
    yml = BASE_YML + "parallelism: 4\n"
    root = write_project(tmp_path / "proj", {**EXAMPLE_FILES, **(extra or {})},
                         project_yml=yml.replace("vars:\n  slow_ms: 1000\n",
                                                 "vars:\n  slow_request_ms: 1000\n"),
                         engine=engine)
    (root / "incoming").mkdir()
    return load_project(root)


def _run(project, **kw):
    plan = compile_project(project).plan
    return run_stream(project, plan, mode="available_now", trigger="1 second", **kw)


def _lines(project) -> list[str]:
    out = []
    for f in sorted((project.root / "incoming").glob("*.json")):
        out += [line for line in f.read_text().splitlines() if line.strip()]
    return out


def _table(project, name):
    """The table read back with delta-rs; a table never committed to reads as empty."""
    import pyarrow as pa

    path = project.table_path(name)
    return read_table(str(path)) if path.exists() else pa.table({})


def _check_tables(project, *, merge: bool = False) -> None:
    """Every table holds exactly the rows the input files call for, as multisets of values
    (the independent reference in tests/support/reference.py): nothing lost, nothing twice."""
    expected = expected_tables(project.root / "incoming")
    actual = actual_tables(project.warehouse)
    names = ["request_logs", "error_events", "performance_metrics", DEAD]
    for name in names + (["endpoint_counts"] if merge else []):
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, f"{name}: lost {list(lost)[:3]}, extra {list(extra)[:3]}"
    # the reference agrees with the demo about which lines are poison
    poison = [line for line in _lines(project) if line in POISON]
    assert sum(expected[DEAD].values()) == len(poison)


def test_end_to_end_values_rerun_and_incremental(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    write_demo_files(project.root / "incoming", events=3000, files=2, poison_every=500)
    batches = []
    summary = _run(project, report=results_into(batches))
    assert summary.batches == 1 and summary.input_rows == 3000
    _check_tables(project)
    # values and types survive the trip: instants in UTC, nested fields flattened
    first = json.loads(_lines(project)[0])
    row = next(r for r in _table(project, "request_logs").to_pylist()
               if r["eventId"] == first["eventId"])
    assert row["timestamp"].isoformat().startswith(first["timestamp"][:19])
    assert row["userId"] == first["user"]["userId"]
    assert row["status_class"] == ("server_error" if first["request"]["status_code"] >= 500 else
                                   "client_error" if first["request"]["status_code"] >= 400
                                   else "ok")
    dead = _table(project, "_dead_letter").to_pylist()
    assert {d["reason"] for d in dead} >= {"invalid JSON", "not a JSON object (array)",
                                           "missing NOT NULL field eventId"}
    assert any("request.latency_ms" in d["reason"] for d in dead)
    assert all(d["_source_file"].endswith(".json") and d["_batch_id"] == 0 for d in dead)

    # A rerun with no new input changes nothing: no batch, no new Delta version.
    from deltalake import DeltaTable

    versions = {m: DeltaTable(str(project.table_path(m))).version() for m in
                ("request_logs", "error_events", "performance_metrics")}
    assert _run(project).batches == 0
    assert versions == {m: DeltaTable(str(project.table_path(m))).version() for m in versions}

    # New files are picked up incrementally, and only they are read.
    write_demo_files(project.root / "incoming", events=1000, files=1, poison_every=500)
    summary = _run(project)
    assert summary.batches == 1 and summary.input_rows == 1000
    _check_tables(project)


def test_failure_between_sinks_then_restart_is_exactly_once(tmp_path, armed, delta_engine) -> None:
    project = _project(tmp_path, {"models/endpoint_counts.sql": ENDPOINT_COUNTS}, engine=delta_engine)
    write_demo_files(project.root / "incoming", events=2000, files=1, poison_every=400)
    _run(project)
    write_demo_files(project.root / "incoming", events=2000, files=1, poison_every=400)
    # Batch 1 fails right after the accumulating merge committed (other sinks may or may not
    # have committed: they run in parallel); the restart replays batch 1.
    armed("sink.after_commit:endpoint_counts@1")
    with pytest.raises(ExecutionError, match="failpoint"):
        _run(project)
    armed("")
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1]
    assert "endpoint_counts" in replay[0].skipped
    _check_tables(project, merge=True)


def test_fresh_checkpoint_over_existing_tables_is_refused(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    write_demo_files(project.root / "incoming", events=500, files=1, poison_every=0)
    _run(project)
    import shutil

    shutil.rmtree(project.checkpoint)
    with pytest.raises(ConfigError, match="(?s)another checkpoint.*--full-refresh"):
        _run(project)
    summary = _run(project, full_refresh=True)
    assert summary.input_rows == 500
    _check_tables(project)


def test_merge_with_duplicate_keys_names_model_and_key(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, {"models/bad_merge.sql": """
        {{ config(materialized='merge', unique_key='endpoint') }}
        SELECT request.endpoint AS endpoint, eventId FROM parsed_events
    """}, engine=delta_engine)
    # lint refuses the model (merge-key-not-unique is an error): the duplicates are the point
    yml = project.root / "project.yml"
    yml.write_text(yml.read_text() + "lint:\n  rules:\n    merge-key-not-unique: warn\n")
    project = load_project(project.root)
    assert any(v.rule == "merge-key-not-unique" and v.severity == "warn"
               for v in compile_project(project).violations)
    write_demo_files(project.root / "incoming", events=200, files=1, poison_every=0)
    summary = _run(project)  # parked (on_model_error: park), the other models written
    parked = summary.parked["bad_merge"]
    assert (parked.batch_id, parked.error_class) == (0, "DUPLICATE_MERGE_KEY")
    assert "unique_key (endpoint)" in parked.message
    assert summary.rows_by_model["request_logs"] == 200
    # With on_model_error='halt' its catch-up fails the start, naming model and key.
    sql = project.root / "models" / "bad_merge.sql"
    sql.write_text(sql.read_text().replace("unique_key='endpoint'",
                                           "unique_key='endpoint', on_model_error='halt'"))
    with pytest.raises(ExecutionError, match="bad_merge.*unique_key.*endpoint"):
        _run(load_project(project.root))


def test_expectations_drop_quarantine_and_fail_in_the_stream(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, {"models/checked.sql": """
        {{ config(expectations=[
            {'name': 'not_search', 'expr': "endpoint <> '/search'", 'on_violation': 'quarantine'},
            {'name': 'fast', 'expr': 'latency_ms < 2000', 'on_violation': 'drop'}]) }}
        SELECT eventId, request.endpoint AS endpoint, request.latency_ms AS latency_ms
        FROM parsed_events
    """}, engine=delta_engine)
    write_demo_files(project.root / "incoming", events=1500, files=1, poison_every=0)
    results = []
    _run(project, report=results_into(results))
    events = [json.loads(line) for line in _lines(project)]
    search = {e["eventId"] for e in events if e["request"]["endpoint"] == "/search"}
    slow = {e["eventId"] for e in events if e["request"]["latency_ms"] >= 2000} - search
    kept = {e["eventId"] for e in events} - search - slow
    assert search and slow
    assert set(_table(project, "checked").column("eventId").to_pylist()) == kept
    dead = _table(project, "_dead_letter").to_pylist()
    assert {json.loads(d["raw"])["eventId"] for d in dead} == search
    assert all("not_search" in d["reason"] and "checked" in d["reason"] for d in dead)
    assert results[0].expectations["checked"]["not_search"] == len(search)
    assert results[0].dead_letters == len(search)  # the progress line's "dead": quarantined too
    # A 'fail' expectation fails the batch, naming the model and the expectation.
    failing = _project(tmp_path / "f", {"models/checked.sql": """
        {{ config(expectations=[{'name': 'no_checkout', 'expr': "endpoint <> '/checkout'"}]) }}
        SELECT eventId, request.endpoint AS endpoint FROM parsed_events
    """}, engine=delta_engine)
    write_demo_files(failing.root / "incoming", events=300, files=1, poison_every=0)
    with pytest.raises(ExecutionError, match="checked.*no_checkout"):
        _run(failing)


def test_append_path_follows_delta_arrow_max_rows(tmp_path) -> None:
    """On a local master appends go through Arrow by default; `delta.arrow_max_rows: 0` makes
    Spark write them (files under <table>/batches/). Same rows either way. rs only: the
    setting chooses between the rs engine's two append paths (delta-spark has one)."""
    from runner.sinks.staged import STAGING_DIR

    for name, setting in (("arrow", ""), ("spark", "  arrow_max_rows: 0\n")):
        project = _project(tmp_path / name)
        if setting:
            yml = project.root / "project.yml"
            yml.write_text(yml.read_text().replace("  engine: rs\n", "  engine: rs\n" + setting))
            project = load_project(project.root)
        write_demo_files(project.root / "incoming", events=1000, files=1, poison_every=250)
        _run(project)
        _check_tables(project)
        staged = (project.table_path("request_logs") / STAGING_DIR).is_dir()
        assert staged == bool(setting), (name, staged)
