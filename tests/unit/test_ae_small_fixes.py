"""Issue 47's small findings of a new analytics engineer (item 6), each on a real project
through the CLI: the docs site's hint names the file the project keeps tests in, ... No Spark.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import REPO_ROOT, write_project


@pytest.fixture
def cdc(tmp_path: Path) -> Path:
    root = tmp_path / "cdc"
    shutil.copytree(REPO_ROOT / "examples" / "cdc", root,
                    ignore=shutil.ignore_patterns("_warehouse", "_checkpoint", "target"))
    return root


def test_docs_hint_names_the_file_the_project_keeps_tests_in(cdc: Path) -> None:
    (cdc / "models" / "customers.yml").unlink()
    (cdc / "models" / "schema.yml").write_text(
        "version: 2\nmodels:\n  - name: customers_history\n    description: history\n")
    done = CliRunner().invoke(cli, ["docs", "--project-dir", str(cdc)])
    assert done.exit_code == 0, done.output
    for model in ("customers", "customers_history"):
        page = (cdc / "target" / "docs" / "models" / f"{model}.html").read_text()
        assert "declare some in <code>models/schema.yml</code>" in page, model

    (cdc / "models" / "schema.yml").unlink()  # no yml at all: the model's own file
    assert CliRunner().invoke(cli, ["docs", "--project-dir", str(cdc)]).exit_code == 0
    page = (cdc / "target" / "docs" / "models" / "customers.html").read_text()
    assert "declare some in <code>models/customers.yml</code>" in page


def test_a_typos_follow_on_error_does_not_suggest_the_typo(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {
        "models/a.sql": "SELECT eventId, request.endpint FROM parsed_events\n",
        "models/b.sql": "SELECT endpoint FROM {{ ref('a') }}\n",
        "models/c.sql": "SELECT endpint AS endpoint_ FROM {{ ref('a') }}\n",
        "models/d.sql": "SELECT endpoint FROM {{ ref('c') }}\n"})
    done = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert done.exit_code == 1
    lines = done.output.splitlines()
    assert any(line.startswith("models/a.sql") and "did you mean 'endpoint'?" in line
               for line in lines), done.output
    follow_on = [line for line in lines if line.startswith(("models/b.sql", "models/d.sql"))]
    assert len(follow_on) == 2 and not any("did you mean" in line for line in follow_on), \
        done.output
