"""``delta.engine: auto`` without the delta-spark jars: the run writes with ``rs`` and says
why, once. A real ``runner stream`` process (the test run's own session has the jars)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark


def test_auto_without_jars_falls_back_to_rs_and_says_so_once(tmp_path: Path) -> None:
    yml = (BASE_YML.replace("engine: rs", "engine: auto")
           .replace("slow_ms: 1000", "slow_request_ms: 1000"))
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml)
    write_demo_files(root / "incoming", events=200, files=1, poison_every=0)
    done = subprocess.run(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--available-now"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "RUNNER_JARS_DIR": "", "NO_COLOR": "1"}, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert out.count("delta.engine auto: writing with rs; RUNNER_JARS_DIR is set empty") == 1
    assert "engine rs" in out and "Traceback" not in out
    assert read_table(str(root / "wh/request_logs")).num_rows == 200
