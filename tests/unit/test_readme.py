"""The README's promises about error positions and exit codes, checked against the runner
(stopping is tests/spark/test_stop.py; each exit code has its test, named in the README)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import REPO_ROOT, write_project

README = (REPO_ROOT / "README.md").read_text()


def _block_after(marker: str, lang: str = "") -> str:
    start = README.index(marker)
    match = re.compile(rf"```{lang}\n(.*?)```", re.S).search(README, start)
    assert match, marker
    return match.group(1)


def test_the_readme_error_example_is_what_compile_prints(tmp_path) -> None:
    model = _block_after("Write `models/<table>.sql`", "sql")
    shown = _block_after("column and offending name").strip()
    typo = model.replace("SELECT request.endpoint", "SELECT request.endpont", 1)
    assert typo != model
    root = write_project(tmp_path, {"models/endpoint_stats.sql": typo})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 1
    assert shown in result.output.splitlines(), result.output


def test_the_readme_model_example_compiles_clean(tmp_path) -> None:
    model = _block_after("Write `models/<table>.sql`", "sql")
    root = write_project(tmp_path, {"models/endpoint_stats.sql": model})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 0 and "0 errors, 0 warnings" in result.output, result.output
