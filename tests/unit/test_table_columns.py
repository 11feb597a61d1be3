"""Every column a table has can be documented and tested (issue 47, item 3): an SCD 2 table's
``valid_from`` / ``valid_to`` (added by the model kind, not in the model's SELECT) in
schema.yml, data tests on them run against the real table, and the docs site lists the
table's real columns and every config key the model sets. No Spark: the SCD 2 table is
written with delta-rs in the shape the runner gives it (docs/AE_GUIDE.md's history of
customer 1), then read back by ``runner test``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import REPO_ROOT

SCHEMA_YML = """\
version: 2
models:
  - name: customers_history
    description: Every version of a customer.
    columns:
      - name: customer_id
        data_tests: [not_null]
      - name: valid_from
        description: The log position that opened the version.
        data_tests: [not_null]
      - name: valid_to
        description: The log position that closed it (NULL while current).
    data_tests:
      - unique: {columns: [customer_id, valid_from]}
      - unique
"""

#: customer_id, valid_from, valid_to of the history in docs/AE_GUIDE.md
HISTORY = [(1, 1, 3), (1, 3, 4), (1, 4, 6), (1, 6, 9), (1, 9, None), (2, 2, 5), (2, 8, None)]


@pytest.fixture
def cdc(tmp_path: Path) -> Path:
    root = tmp_path / "cdc"
    shutil.copytree(REPO_ROOT / "examples" / "cdc", root,
                    ignore=shutil.ignore_patterns("_warehouse", "_checkpoint", "target"))
    (root / "models" / "schema.yml").write_text(SCHEMA_YML)
    return root


def _write_history(root: Path, rows: list[tuple[int, int, int | None]]) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    table = pa.table({
        "customer_id": pa.array([r[0] for r in rows], pa.int64()),
        "lsn": pa.array([r[1] for r in rows], pa.int64()),
        "op": ["u"] * len(rows), "email": ["a@x.io"] * len(rows), "tier": ["pro"] * len(rows),
        "changed_at": pa.array([None] * len(rows), pa.timestamp("us", "UTC")),
        "valid_from": pa.array([r[1] for r in rows], pa.int64()),
        "valid_to": pa.array([r[2] for r in rows], pa.int64())})
    write_deltalake(str(root / "_warehouse" / "customers_history"), table, mode="overwrite")


def test_scd2_columns_are_documented_and_their_data_tests_run(cdc: Path) -> None:
    compiled = CliRunner().invoke(cli, ["compile", "--project-dir", str(cdc)])
    assert compiled.exit_code == 0, compiled.output

    _write_history(cdc, HISTORY)
    tested = CliRunner().invoke(cli, ["test", "--kind", "data", "--select", "customers_history",
                                      "--project-dir", str(cdc)])
    assert tested.exit_code == 0, tested.output
    assert "unique(customer_id, valid_from)" in tested.output
    assert "not_null" in tested.output and "valid_from" in tested.output

    _write_history(cdc, [*HISTORY, (2, 8, None)])  # one version twice
    tested = CliRunner().invoke(cli, ["test", "--kind", "data", "--select", "customers_history",
                                      "--project-dir", str(cdc)])
    assert tested.exit_code == 1, tested.output
    failed = [line for line in tested.output.splitlines() if "FAIL" in line.upper()]
    # the model-level unique without columns is the table's key: (customer_id, valid_from)
    assert len([line for line in failed if "unique" in line]) == 2, tested.output


def test_docs_site_lists_the_tables_columns_and_every_config_key(cdc: Path) -> None:
    done = CliRunner().invoke(cli, ["docs", "--project-dir", str(cdc)])
    assert done.exit_code == 0, done.output
    page = (cdc / "target" / "docs" / "models" / "customers_history.html").read_text()
    rows = page.split('<table class="columns">')[1].split("</table>")[0]
    names = [part.split('"')[0] for part in rows.split('data-column-row="')[1:]]
    assert names == ["customer_id", "lsn", "op", "email", "tier", "changed_at", "valid_from",
                     "valid_to"]
    assert "The log position that opened the version." in rows
    # lint's inference gives the docs their types: timestamp_millis(ts_ms) is a TIMESTAMP
    changed_at = rows.split('data-column-row="changed_at"')[1].split("</tr>")[0]
    assert "<code>TIMESTAMP</code>" in changed_at, changed_at
    valid_to = rows.split('data-column-row="valid_to"')[1].split("</tr>")[0]
    assert "<code>BIGINT</code>" in valid_to and "added by stored_as_scd_type=2" in valid_to
    config = page.split('<table class="config">')[1].split("</table>")[0]
    assert "track_history_column_list" in config and "email, tier" in config

    (cdc / "models" / "schema.yml").unlink()  # undocumented: still the table's 8 columns
    assert CliRunner().invoke(cli, ["docs", "--project-dir", str(cdc)]).exit_code == 0
    page = (cdc / "target" / "docs" / "models" / "customers_history.html").read_text()
    assert page.count("data-column-row=") == 8


@pytest.mark.parametrize(("sql", "expected"), [
    ("timestamp_millis(1)", "TIMESTAMP"), ("timestamp_seconds(1)", "TIMESTAMP"),
    ("timestamp_micros(1)", "TIMESTAMP"), ("try_to_timestamp('x')", "TIMESTAMP"),
    ("make_timestamp(2026, 1, 1, 0, 0, 0)", "TIMESTAMP"), ("make_date(2026, 1, 1)", "DATE"),
    ("to_utc_timestamp(now(), 'UTC')", "TIMESTAMP")])
def test_lint_types_spark_time_functions(sql: str, expected: str) -> None:
    import sqlglot

    from runner.lint.spark_types.infer import make_annotator, type_string

    node = sqlglot.parse_one(f"SELECT {sql}", read="spark").expressions[0]
    make_annotator().annotate_expression(node)
    assert type_string(node.type) == expected
