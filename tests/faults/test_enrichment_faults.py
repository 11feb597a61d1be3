"""SIGKILL between two tables' commits of a batch whose source and seed then change:
``runner stream`` in its own process dies (a failpoint's ``exit``) after one table
committed batch 1 and before the other did; the dimension (a Delta table written with delta-rs)
and the seed's CSV change before the restart. The replay must write the other table with the
versions batch 1 pinned, so every table's rows of one batch joined one source version and one
seed content, read back with delta-rs and compared with a plain-Python expectation. Runs on
both Delta engines (they read a source differently: time travel, or delta-rs into Arrow).

Also ``runner test`` with rows given for the source and the seed (the rs engine only: unit
tests always write with it, whatever project.yml says).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from runner.build import compile_project
from runner.model_tests import load_specs
from runner.model_tests.unit import run_unit_tests
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.projects import BASE_YML, REPO_ROOT, write_project

pytestmark = pytest.mark.spark

ENDPOINTS = ("/a", "/b", "/c")
YML = (BASE_YML.replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n")
       + "parallelism: 1\n")
#: A source pinned per batch (a Delta table at ``../dim``) and a seed (``tiers``), joined by
#: one model: what a replay must join at the versions its batch first read.
PINNED = {
    "models/sources.yml": """
        sources:
          - name: ref
            tables:
              - name: owners
                path: ../dim
                columns:
                  - {name: endpoint, data_type: string}
                  - {name: owner, data_type: string}
    """,
    "models/enriched.sql": """
        SELECT e.eventId, e._batch_id AS batch, d.owner, t.tier
        FROM parsed_events e
        LEFT JOIN {{ source('ref', 'owners') }} d ON e.request.endpoint = d.endpoint
        LEFT JOIN {{ ref('tiers') }} t ON e.request.endpoint = t.endpoint
    """,
}
FILES = {
    # `enriched` commits first (parallelism 1, plan order); the failpoint kills the process
    # right after its commit of batch 1, before `owners` writes it
    **PINNED,
    "models/owners.sql": """
        SELECT e._batch_id AS batch, d.owner, t.tier, count(*) AS n
        FROM parsed_events e
        JOIN {{ source('ref', 'owners') }} d ON e.request.endpoint = d.endpoint
        JOIN {{ ref('tiers') }} t ON e.request.endpoint = t.endpoint
        GROUP BY e._batch_id, d.owner, t.tier
    """,
    "models/enriched.yml": """
        unit_tests:
          - name: joins_given_rows
            given:
              events:
                - {eventId: x1, timestamp: "2026-01-01T00:00:00Z", request: {endpoint: /z}}
              sources:
                ref.owners: [{endpoint: /z, owner: zed}]
              seeds:
                tiers: [{endpoint: /z, tier: gold}]
            expect:
              rows: [{eventId: x1, owner: zed, tier: gold}]
    """,
}


def change(root: Path, dim: Path | str, label: str, *,
           endpoints: tuple[str, ...] = ENDPOINTS) -> None:
    """The dimension's owners and the seed's tiers both say ``label`` from now on."""
    write_deltalake(str(dim), pa.table({"endpoint": list(endpoints),
                                        "owner": [f"{e}@{label}" for e in endpoints]}),
                    mode="overwrite")
    (root / "seeds").mkdir(parents=True, exist_ok=True)
    (root / "seeds" / "tiers.csv").write_text(
        "endpoint,tier\n" + "".join(f"{e},{e}@{label}\n" for e in endpoints))


def feed(root: Path, n: int) -> None:
    lines = [json.dumps({"eventId": f"f{n}-{i}", "timestamp": "2026-01-01T00:00:00Z",
                         "request": {"endpoint": ENDPOINTS[i % 3]}}) for i in range(6)]
    (root / "incoming" / f"part-{n:03d}.json").write_text("\n".join(lines) + "\n")


def labels(table: Path) -> dict[int, set[tuple[str, str]]]:
    """Independent reader: batch -> the (source, seed) labels its rows joined."""
    out: dict[int, set[tuple[str, str]]] = {}
    for row in DeltaTable(str(table)).to_pyarrow_dataset().to_table().to_pylist():
        out.setdefault(int(row["batch"]), set()).add(
            (row["owner"].split("@")[1], row["tier"].split("@")[1]))
    return out


def killed_run(root: Path, failpoint: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--available-now"],
        env={**os.environ, "RUNNER_FAILPOINTS": f"{failpoint}=exit"}, cwd=REPO_ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM and the Python workers
        except ProcessLookupError:
            pass
    assert proc.returncode == 137, out[-3000:]


#: The spark engine's run is ``slow`` (50 s in CI), for the default suite's budget: what is
#: killed and replayed is the runtime's pinning, the same on both engines; the spark engine's
#: pinned reads run in the default suite (tests/spark/test_enrichment.py).
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_sigkill_then_source_and_seed_change_replay_joins_the_pinned_versions(
        tmp_path, delta_engine) -> None:
    root = write_project(tmp_path / "proj", FILES, project_yml=YML, engine=delta_engine)
    (root / "incoming").mkdir()
    pinned_replay(root, tmp_path / "dim")


def pinned_replay(root: Path, dim: Path | str, *,
                  after_feed: Callable[[], object] = lambda: None) -> None:
    """The scenario: batch 0 with dimension v0; batch 1 with v1, killed after one table
    committed it; the dimension and the seed changed to v2 with batch 2; the replay and batch
    2: every table's rows of a batch joined that batch's versions. ``after_feed`` runs after
    each new input file (the S3 variant uploads it)."""

    def run() -> None:
        project = load_project(root)
        run_stream(project, compile_project(project).plan, mode="available_now",
                   trigger="1 second")

    change(root, dim, "v0")
    feed(root, 0)
    after_feed()
    run()
    change(root, dim, "v1")
    feed(root, 1)
    after_feed()
    killed_run(root, "sink.after_commit:enriched@1")
    project = load_project(root)
    assert 1 in labels(project.table_path("enriched"))  # one table committed batch 1 ...
    assert 1 not in labels(project.table_path("owners"))  # ... the other did not
    change(root, dim, "v2")
    feed(root, 2)
    after_feed()
    run()

    expected = {b: {(f"v{b}", f"v{b}")} for b in (0, 1, 2)}
    assert labels(project.table_path("enriched")) == expected
    assert labels(project.table_path("owners")) == expected


def test_unit_test_given_rows_for_a_source_and_a_seed(tmp_path, spark) -> None:
    change(tmp_path / "proj", tmp_path / "dim", "v0")
    root = write_project(tmp_path / "proj", FILES, project_yml=YML)
    project = load_project(root)
    spec = load_specs(project)["enriched"]
    [result] = run_unit_tests(project, compile_project(project).plan,
                              [(spec, spec.unit_tests[0])], spark=spark)
    assert (result.status, result.message) == ("pass", "")
