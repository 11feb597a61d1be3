"""A dbt user's schema.yml runs without edits (issue 47, item 4): dbt_utils' generic tests,
``config: {severity:, where:}``, dbt 1.10's ``arguments:``, a ``tests/generic/`` macro, and the
top-level ``unit_tests:`` (given ``ref('model')`` and a seed as csv) through the batch path.
SQL data tests and unit tests share the suite's one SparkSession."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from runner.build import compile_project
from runner.model_tests import collect_suite, run_suite
from runner.project.loader import load_project

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ae" / "dbt_shop"
pytestmark = pytest.mark.spark


def _orders(rows: list[tuple[str, str, int, int]]) -> pa.Table:
    return pa.table({
        "order_id": pa.array([r[0] for r in rows], pa.string()),
        "country": pa.array([r[1] for r in rows], pa.string()),
        "amount": pa.array([r[2] for r in rows], pa.int32()),
        "status": pa.array([r[3] for r in rows], pa.int32()),
    })


@pytest.fixture
def dbt_shop(tmp_path: Path) -> Path:
    root = tmp_path / "dbt_shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("target", "wh", "cp", "logs"))
    # d occurs twice, at status 500 (the where: of order_id's unique leaves both out); 950 is
    # over expression_is_true's bound (severity warn); US's 302 is outside accepted_values,
    # whose where: looks at IE only
    write_deltalake(str(root / "wh" / "orders"), _orders([
        ("a", "IE", 5, 200), ("b", "IE", 0, 404), ("c", "US", 950, 302),
        ("d", "IE", 7, 500), ("d", "US", 8, 500)]))
    write_deltalake(str(root / "wh" / "country_totals"), pa.table({
        "country": ["IE", "US"], "total": pa.array([12, 958], pa.int64()),
        "region": ["emea", "amer"]}))
    return root


def _results(root: Path, spark) -> dict[str, str]:
    project = load_project(root)
    summary = run_suite(collect_suite(project, compile_project(project).plan), spark=spark)
    out = {f"{r.kind} {r.model}{'.' if r.kind == 'unit' else ': '}{r.name}": r.status
           for r in summary.results}
    print("\n".join(f"{r.model} {r.name}: {r.message}" for r in summary.results if r.message))
    out["ok"] = str(summary.ok)
    return out


def test_a_dbt_schema_yml_runs_without_edits(dbt_shop: Path, spark) -> None:
    assert _results(dbt_shop, spark) == {
        "data orders: unique_combination_of_columns(order_id, country)": "pass",
        "data orders: expression_is_true(amount < 900)": "warn",
        "data orders: order_id not_null": "pass",
        "data orders: order_id unique": "pass",
        "data orders: amount accepted_range": "pass",
        "data orders: amount positive": "pass",
        "data orders: status accepted_values": "pass",
        "data country_totals: country not_null": "pass",
        "data country_totals: country unique": "pass",
        "data country_totals: region relationships": "pass",
        "unit orders.orders_copy_fields": "pass",
        "unit country_totals.totals_join_the_seed": "pass",
        "ok": "True",  # a warning does not fail the run
    }


def test_where_and_severity_decide_the_outcome(dbt_shop: Path, spark) -> None:
    yml = dbt_shop / "models" / "schema.yml"
    text = yml.read_text()
    text = text.replace('where: "status < 500"', 'where: "status <= 500"')  # d, d counted
    text = text.replace("allow_zero: true", "allow_zero: false")  # b's 0 fails, as a warning
    yml.write_text(text)
    results = _results(dbt_shop, spark)
    assert results["data orders: order_id unique"] == "fail"
    assert results["data orders: amount positive"] == "warn"
    assert results["ok"] == "False"
