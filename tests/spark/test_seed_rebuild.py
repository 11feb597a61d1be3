"""A seed edited, then a model rebuilt (``--full-refresh --select m``): the rebuild joins the
content each batch recorded (exact replays: docs/OPERATIONS.md), and says so, with
the deliberate way to apply the new content to the past; new batches join the new content.

One engine (rs): what is checked is which seed version a batch joins and what the start-up
says, decided before any table is written; both engines' writes of pinned lookups are
tests/spark/test_enrichment.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.events import SeedChanged
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.events import Recorder
from tests.support.projects import BASE_YML, write_project

pytestmark = pytest.mark.spark

MODEL = """
SELECT e.eventId, e._batch_id AS batch, o.team
FROM parsed_events e LEFT JOIN {{ ref('owners') }} o ON e.request.endpoint = o.endpoint
"""


def _feed(root: Path, n: int) -> None:
    lines = [json.dumps({"eventId": f"e{n}-{i}", "timestamp": "2026-01-01T00:00:00Z",
                         "request": {"endpoint": "/a"}}) for i in range(3)]
    (root / "incoming" / f"part-{n:03d}.json").write_text("\n".join(lines) + "\n")


def _run(root: Path, **kw) -> Recorder:
    events = Recorder()
    project = load_project(root)
    run_stream(project, compile_project(project).plan, mode="available_now",
               trigger="1 second", report=events, **kw)
    return events


def _teams(root: Path) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for row in read_table(str(root / "wh" / "enriched")).to_pylist():
        out.setdefault(row["batch"], set()).add(row["team"])
    return out


def test_a_rebuild_after_a_seed_edit_says_it_joins_the_recorded_content(tmp_path: Path) -> None:
    yml = BASE_YML.replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n")
    assert yml != BASE_YML  # one file, one batch
    root = write_project(tmp_path / "proj", {"models/enriched.sql": MODEL,
                                             "seeds/owners.csv": "endpoint,team\n/a,search\n"},
                         project_yml=yml)
    (root / "incoming").mkdir()
    for n in range(2):
        _feed(root, n)
    assert not _run(root).of(SeedChanged)
    assert _teams(root) == {0: {"search"}, 1: {"search"}}

    (root / "seeds" / "owners.csv").write_text("endpoint,team\n/a,discovery\n")
    events = _run(root, rebuild=("enriched",))
    said = events.of(SeedChanged)
    assert len(said) == 1, events
    assert (said[0].seed, said[0].first_batch, said[0].last_batch) == ("owners", 0, 1)
    assert _teams(root) == {0: {"search"}, 1: {"search"}}  # the recorded content, exactly

    _feed(root, 2)
    assert not _run(root).of(SeedChanged)  # no rebuild: nothing said
    assert _teams(root) == {0: {"search"}, 1: {"search"}, 2: {"discovery"}}
