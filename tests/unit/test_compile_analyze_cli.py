"""``runner compile --analyze`` without Java: a usage error (exit 2) that says what to do,
before any JVM is tried; ``runner compile`` alone still needs none."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import write_project


def test_analyze_without_java_is_a_usage_error(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId FROM parsed_events\n"})
    env = {"PATH": str(tmp_path / "no-bin"), "JAVA_HOME": str(tmp_path / "no-java")}
    plain = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)], env=env)
    analyzed = CliRunner().invoke(cli, ["compile", "--analyze", "--project-dir", str(root)],
                                  env=env)
    assert plain.exit_code == 0, plain.output
    assert analyzed.exit_code == 2
    assert "needs Java" in analyzed.output and "without --analyze" in analyzed.output
