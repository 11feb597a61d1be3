"""`runner ls`, `runner seed` and `runner build`'s first stage, without a JVM (issue 47, item
5): ls in each output format; seed exactly once per content on delta-rs (the only engine seeds
are written with: see runner/ops/seed.py); build stops at compile with compile's exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from runner.cli import cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ae" / "dbt_shop"


@pytest.fixture
def dbt_shop(tmp_path: Path) -> Path:
    root = tmp_path / "dbt_shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("target", "wh", "cp", "logs"))
    return root


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_ls_text_lists_every_resource(dbt_shop: Path) -> None:
    result = _run("ls", "--project-dir", str(dbt_shop))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:3] == ["model     orders  (models/orders.sql)",
                         "model     country_totals  (models/country_totals.sql)",
                         "seed      countries  (seeds/countries.csv)"]
    assert "test      orders: order_id unique  (models/schema.yml)" in lines
    assert lines[-1] == "unit_test country_totals.totals_join_the_seed  (models/schema.yml)"
    assert len(lines) == 3 + 10 + 2


def test_ls_names_and_json_with_select_and_type(dbt_shop: Path) -> None:
    names = _run("ls", "--project-dir", str(dbt_shop), "--select", "orders",
                 "--resource-type", "model", "--resource-type", "unit_test", "--output", "name")
    assert names.output.splitlines() == ["orders", "orders.orders_copy_fields"]
    out = _run("ls", "--project-dir", str(dbt_shop), "-s", "country_totals", "-s", "countries",
               "--output", "json")
    docs = [json.loads(line) for line in out.output.splitlines()]
    assert [(d["resource_type"], d["name"]) for d in docs][:2] == [
        ("model", "country_totals"), ("seed", "countries")]
    assert docs[0]["depends_on"] == ["orders", "countries"]
    assert docs[0]["config"] == {"materialized": "merge"}
    region = next(d for d in docs if d["name"] == "country_totals: region relationships")
    assert region["config"] == {"severity": "error", "where": "region IS NOT NULL"}


def test_ls_refuses_an_unknown_selector(dbt_shop: Path) -> None:
    result = _run("ls", "--project-dir", str(dbt_shop), "--select", "orderz")
    assert result.exit_code == 2
    assert "no model named 'orderz' (did you mean 'orders'?)" in result.output


def test_seed_writes_once_per_content(dbt_shop: Path) -> None:
    table = dbt_shop / "wh" / "countries"
    first = _run("seed", "--project-dir", str(dbt_shop))
    assert first.exit_code == 0, first.output
    assert first.output.splitlines()[0].startswith("written   countries: 2 rows, version 0")
    again = _run("seed", "--project-dir", str(dbt_shop), "--format", "json")
    assert json.loads(again.output)["seeds"]["countries"]["outcome"] == "unchanged"
    assert DeltaTable(str(table)).version() == 0  # one version for one content
    (dbt_shop / "seeds" / "countries.csv").write_text("country,region\nIE,emea\nFR,emea\n")
    changed = _run("seed", "--project-dir", str(dbt_shop), "--select", "countries")
    assert "written   countries: 2 rows, version 1" in changed.output
    rows = DeltaTable(str(table)).to_pyarrow_dataset().to_table().to_pylist()
    assert sorted(r["country"] for r in rows) == ["FR", "IE"]
    history = DeltaTable(str(table)).history()
    assert [h.get("runner.seed.hash") is not None for h in history] == [True, True]


def test_seed_types_and_a_bad_cell(dbt_shop: Path) -> None:
    (dbt_shop / "seeds" / "rates.csv").write_text("country,rate,since\nIE,0.23,2026-01-01\n"
                                                  "US,,2025-06-30\n")
    assert _run("seed", "--project-dir", str(dbt_shop), "-s", "rates").exit_code == 0
    table = DeltaTable(str(dbt_shop / "wh" / "rates")).to_pyarrow_dataset().to_table()
    assert [str(t) for t in table.schema.types] == ["string", "double", "date32[day]"]
    (dbt_shop / "seeds" / "rates.yml").write_text(
        "seeds:\n  - name: rates\n    columns: [{name: rate, data_type: int}]\n")
    bad = _run("seed", "--project-dir", str(dbt_shop), "-s", "rates")
    assert bad.exit_code == 2
    assert "seeds/rates.csv:2: seed 'rates': column rate (int) cannot hold '0.23'" in bad.output


def test_build_stops_at_compile_with_its_exit_code(dbt_shop: Path) -> None:
    sql = dbt_shop / "models" / "orders.sql"
    sql.write_text(sql.read_text().replace("FROM parsed_events", ", no_such_fn(1) AS x\nFROM parsed_events"))
    result = _run("build", "--project-dir", str(dbt_shop))
    assert result.exit_code == 1, result.output
    assert result.output.startswith("== compile\n")
    assert "== unit tests" not in result.output
    assert not (dbt_shop / "wh").exists() and not (dbt_shop / "cp").exists()
    usage = _run("build", "--project-dir", str(dbt_shop), "--select", "nope")
    assert usage.exit_code == 2 and "no model named 'nope'" in usage.output
