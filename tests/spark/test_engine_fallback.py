"""``delta.engine: auto`` in a real ``runner stream`` process on a local master: it writes with
``rs`` (docs/ENGINES.md: the faster exact engine on one machine) even where the
delta-spark jars load, and says which engine and why in one line at start.

The tables are read back independently: delta-rs records its own client in each commit's
``commitInfo`` (delta-spark writes ``engineInfo: Apache-Spark/... Delta-Lake/...``). The rule's
other branches (a cluster master with and without the io.delta classes) are pure and covered
in tests/unit/test_engine_choice.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark


def _commit_infos(table: Path) -> list[dict]:
    infos = []
    for entry in sorted((table / "_delta_log").glob("*.json")):
        for line in entry.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                infos.append(action["commitInfo"])
    return infos


def test_auto_on_a_local_master_writes_with_rs_and_says_why_once(tmp_path: Path) -> None:
    yml = (BASE_YML.replace("engine: rs", "engine: auto")
           .replace("slow_ms: 1000", "slow_request_ms: 1000"))
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml)
    write_demo_files(root / "incoming", events=200, files=1, poison_every=0)
    # The test run's environment: scripts/setup.sh's jars (delta-spark among them) when present.
    done = subprocess.run(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--available-now"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1"}, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    why = ("delta engine rs: delta.engine auto on the local master local[*]: delta-rs is the "
           "faster exact engine on one machine")  # the built-in dev target's master
    assert out.count(why) == 1, out
    assert out.count("delta engine ") == 1 and "Traceback" not in out
    assert read_table(str(root / "wh/request_logs")).num_rows == 200
    infos = _commit_infos(root / "wh/request_logs")
    assert infos and all("Delta-Lake" not in str(i.get("engineInfo", "")) for i in infos), infos
