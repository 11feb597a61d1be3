"""Data tests (`runner test --kind data`) on warehouse tables written with delta-rs: no Spark."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import write_deltalake

from runner.build import compile_project
from runner.cli import cli
from runner.model_tests import collect_suite, run_suite
from runner.project.loader import load_project

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ae" / "shop"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _requests(rows: list[tuple[str | None, str | None, int]]) -> pa.Table:
    return pa.table({
        "eventId": pa.array([r[0] for r in rows], pa.string()),
        "timestamp": pa.array([T0] * len(rows), pa.timestamp("us", tz="UTC")),
        "country": pa.array(["IE"] * len(rows), pa.string()),
        "endpoint": pa.array([r[1] for r in rows], pa.string()),
        "status_code": pa.array([r[2] for r in rows], pa.int32()),
        "latency_ms": pa.array([10] * len(rows), pa.int32()),
    })


def _stats(rows: list[tuple[str, int]]) -> pa.Table:
    return pa.table({
        "endpoint": pa.array([r[0] for r in rows], pa.string()),
        "requests": pa.array([r[1] for r in rows], pa.int64()),
        "errors": pa.array([0] * len(rows), pa.int64()),
        "last_seen": pa.array([T0] * len(rows), pa.timestamp("us", tz="UTC")),
    })


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("target", "wh", "cp", "logs"))
    return root


def _run(root: Path, *args: str):
    return CliRunner().invoke(cli, ["test", "--project-dir", str(root), "--kind", "data", *args])


def test_clean_tables_pass_and_warnings_do_not_fail(shop: Path) -> None:
    write_deltalake(str(shop / "wh" / "requests"),
                    _requests([("a", "/cart", 200), ("b", "/search", 404), ("c", "/cart", 500)]))
    write_deltalake(str(shop / "wh" / "endpoint_stats"), _stats([("/cart", 2), ("/search", 1)]))
    result = _run(shop)
    assert result.exit_code == 0, result.output
    assert "WARN  data requests: status_code accepted_values" in result.output
    assert "1 of 3 rows have status_code outside [200, 404, 503]: 500" in result.output
    assert result.output.strip().splitlines()[-1].startswith(
        "8 tests: 7 passed, 0 failed, 1 warned")


def test_failing_rows_are_counted_and_sampled(shop: Path) -> None:
    write_deltalake(str(shop / "wh" / "requests"), _requests(
        [("a", "/cart", 200), ("a", "/cart", 200), (None, "/cart", 200), ("d", None, 200),
         ("e", "/admin", 200)]))
    write_deltalake(str(shop / "wh" / "endpoint_stats"),
                    _stats([("/cart", 2), ("/cart", 1), ("/gone", 1)]))
    project = load_project(shop)
    plan = compile_project(project).plan
    results = {f"{r.model}: {r.name}": r
               for r in run_suite(collect_suite(project, plan, kind="data")).results}
    status = {k: r.status for k, r in results.items()}
    assert status == {
        "requests: eventId not_null": "fail", "requests: eventId unique": "fail",
        "requests: endpoint not_null": "fail", "requests: endpoint accepted_values": "fail",
        "requests: status_code accepted_values": "pass",
        "endpoint_stats: unique": "fail", "endpoint_stats: endpoint not_null": "pass",
        "endpoint_stats: endpoint relationships": "fail"}
    unique = results["requests: eventId unique"]
    assert unique.message == "1 value of (eventId) occurs more than once (2 of 5 rows)"
    assert unique.details == ('{"eventId": "a", "rows": 2}',)
    assert unique.where == "models/requests.yml:5"
    assert results["endpoint_stats: unique"].message == (
        "1 value of (endpoint) occurs more than once (2 of 3 rows)")
    accepted = results["requests: endpoint accepted_values"]
    assert accepted.message.startswith("1 of 5 rows have endpoint outside ['/cart', '/search', "
                                       "'/checkout']: \"/admin\"")
    assert '"eventId": "e"' in accepted.details[0]
    relation = results["endpoint_stats: endpoint relationships"]
    assert relation.message == "1 of 3 rows have endpoint not found in requests.endpoint"
    assert '"/gone"' in relation.details[0]

    result = _run(shop, "--select", "endpoint_stats")
    assert result.exit_code == 1
    assert "FAIL  data endpoint_stats: unique" in result.output
    assert "requests:" not in result.output


def test_missing_tables_and_columns_are_errors(shop: Path) -> None:
    result = _run(shop, "--select", "requests")
    assert result.exit_code == 1
    assert "ERROR data requests: eventId not_null" in result.output
    assert "no table for model requests at" in result.output
    assert "run `runner stream` first" in result.output
    write_deltalake(str(shop / "wh" / "requests"),
                    _requests([("a", "/cart", 200)]).drop_columns(["status_code"]))
    result = _run(shop, "--select", "requests")
    assert "table requests has no column 'status_code'" in result.output


def test_spec_checked_against_the_plan(shop: Path) -> None:
    (shop / "models" / "endpoint_stats.yml").write_text(
        "columns:\n  - name: endpoint\n    data_tests:\n"
        "      - relationships: {to: ref('request'), field: endpoint}\n")
    result = _run(shop)
    assert result.exit_code == 2  # a yml problem: configuration (COMMANDS.md)
    assert ("models/endpoint_stats.yml:4: columns[0].data_tests[0]: relationships to unknown "
            "model 'request' (did you mean 'requests'?)") in result.output
    (shop / "models" / "requests.yml").write_text("data_tests: [unique]\n")
    (shop / "models" / "endpoint_stats.yml").unlink()
    result = _run(shop)
    assert "a model-level unique test needs columns: requests is not a merge model" in result.output
