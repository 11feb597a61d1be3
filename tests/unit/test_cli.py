"""The command line: exit codes, output formats, no traceback, no JVM for compile."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import BASE_YML, REPO_ROOT, write_project

GOOD = {"models/a.sql": "{{ config(tags=['core']) }}\nSELECT eventId, user.userId AS uid FROM parsed_events",
        "models/b.sql": "SELECT uid, count(*) AS n FROM {{ ref('a') }} GROUP BY uid"}


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_compile_clean_writes_target(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": GOOD["models/a.sql"]})
    result = _invoke("compile", "--project-dir", str(root))
    assert result.exit_code == 0, result.output
    assert "compiled 1 model: 0 errors, 0 warnings" in result.output
    assert (root / "target/compiled/a.sql").read_text().startswith("SELECT eventId")
    manifest = json.loads((root / "target/manifest.json").read_text())
    assert manifest["order"] == ["a"]
    assert manifest["models"]["a"]["columns"] == [{"name": "eventId", "type": "STRING"},
                                                  {"name": "uid", "type": "STRING"}]
    assert manifest["models"]["a"]["path"] == "models/a.sql"


def test_compile_reports_all_errors_with_file_line_and_exit_1(tmp_path) -> None:
    root = write_project(tmp_path, {
        "models/a.sql": "SELECT eventId,\n  user.usrId AS x\nFROM parsed_events",
        "models/b.sql": "SELECT {{ var('nope') }}",
        "models/c.sql": "SELECT eventId FROM parsed_events",
    })
    result = _invoke("compile", "--project-dir", str(root))
    assert result.exit_code == 1
    assert "models/a.sql:2:" in result.output and "[unknown-column]" in result.output
    assert "did you mean" in result.output
    assert "models/b.sql:1: " in result.output and "undefined var 'nope'" in result.output
    assert "Traceback" not in result.output
    assert (root / "target/compiled/c.sql").exists()


def test_compile_names_every_cycle_in_ref_order_with_files(tmp_path) -> None:
    ref = "SELECT eventId FROM {{ ref('%s') }}"
    root = write_project(tmp_path, {
        "models/b.sql": ref % "a", "models/a.sql": ref % "b", "models/c.sql": ref % "a",
        "models/q.sql": ref % "r", "models/r.sql": ref % "p", "models/p.sql": ref % "q",
        "models/d.sql": "SELECT eventId FROM parsed_events"})
    result = _invoke("compile", "--project-dir", str(root))
    assert result.exit_code == 1
    assert ("models/a.sql: error [cycle] models ref each other in a cycle: a -> b -> a "
            "(models/a.sql, models/b.sql)") in result.output
    assert ("models ref each other in a cycle: p -> q -> r -> p "
            "(models/p.sql, models/q.sql, models/r.sql)") in result.output
    assert result.output.count("[cycle]") == 2
    assert (root / "target/compiled/d.sql").exists()
    assert not (root / "target/compiled/c.sql").exists()


def test_compile_json_and_github_formats(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": "SELECT nope FROM parsed_events"})
    result = _invoke("compile", "--project-dir", str(root), "--format", "json")
    doc = json.loads(result.output)
    assert result.exit_code == 1 and doc["ok"] is False and doc["errors"] == 1
    v = doc["violations"][0]
    assert (v["rule"], v["path"], v["line"]) == ("unknown-column", "models/a.sql", 1)
    result = _invoke("compile", "--project-dir", str(root), "--format", "github")
    assert result.output.startswith("::error file=models/a.sql,line=1,col=")
    assert "title=unknown-column::" in result.output


def test_select_and_unknown_selector(tmp_path) -> None:
    root = write_project(tmp_path, GOOD)
    result = _invoke("compile", "--project-dir", str(root), "--select", "b")
    assert result.exit_code == 0 and "compiled 1 model" in result.output
    result = _invoke("compile", "--project-dir", str(root), "--select", "+b")
    assert "compiled 2 models" in result.output
    result = _invoke("compile", "--project-dir", str(root), "--select", "tag:core+")
    assert "compiled 2 models" in result.output
    result = _invoke("compile", "--project-dir", str(root), "--select", "bb")
    assert result.exit_code == 2 and "no model named 'bb'" in result.output
    assert "did you mean 'b'" in result.output


def test_config_errors_exit_2_without_traceback(tmp_path) -> None:
    root = write_project(tmp_path, {}, project_yml=BASE_YML + "unknown_thing: 1\n")
    result = _invoke("compile", "--project-dir", str(root))
    assert result.exit_code == 2
    assert "project.yml:" in result.output and "unknown key 'unknown_thing'" in result.output
    assert "Traceback" not in result.output
    result = _invoke("--debug", "compile", "--project-dir", str(root))
    assert result.exit_code == 2  # --debug adds the traceback on stderr
    result = _invoke("compile", "--project-dir", str(tmp_path / "missing"))
    assert result.exit_code == 2 and "no project.yml" in result.output


def test_stream_usage_errors_exit_2(tmp_path) -> None:
    root = write_project(tmp_path, GOOD)
    result = _invoke("stream", "--project-dir", str(root), "--available-now", "--trigger", "1 second")
    assert result.exit_code == 2 and "exclude each other" in result.output
    result = _invoke("stream", "--project-dir", str(root), "--trigger", "often")
    assert result.exit_code == 2 and "not an interval" in result.output
    result = _invoke("stream", "--project-dir", str(root), "--select", "b", "--available-now")
    assert result.exit_code == 2 and "--select +b" in result.output


def test_stream_refuses_a_plan_with_model_errors(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": "SELECT nope FROM parsed_events"})
    result = _invoke("stream", "--project-dir", str(root), "--available-now")
    assert result.exit_code == 1 and "unknown-column" in result.output


def test_compile_does_not_import_pyspark() -> None:
    code = ("import sys; from click.testing import CliRunner; from runner.cli import cli; "
            f"r = CliRunner().invoke(cli, ['compile', '--project-dir', {str(REPO_ROOT)!r}]); "
            "assert r.exit_code == 0, r.output; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
