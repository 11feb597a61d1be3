"""The CDC example project (examples/cdc: Debezium-shaped change events): its unit test passes
through each engine's writers, and streaming its change files gives the tables worked out by
hand in docs/AE_GUIDE.md "CDC from Debezium-shaped events"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.model_tests import collect_suite, result_lines, run_suite
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.projects import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "cdc"

#: (customer_id, lsn, email, tier) after the three change files.
LIVE = {(1, 9, "ann@y.io", "team"), (2, 8, "bob@z.io", "team")}
#: (customer_id, valid_from, valid_to, email, tier): customer 1's late change at lsn 4 split
#: [3, 6) in two; customer 2 deleted at 7 and created again at 8.
HISTORY = {(1, 1, 3, "ann@x.io", "free"), (1, 3, 4, "ann@x.io", "pro"),
           (1, 4, 6, "ann@y.io", "pro"), (1, 6, 9, "ann@x.io", "pro"),
           (1, 9, None, "ann@y.io", "team"),
           (2, 2, 5, "bob@x.io", "free"), (2, 5, 7, "bob@y.io", "free"),
           (2, 8, None, "bob@z.io", "team")}


def _copy(tmp_path: Path, engine: str):
    root = tmp_path / "cdc"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("target", "_*"))
    yml = root / "project.yml"
    yml.write_text(yml.read_text().replace("engine: auto", f"engine: {engine}")
                   .replace("local[*]", "local[2]"))
    return load_project(root)


def _rows(path: Path, columns: tuple[str, ...]) -> set[tuple]:
    from deltalake import DeltaTable

    table = DeltaTable(str(path)).to_pyarrow_dataset().to_table(use_threads=False)
    return {tuple(r[c] for c in columns) for r in table.to_pylist()}


# The spark run is in the slow set: the CDC sink's exactly-once runs on both engines in
# tests/spark/test_cdc_sink.py; this one checks the example's tables (suite time budget).
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_example_streams_to_the_hand_worked_tables(tmp_path: Path, delta_engine) -> None:
    project = _copy(tmp_path, delta_engine)
    run_stream(project, compile_project(project).plan, mode="available_now",
               trigger="1 second")
    wh = project.warehouse
    assert _rows(wh / "customers", ("customer_id", "lsn", "email", "tier")) == LIVE
    assert _rows(wh / "customers_history", ("customer_id", "valid_from", "valid_to", "email",
                                            "tier")) == HISTORY


def test_example_unit_test_passes(tmp_path: Path, spark, delta_engine) -> None:
    project = _copy(tmp_path, delta_engine)
    summary = run_suite(collect_suite(project, compile_project(project).plan, kind="unit"),
                        spark=spark)
    report = "\n".join(line for r in summary.results for line in result_lines(r))
    assert summary.ok and summary.count("pass") == 1, report
