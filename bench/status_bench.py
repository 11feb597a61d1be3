"""How long ``runner status`` takes on a pipeline with thousands of batches and no maintenance.

    .venv/bin/python -m bench.status_bench --batches 2000 [--dir DIR] [--json OUT]

Builds the pipeline without Spark (``tests/support/fake_stream.py``: the real delta-rs writer
with application transactions and the real ledger, five tables, a commit per table per batch,
dead letters every 10th batch): the worst case for status, since nothing is compacted and
every table has a file per batch. Then times ``collect_status`` in process and the ``runner
status`` command as a process (start-up and imports included), 5 times each, and
``runner snapshot``. Results: ``bench/results/status_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, bench_parser, run_env, write_result
from runner.ops.status import collect_status
from tests.support.fake_stream import FakeStream, make_project


def timed(command: list[str], runs: int = 5) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=run_env(), cwd=REPO)
        out.append(round(time.perf_counter() - started, 3))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, json=True)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None,
                        help="build the pipeline here (reused when it is there)")
    args = parser.parse_args(argv)
    root = (args.dir or Path(tempfile.mkdtemp(prefix="status-bench-"))) / "proj"
    if not (root / "project.yml").exists():
        started = time.perf_counter()
        stream = FakeStream(make_project(root))
        for n in range(args.batches):
            stream.batch(n, dead=2 if n % 10 == 0 else 0)
        print(f"built {args.batches} batches in {time.perf_counter() - started:.0f}s")
    project = stream.project if "stream" in locals() else None
    from runner.project.loader import load_project

    project = project or load_project(root)
    in_process = []
    for _ in range(5):
        started = time.perf_counter()
        status = collect_status(project)
        in_process.append(round(time.perf_counter() - started, 3))
    python = [sys.executable, "-m", "runner"]
    result = {
        "batches": status.snapshot_batch,
        "tables": {t.name: {"version": t.version, "files": t.files, "log_files": t.log_files}
                   for t in status.tables},
        "status_in_process_seconds": in_process,
        "status_command_seconds": timed([*python, "status", "--project-dir", str(root)]),
        "status_json_command_seconds": timed([*python, "status", "--project-dir", str(root),
                                              "--format", "json"]),
        "snapshot_command_seconds": timed([*python, "snapshot", "--project-dir", str(root)]),
        "python_startup_seconds": timed([sys.executable, "-c", "pass"]),
        "load_average": os.getloadavg(),
    }
    for key in ("status_in_process_seconds", "status_command_seconds",
                "snapshot_command_seconds"):
        result[key.replace("seconds", "median")] = statistics.median(result[key])
    print(json.dumps(result, indent=1))
    write_result(__file__, result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
