"""Nothing dropped without a record, end to end through ``runner stream``,
tables read back with delta-rs and compared with the plain-Python reference
(tests/support/reference.py: ``json.loads`` refuses trailing content, so it calls such a line
a dead letter)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.console import plural
from runner.demo import write_demo_files
from runner.project.loader import load_project
from runner.runtime.batches.reasons import TRAILING_REASON
from runner.runtime.start.stream import run_stream
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
    assert f"vacuumed {plural(by_name['endpoint_counts'].files_vacuumed, 'file')} " in next(
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

    from runner.runtime.batches import batch

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


def test_an_unreadable_file_is_a_dead_letter_not_a_crash_loop(tmp_path, delta_engine) -> None:
    """A gzip file cut short, and a file deleted after the source listed it: before, the batch
    failed, and so did every replay of it (the pipeline looped on one file). Now the lines
    read before the damage land, the rest is skipped, and each such file is one dead letter
    (``raw`` null, the reason, the file); the next batch runs as usual. Both engines: the
    dead-letter row is a Delta write."""
    import gzip
    import shutil
    import threading

    from runner import failpoints

    project = _project(tmp_path, engine=delta_engine)
    incoming = project.root / "incoming"
    staging = tmp_path / "staging"
    for n, name in enumerate(("a.json", "b.json", "c.json", "d.json")):
        write_demo_files(staging / name, events=200, files=1, poison_every=0, seed=10 + n)
    src = {name: next((staging / name).glob("*.json")) for name in ("a.json", "b.json",
                                                                    "c.json", "d.json")}
    for name, path in src.items():  # event ids of their own per file
        path.write_text(path.read_text().replace('"evt_', f'"{name[0]}_evt_'))
    shutil.copy(src["a.json"], incoming / "a.json")
    packed = gzip.compress(src["b.json"].read_bytes())
    (incoming / "b.json.gz").write_bytes(packed[: len(packed) // 2])  # cut short in transfer
    shutil.copy(src["c.json"], incoming / "c.json")

    def delete_after_listing() -> None:  # as a retention job racing the stream would
        offsets = project.checkpoint / "offsets" / "0"
        for _ in range(600):
            if offsets.exists():
                (incoming / "c.json").unlink()
                return
            threading.Event().wait(0.05)

    deleter = threading.Thread(target=delete_after_listing)
    deleter.start()
    os.environ["RUNNER_FAILPOINTS"] = "batch.start@0=sleep:3"  # listed, not yet read
    failpoints._armed.cache_clear()
    try:
        _run(project)  # before: failed here, and on every restart
    finally:
        os.environ.pop("RUNNER_FAILPOINTS", None)
        failpoints._armed.cache_clear()
        deleter.join()

    dead = read_table(str(project.table_path(DEAD))).to_pylist()
    files = {d["_source_file"].rsplit("/", 1)[1]: d for d in dead if d["raw"] is None}
    assert set(files) == {"b.json.gz", "c.json"}
    assert files["b.json.gz"]["reason"].startswith("unreadable file: the gz stream is damaged")
    assert files["c.json"]["reason"].startswith("unreadable file: it was removed after")
    b_events = [json.loads(line)["eventId"] for line in src["b.json"].read_text().splitlines()
                if line.strip()]
    logged = [r["eventId"] for r in read_table(str(project.table_path("request_logs"))).to_pylist()]
    from_b = [e for e in logged if e in set(b_events)]
    assert 0 < len(from_b) < len(b_events) and len(set(from_b)) == len(from_b)
    assert set(from_b) == set(b_events[: len(from_b)])  # the lines before the damage
    a_only = tmp_path / "a_only"
    a_only.mkdir()
    shutil.copy(src["a.json"], a_only / "a.json")
    expected = expected_tables(a_only, ("error_events",))["error_events"]
    got = actual_tables(project.warehouse)["error_events"]
    assert expected - got == Counter()  # a.json whole

    shutil.copy(src["d.json"], incoming / "d.json")  # the next batch: as usual
    _run(project)
    logged = {r["eventId"] for r in read_table(str(project.table_path("request_logs"))).to_pylist()}
    assert {json.loads(line)["eventId"] for line in src["d.json"].read_text().splitlines()
            if line.strip()} <= logged
