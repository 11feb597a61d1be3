"""Exactly once where the runner decides which tables are its own and what state each model is
in at start-up: a model renamed after a crash (its table moved with it), a model re-enabled
after an interrupted ``--full-refresh``, a disable or a rebuild cut short by a crash, and the
checkpoint's model registry lost (deleted, or truncated: the runner's hint says to delete it).

Each operation either keeps every table exact or is refused (ConfigError, exit 2) with nothing
changed. Both engines: what is checked is what lands in Delta tables.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.registry import REGISTRY_FILE, load_registry
from runner.demo import write_demo_files
from runner.errors import ConfigError, ExecutionError, RunnerError
from runner.failpoints import FailpointError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import current_version, read_table
from tests.support.genops import BAD_LATENCY, FIXED, FRAGILE
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project
from tests.support.reference import DEAD, assert_exact, expected_tables, valid_event

pytestmark = pytest.mark.spark

YML = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
DISABLED = "{{ config(enabled=false) }}\n"
NO_BACKFILL = "{{ config(backfill=false) }}\n"
TABLES = ("request_logs", "error_events", "performance_metrics", DEAD)


def _project(tmp_path: Path, engine: str, extra: dict[str, str] | None = None) -> Path:
    root = write_project(tmp_path / "proj", {**EXAMPLE_FILES, **(extra or {})}, project_yml=YML,
                         engine=engine)
    (root / "incoming").mkdir(exist_ok=True)
    return root


def _feed(root: Path, seed: int, *, bad: bool = False) -> None:
    """One new input file (one batch: the files source takes every new file at once);
    ``bad``: plus an event ``FRAGILE`` divides by zero on."""
    before = set((root / "incoming").glob("*.json"))
    write_demo_files(root / "incoming", events=120, files=1, seed=seed, poison_every=40)
    if bad:
        (path,) = set((root / "incoming").glob("*.json")) - before
        with path.open("a") as f:
            f.write(json.dumps({"eventId": f"bad-{seed}", "timestamp": "2024-01-01T00:00:00Z",
                                "request": {"endpoint": "/x", "method": "GET",
                                            "latency_ms": BAD_LATENCY, "status_code": 200}})
                    + "\n")


def _run(root: Path, **kw):
    project = load_project(root)
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _state(root: Path) -> dict[str, object]:
    """What a refusal must leave as it was: every table's version and the registry."""
    wh, cp = root / "wh", root / "cp"
    return {"versions": {p.name: current_version(p) for p in sorted(wh.iterdir())},
            "registry": (cp / REGISTRY_FILE).read_text() if (cp / REGISTRY_FILE).exists()
            else None}


def _error_rows(table: Path) -> Counter:
    """error_events' rows, read wherever its table now lives (a renamed model's)."""
    return Counter((r["eventId"], r["errorCode"], r["severity"])
                   for r in read_table(str(table)).to_pylist())


def _move(root: Path, old: str, new: str, *, prefix: str = "") -> None:
    """The documented rename: the SQL file and the table folder move to the new name."""
    models = root / "models"
    text = (models / f"{old}.sql").read_text()
    (models / f"{old}.sql").unlink()
    (models / f"{new}.sql").write_text(prefix + text.removeprefix(NO_BACKFILL))
    shutil.move(str(root / "wh" / old), str(root / "wh" / new))


# -- a model renamed -------------------------------------------------------------------------------


def test_a_model_renamed_after_a_crash_is_refused_then_renamed(
        tmp_path: Path, delta_engine: str, armed) -> None:
    root = _project(tmp_path, delta_engine)
    _feed(root, 1)
    _run(root)
    _feed(root, 2)
    armed("sink.after_commit:error_events@1")  # error_events holds batch 1, the checkpoint not
    with pytest.raises(RunnerError):
        _run(root)
    armed("")
    _move(root, "error_events", "errors", prefix=NO_BACKFILL)
    before = _state(root)
    with pytest.raises(ConfigError, match="(?s)table .*errors of model errors holds batches up "
                                          "to 1 of model error_events.*put back"):
        _run(root)  # before: batch 1 replayed into the moved table (its ids twice)
    assert _state(root) == before  # nothing changed
    _move(root, "errors", "error_events")  # the way out the message names: put back, finish,
    _run(root)
    _move(root, "error_events", "errors", prefix=NO_BACKFILL)  # then rename again
    _feed(root, 3)
    _run(root)
    assert_exact(root / "incoming", root / "wh", ("request_logs", "performance_metrics", DEAD))
    want = expected_tables(root / "incoming", ["error_events"])["error_events"]
    assert _error_rows(root / "wh" / "errors") == want
    assert not (root / "wh" / "error_events").exists()


def test_a_moved_table_is_not_backfilled_on_top_of_its_history(
        tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine)
    _feed(root, 1)
    _run(root)
    _feed(root, 2)
    _run(root)
    _move(root, "error_events", "errors")  # backfill=true (the default): from batch 0
    before = _state(root)
    with pytest.raises(ConfigError, match="(?s)errors holds batches up to 1 of model "
                                          "error_events.*backfill=false"):
        _run(root)  # before: batches 0..1 backfilled on top of them (every row twice)
    assert _state(root) == before
    (root / "models" / "errors.sql").write_text(
        NO_BACKFILL + (root / "models" / "errors.sql").read_text())
    _feed(root, 3)
    _run(root)  # the rename as documented: the table goes on from the next batch
    want = expected_tables(root / "incoming", ["error_events"])["error_events"]
    assert _error_rows(root / "wh" / "errors") == want
    # Moved back under its first name (no crash): a new model again, kept exact the same way.
    _move(root, "errors", "error_events", prefix=NO_BACKFILL)
    _feed(root, 4)
    _run(root)
    assert_exact(root / "incoming", root / "wh", TABLES)


# -- re-enabled after an interrupted full refresh --------------------------------------------------


#: The finding's point in the default run; the other interruptions of the class with `-m slow`
#: (suite budget: each run starts streams on both engines).
@pytest.mark.parametrize("point", ["batch.start@0",
                                   pytest.param("sink.after_commit:request_logs@0", marks=pytest.mark.slow),
                                   pytest.param("batch.after_ledger@0", marks=pytest.mark.slow)])
def test_re_enabling_after_an_interrupted_full_refresh_is_refused_then_rebuilt(
        tmp_path: Path, delta_engine: str, armed, point: str) -> None:
    root = _project(tmp_path, delta_engine)
    model = root / "models" / "error_events.sql"
    sql = model.read_text()
    _feed(root, 1)
    _run(root)
    model.write_text(DISABLED + sql)  # disabled: its table is kept through the refresh
    _feed(root, 2)
    armed(point)  # the refresh dies inside its first batch: no batch of it committed
    with pytest.raises(RunnerError):
        _run(root, full_refresh=True)
    armed("")
    model.write_text(sql)  # back: before, its old table was written again from batch 0
    before = _state(root)
    with pytest.raises(ConfigError, match="(?s)error_events already holds batches of another "
                                          "checkpoint.*--full-refresh --select"):
        _run(root)
    assert _state(root) == before
    _run(root, rebuild=["error_events"])  # the way out the message names
    assert_exact(root / "incoming", root / "wh", TABLES)


@pytest.mark.slow  # another interrupted operation of the class; the suite keeps the finding's
def test_a_rebuild_cut_short_then_disabled_and_re_enabled_is_exact(
        tmp_path: Path, delta_engine: str, armed) -> None:
    root = _project(tmp_path, delta_engine)
    model = root / "models" / "error_events.sql"
    sql = model.read_text()
    _feed(root, 1)
    _run(root)
    _feed(root, 2)
    _run(root)
    armed("backfill.after_commit:error_events@0")  # the rebuild wrote batch 0 of two
    with pytest.raises(FailpointError):  # (raised between the backfill's batches)
        _run(root, rebuild=["error_events"])
    armed("")
    model.write_text(DISABLED + sql)
    _feed(root, 3)
    _run(root)
    model.write_text(sql)  # back: its rebuild goes on where it stopped, then batch 2
    _run(root)
    assert_exact(root / "incoming", root / "wh", TABLES)


@pytest.mark.slow  # members of the class that passed before the change too: regression guards
@pytest.mark.parametrize("point", ["sink.after_commit:error_events@1",
                                   "sink.before_commit:error_events@1"])
def test_a_model_disabled_after_a_crash_catches_up_exactly(
        tmp_path: Path, delta_engine: str, armed, point: str) -> None:
    root = _project(tmp_path, delta_engine)
    model = root / "models" / "error_events.sql"
    sql = model.read_text()
    _feed(root, 1)
    _run(root)
    _feed(root, 2)
    armed(point)
    with pytest.raises(RunnerError):
        _run(root)
    armed("")
    model.write_text(DISABLED + sql)  # disabled while batch 1 is still to be replayed
    _run(root)
    _feed(root, 3)
    _run(root)
    model.write_text(sql)
    _run(root)
    assert_exact(root / "incoming", root / "wh", TABLES)


# -- the registry lost -----------------------------------------------------------------------------


def _fragile_exact(root: Path) -> None:
    want = Counter(e["eventId"] for f in sorted((root / "incoming").glob("*.json"))
                   for line in f.read_text().splitlines() if (e := valid_event(line)))
    got = Counter(read_table(str(root / "wh" / "fragile")).column("eventId").to_pylist())
    assert got == want, f"fragile: {sum((want - got).values())} lost, " \
                        f"{sum((got - want).values())} extra"


@pytest.mark.parametrize("damage", ["deleted", pytest.param("truncated", marks=pytest.mark.slow)])
def test_registry_lost_while_a_model_was_parked(
        tmp_path: Path, delta_engine: str, damage: str) -> None:
    root = _project(tmp_path, delta_engine, {"models/fragile.sql": FIXED})
    _feed(root, 1)
    _run(root)
    (root / "models" / "fragile.sql").write_text(FRAGILE)
    _feed(root, 2, bad=True)
    assert "fragile" in _run(root).parked  # parked at batch 1
    _feed(root, 3)
    _run(root)  # batch 2: fragile stays parked
    registry = root / "cp" / REGISTRY_FILE
    if damage == "truncated":
        registry.write_bytes(registry.read_bytes()[:40])
        before = _state(root)
        with pytest.raises(ExecutionError, match=f"(?s){REGISTRY_FILE}.*deleting the file"):
            _run(root)
        assert _state(root) == before
    registry.unlink()  # the runner's hint: the next start-up rebuilds it from the tables
    (root / "models" / "fragile.sql").write_text(FIXED)
    _run(root)  # before: taken as live, fragile never caught up on batches 1..2
    assert_exact(root / "incoming", root / "wh", TABLES)
    _fragile_exact(root)
    entries = load_registry(root / "cp")
    assert entries is not None and entries["fragile"].state == "live"


def test_registry_lost_while_a_model_was_disabled(tmp_path: Path, delta_engine: str) -> None:
    root = _project(tmp_path, delta_engine)
    model = root / "models" / "error_events.sql"
    sql = model.read_text()
    _feed(root, 1)
    _run(root)
    model.write_text(DISABLED + sql)
    _feed(root, 2)
    _run(root)  # batch 1 without error_events
    (root / "cp" / REGISTRY_FILE).unlink()
    _feed(root, 3)
    _run(root)  # still disabled, the registry rebuilt: error_events stops at batch 0
    (root / "cp" / REGISTRY_FILE).unlink()  # lost again, and back in the same start-up
    model.write_text(sql)
    _run(root)  # before: taken as live, it never caught up on batches 1..2
    assert_exact(root / "incoming", root / "wh", TABLES)


def test_the_registry_is_written_durably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from runner.checkpoint.registry import Entry, save_registry

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    save_registry(tmp_path / "cp", {"m": Entry("live")})
    assert len(synced) >= 2  # the file before its rename, the folder after
    assert load_registry(tmp_path / "cp") == {"m": Entry("live")}
    assert not [p for p in (tmp_path / "cp").iterdir() if p.name != REGISTRY_FILE]
