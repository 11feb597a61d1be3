"""Nothing dropped without a record, end to end through ``runner stream``,
tables read back with delta-rs and compared with the plain-Python reference
(tests/support/reference.py: ``json.loads`` refuses trailing content, so it calls such a line
a dead letter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.demo import write_demo_files
from runner.project.loader import load_project
from runner.runtime.reasons import TRAILING_REASON
from runner.runtime.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import DEAD, actual_tables, expected_tables

pytestmark = pytest.mark.spark


def _project(tmp_path: Path, *, engine: str = "rs", extra_yml: str = ""):
    yml = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
    root = write_project(tmp_path / "proj",
                         {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS},
                         project_yml=yml + extra_yml, engine=engine)
    (root / "incoming").mkdir()
    return load_project(root)


def _run(project) -> None:
    run_stream(project, compile_project(project).plan, mode="available_now", trigger="1 second")


def test_a_second_object_on_a_line_is_a_dead_letter(tmp_path) -> None:
    """Before, ``{..}{..}`` on one line wrote the first object and dropped the second without
    a record. On rs only: the parse is engine-independent (one Spark expression before any
    writer) and the dead-letter table is written like any other table, which the engine tests
    cover on both engines."""
    project = _project(tmp_path)
    incoming = project.root / "incoming"
    write_demo_files(incoming, events=200, files=1, poison_every=0)
    lines = (incoming / sorted(p.name for p in incoming.glob("*.json"))[0]).read_text()
    events = [json.loads(line) for line in lines.splitlines()[:4]]
    one = json.dumps(events[0])
    glued = [one + json.dumps(events[1]),  # two objects, no space
             json.dumps(events[2]) + "  " + json.dumps(events[3]),
             one + "] [1}",  # closes a wrapping array early
             one + "}"]
    (incoming / "glued.json").write_text("\n".join(glued) + "\n", encoding="utf-8")
    _run(project)

    expected = expected_tables(incoming)
    actual = actual_tables(project.warehouse)
    for name in ("request_logs", "error_events", "performance_metrics", DEAD):
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, f"{name}: lost {list(lost)[:2]}, extra {list(extra)[:2]}"
    dead = read_table(str(project.table_path(DEAD))).to_pylist()
    assert sorted(d["raw"] for d in dead) == sorted(glued)
    assert {d["reason"] for d in dead} == {TRAILING_REASON}


def test_vacuum_keeps_removed_files_for_the_retention(tmp_path, delta_engine) -> None:
    """Vacuum ran with retention 0: a file a MERGE replaced was deleted at the next
    maintenance, under a reader still on the older version. Now the default keeps files
    removed in the last 168 hours; ``vacuum_retention_hours: 0`` (explicit) removes them, and
    the report counts them per table. Both engines: each writes its own remove actions
    (delta-spark's MERGE, delta-rs'), which the retention reads."""
    from deltalake import DeltaTable

    from runner.ops.maintain import maintain, report_lines

    project = _project(tmp_path, engine=delta_engine,
                       extra_yml="maintenance:\n  keep_batches: 1\n")
    incoming = project.root / "incoming"
    for n in range(2):  # two batches: the merge table rewrites its file
        write_demo_files(incoming, events=300, files=1, poison_every=0, seed=n)
        _run(project)
    merge = str(project.table_path("endpoint_counts"))
    first = DeltaTable(merge, version=0).to_pyarrow_dataset().to_table(use_threads=False)

    report = maintain(project)
    by_name = {t.name: t for t in report.tables}
    assert by_name["endpoint_counts"].files_vacuumed == 0, report_lines(report)
    assert "vacuum retention 168 h" in report_lines(report)[-1]
    again = DeltaTable(merge, version=0).to_pyarrow_dataset().to_table(use_threads=False)
    assert again.num_rows == first.num_rows > 0  # a reader on version 0 still reads it

    (project.root / "project.yml").write_text(
        (project.root / "project.yml").read_text() + "  vacuum_retention_hours: 0\n")
    report = maintain(load_project(project.root))
    by_name = {t.name: t for t in report.tables}
    assert by_name["endpoint_counts"].files_vacuumed >= 1, report_lines(report)
    assert f"vacuumed {by_name['endpoint_counts'].files_vacuumed} files" in next(
        line for line in report_lines(report) if line.startswith("endpoint_counts:"))
    # the latest version is whole
    latest = DeltaTable(merge).to_pyarrow_dataset().to_table(use_threads=False)
    assert sum(latest.column("requests").to_pylist()) == 600


def test_many_dead_letters_do_not_go_through_the_driver(tmp_path, monkeypatch) -> None:
    """An all-dead-letter batch sent every raw record through the driver (``toArrow``) on rs:
    the row bound (``arrow_max_rows``, 500k locally) says nothing of a record's size. Dead
    letters whose raw text passes ``DEAD_LETTER_ARROW_MAX_BYTES`` are written Spark-native
    (staged Parquet under ``<table>/batches/``, committed by delta-rs). The bound is lowered
    here to keep the batch small. On rs only: the spark engine never collects a table write."""
    from deltalake import DeltaTable

    from runner.runtime import batch

    monkeypatch.setattr(batch, "DEAD_LETTER_ARROW_MAX_BYTES", 20_000, raising=False)
    project = _project(tmp_path)
    incoming = project.root / "incoming"
    lines = [json.dumps({"eventID": f"e{i}", "pad": "x" * 200}) for i in range(300)]
    (incoming / "dead.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _run(project)
    dead_path = str(project.table_path(DEAD))
    files = DeltaTable(dead_path).file_uris()
    assert files and all("/batches/" in f for f in files), files  # Spark wrote them
    dead = read_table(dead_path).to_pylist()
    assert sorted(d["raw"] for d in dead) == sorted(lines)
    assert {d["reason"] for d in dead} == {"missing NOT NULL field eventId"}

    # a few small dead letters still go through Arrow (no Spark write job for them)
    (incoming / "few.json").write_text('{"eventID": "x"}\n', encoding="utf-8")
    _run(project)
    assert sum("/batches/" not in f for f in DeltaTable(dead_path).file_uris()) == 1
