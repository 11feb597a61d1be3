"""What the CLI says in small cases: a model with a template error still counts as compiled,
`runner --version`, "did you mean" for tags, plurals, and a checkpoint held by another runner
(its own exit code, 75: try again later)."""

from __future__ import annotations

import importlib.metadata
import json

from click.testing import CliRunner

from runner.checkpoint.lock import CheckpointLock
from runner.cli import cli
from runner.console import plural
from runner.errors import did_you_mean
from tests.support.projects import BASE_YML, write_project


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_model_with_a_template_error_is_counted(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": "SELECT eventId FROM parsed_events",
                                    "models/b.sql": "SELECT {{ var('nope') }} AS x"})
    result = _invoke("compile", "--project-dir", str(root))
    assert result.exit_code == 1
    assert "compiled 2 models: 1 error, 0 warnings" in result.output
    doc = json.loads(_invoke("compile", "--project-dir", str(root), "--format", "json").output)
    assert doc["models"] == 2


def test_version() -> None:
    result = _invoke("--version")
    assert result.exit_code == 0
    assert result.output.strip() == (
        f"runner {importlib.metadata.version('sql-fanout-runner')}")


def test_tag_selector_says_did_you_mean(tmp_path) -> None:
    root = write_project(tmp_path, {
        "models/a.sql": "{{ config(tags=['performance']) }}\nSELECT eventId FROM parsed_events"})
    result = _invoke("compile", "--project-dir", str(root), "--select", "tag:perf")
    assert result.exit_code == 2
    assert "no model has tag 'perf' (did you mean 'performance'?)" in result.output


def test_did_you_mean_on_a_prefix() -> None:
    assert did_you_mean("perf", ["requests", "performance"]) == " (did you mean 'performance'?)"
    assert did_you_mean("zz", ["requests", "performance"]) == ""


def test_plurals() -> None:
    assert [plural(n, "row") for n in (0, 1, 2, 1500)] == ["0 rows", "1 row", "2 rows",
                                                         "1,500 rows"]
    assert plural(1, "batch", "batches") == "1 batch" and plural(3, "batch", "batches") == \
        "3 batches"


def test_demo_and_docs_say_one_thing_in_the_singular(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": "SELECT eventId FROM parsed_events"})
    result = _invoke("demo", "--project-dir", str(root), "--events", "3", "--files", "1",
                     "--poison-every", "2")
    assert "wrote 3 events (1 poison line) in 1 file to" in result.output
    result = _invoke("docs", "--project-dir", str(root))
    assert result.exit_code == 0 and "wrote 2 pages" in result.output


def test_a_checkpoint_held_by_another_runner_exits_75(tmp_path) -> None:
    root = write_project(tmp_path, {"models/a.sql": "SELECT eventId FROM parsed_events"},
                         project_yml=BASE_YML)
    lock = CheckpointLock(root / "cp")
    lock.acquire()
    try:
        result = _invoke("stream", "--project-dir", str(root), "--available-now")
    finally:
        lock.release()
    assert result.exit_code == 75, result.output
    assert "is in use by pid" in result.output and "Traceback" not in result.output


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path) -> None:
    """`runner status | head`: the pipe's reader closes early. The command stops as Unix tools
    do (exit 141, 128 + SIGPIPE) instead of printing `internal error: BrokenPipeError`."""
    import os
    import subprocess
    import sys

    root = write_project(tmp_path, {"models/a.sql": "SELECT eventId FROM parsed_events"})
    read, write = os.pipe()
    os.close(read)  # no reader at all: the first write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "runner", "compile", "--project-dir",
                               str(root)], stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120, check=False)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == "", done.stderr
