"""Deterministic enrichment (docs/OPERATIONS.md), on both Delta engines:
the dimension (a Delta table written by delta-rs, independent of the runner) changes between
runs and between a failed batch and its replay; a model added later is backfilled; then a
rebuild over a vacuumed version is refused. Every table's rows of one batch must have joined
one version: the one pinned when the batch first ran (checked by reading the tables back with
delta-rs against a plain-Python expectation).

The plans are built by hand (compile, then the join and its ``Lookup`` put in with
``dataclasses.replace``), independent of the compile half's ``source()``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from runner.build import compile_project
from runner.checkpoint.pins import Pins
from runner.compile.plan import Column, Lookup, Plan
from runner.errors import ConfigError, ExecutionError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.projects import BASE_YML, write_project

pytestmark = pytest.mark.spark

ENDPOINTS = ("/a", "/b", "/c")
VIEW = "dim__owners"
PLAIN = {  # compiled as they are; their SQL is then replaced by the join
    "models/enriched.sql": "SELECT eventId FROM parsed_events",
    "models/owners.sql": "SELECT eventId FROM parsed_events",
}
JOINS = {
    "enriched": f"SELECT e.eventId, e._batch_id AS batch, d.owner FROM parsed_events e "
                f"LEFT JOIN {VIEW} d ON e.request.endpoint = d.endpoint",
    "owners": f"SELECT e._batch_id AS batch, d.owner, count(*) AS n FROM parsed_events e "
              f"JOIN {VIEW} d ON e.request.endpoint = d.endpoint GROUP BY e._batch_id, d.owner",
}


def write_dimension(path: Path, label: str) -> int:
    """Overwrite the dimension: every endpoint's owner says ``label``; returns its version."""
    write_deltalake(str(path), pa.table({"endpoint": list(ENDPOINTS),
                                         "owner": [f"{e}@{label}" for e in ENDPOINTS]}),
                    mode="overwrite")
    return int(DeltaTable(str(path)).version())


def feed(root: Path, n: int, events: int = 6) -> None:
    """One more input file (one batch: max_files_per_trigger 1)."""
    lines = [json.dumps({"eventId": f"f{n}-{i}", "timestamp": "2026-01-01T00:00:00Z",
                         "request": {"endpoint": ENDPOINTS[i % 3], "status_code": 200}})
             for i in range(events)]
    (root / "incoming" / f"part-{n:03d}.json").write_text("\n".join(lines) + "\n")


def plan_for(project, dim: Path, models: tuple[str, ...]) -> Plan:
    plan = compile_project(project).plan
    lookup = Lookup(kind="source", name="ref.owners", view=VIEW, location=str(dim),
                    catalog=False, columns=(Column("endpoint", "STRING"),
                                            Column("owner", "STRING")))
    steps = tuple(dataclasses.replace(s, sql=JOINS[s.name], lookups=(VIEW,))
                  for s in plan.steps if s.name in models)
    return dataclasses.replace(plan, steps=steps, lookups=(lookup,))


def owners_by_batch(table: Path) -> dict[int, set[str]]:
    """Independent reader: batch -> the owner labels its rows joined."""
    out: dict[int, set[str]] = {}
    for row in DeltaTable(str(table)).to_pyarrow_dataset().to_table().to_pylist():
        out.setdefault(int(row["batch"]), set()).add(row["owner"].split("@")[1])
    return out


def test_every_table_joins_the_version_its_batch_pinned(tmp_path, delta_engine, armed,
                                                        monkeypatch) -> None:
    # Pins fold into runs at every batch here (FOLD_EVERY files in production): the backfill,
    # the replay and the rebuild's check read folded pins.
    monkeypatch.setattr("runner.checkpoint.pins.FOLD_EVERY", 1)
    yml = BASE_YML.replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n")
    root = write_project(tmp_path / "proj", PLAIN, project_yml=yml, engine=delta_engine)
    (root / "incoming").mkdir()
    dim = tmp_path / "dim"
    project = load_project(root)

    def run(models: tuple[str, ...], **kw):
        return run_stream(project, plan_for(project, dim, models), mode="available_now",
                          trigger="1 second", **kw)

    # run 1: only `enriched`; batch 0 joins v0
    v0 = write_dimension(dim, "v0")
    feed(root, 0)
    run(("enriched",))
    # run 2: the dimension moved; `owners` is new (backfilled over batch 0 at v0); batch 1
    # pins v1, `enriched` commits it, `owners` fails before its commit
    v1 = write_dimension(dim, "v1")
    feed(root, 1)
    armed("sink.before_commit:owners@1=raise")
    with pytest.raises(ExecutionError):
        run(("enriched", "owners"))
    armed("")
    # run 3: the dimension moved again; batch 1's replay joins v1 still, batch 2 pins v2
    v2 = write_dimension(dim, "v2")
    feed(root, 2)
    run(("enriched", "owners"))

    expected = {0: {"v0"}, 1: {"v1"}, 2: {"v2"}}
    assert owners_by_batch(project.table_path("enriched")) == expected
    assert owners_by_batch(project.table_path("owners")) == expected
    pins = Pins(project.checkpoint)
    assert [pins.get(b)["ref.owners"].version for b in (0, 1, 2)] == [v0, v1, v2]
    assert pins.batch_ids() == [2] and (project.checkpoint / "pins" / "runs.json").is_file()

    # a rebuild over a vacuumed version: refused, naming source, version and batch; nothing
    # dropped
    DeltaTable(str(dim)).vacuum(retention_hours=0, enforce_retention_duration=False,
                                dry_run=False)
    before = DeltaTable(str(project.table_path("owners"))).version()
    with pytest.raises(ConfigError) as refused:
        run(("enriched", "owners"), rebuild=("owners",))
    message = str(refused.value)
    assert "ref.owners" in message and f"version {v0}" in message and "batch 0" in message
    assert DeltaTable(str(project.table_path("owners"))).version() == before
