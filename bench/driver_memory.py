"""Driver memory of one big batch on the ``rs`` engine: peak RSS of the
runner's Python process and of its JVM (the Spark driver) while ``runner stream
--available-now`` processes one batch of N records that are all valid, all dead letters, or
all valid through a merge model keyed on ``eventId`` (N distinct keys: N merge-source rows).

    .venv/bin/python -m bench.driver_memory --records 300000 --cases valid,dead,merge

Each case is a whole process (interpreter, JVM, session) on a fresh copy of a small project;
RSS is sampled from /proc every 0.1 s (VmHWM, the kernel's own peak, of each process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench.common import REPO, bench_parser, write_project_yml, write_result
from bench.processes import TreeSampler
from runner.demo import write_demo_files

_YML = """\
name: memory_bench
source: {{type: files, path: incoming}}
schema: >-
  eventId STRING NOT NULL, timestamp TIMESTAMP NOT NULL,
  user STRUCT<userId: STRING, country: STRING>,
  request STRUCT<endpoint: STRING, method: STRING, latency_ms: INT, status_code: INT>
delta: {{engine: rs}}
spark: {{master: 'local[2]', conf: {{spark.driver.memory: 2g}}}}
"""
_APPEND = "SELECT eventId, request.endpoint AS endpoint FROM parsed_events"
_MERGE = ("{{ config(materialized='merge', unique_key='eventId') }}\n"
          "SELECT eventId, max(request.endpoint) AS endpoint, "
          "max(request.latency_ms) AS latency_ms FROM parsed_events GROUP BY eventId")


def run_case(case: str, records: int, work: Path, repo: Path = REPO) -> dict[str, object]:
    root = work / case
    shutil.rmtree(root, ignore_errors=True)
    (root / "models").mkdir(parents=True)
    write_project_yml(root, yaml.safe_load(_YML.format()))
    (root / "models" / "m.sql").write_text(_MERGE if case == "merge" else _APPEND)
    incoming = root / "incoming"
    write_demo_files(incoming, events=records, files=4, poison_every=0)
    if case == "dead":  # every line a dead letter of the same size: NOT NULL eventId missing
        for f in incoming.glob("*.json"):
            f.write_text("".join(line.replace('"eventId"', '"eventID"', 1) + "\n"
                                 for line in f.read_text().splitlines()))
    size = sum(f.stat().st_size for f in incoming.glob("*.json"))
    cmd = [sys.executable, "-m", "runner", "stream", "--available-now",
           "--project-dir", str(root)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONPATH": str(repo)})
    sampler = TreeSampler(proc.pid, interval=0.1)
    sampler.start()
    out, _ = proc.communicate()  # reading as it goes: a full pipe would stall the runner
    sampler.stop()
    roles = sampler.summary()["roles"]
    python = max(roles.get(r, {}).get("peak_mb", 0.0) for r in ("driver", "py_workers"))
    java = roles.get("jvm", {}).get("peak_mb", 0.0)
    return {"case": case, "records": records, "input_mb": round(size / 2**20, 1),
            "exit": proc.returncode, "seconds": round(time.perf_counter() - started, 1),
            "python_peak_mb": round(python), "jvm_peak_mb": round(java),
            "tail": out.strip().splitlines()[-1:] if proc.returncode else []}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, json=True)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--cases", default="valid,dead,merge")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the checkout whose runner/ runs (e.g. an older commit's export)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="driver-memory-") as tmp:
        for _ in range(args.rounds):
            for case in args.cases.split(","):
                runs.append(run_case(case, args.records, Path(tmp), args.repo))
                print(json.dumps(runs[-1]), flush=True)
    write_result(__file__, {"records": args.records, "runs": runs}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
