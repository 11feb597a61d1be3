"""What a backfill costs: one model added to a pipeline that has processed N events, against
the same model in the live pipeline over the same events.

    .venv/bin/python -m bench.backfill_bench                    # 1M events, 40 files, 1 round
    .venv/bin/python -m bench.backfill_bench --events 200000 --files 8 --rounds 2

Per round, each step a whole ``runner stream --available-now --progress json`` process on a
copy of the example project (rs engine, ``--master``), ``--max-files`` files per trigger:

history
    the example's three models over every file (builds the checkpoint: N events, B batches).
backfill:<model>
    <model> added to that project; the start-up backfills it over the B batches, then the
    query finds no new input. Measured: the backfill's own seconds (its ``done`` record) and
    the process's wall time.
alone:<model>
    a fresh project with <model> only, over the same files: the model "in the live pipeline",
    paying its own read and parse, as the backfill does. Measured: the query's seconds (the
    summary) and the wall time.
with:<model>
    a fresh project with the three models and <model>: the live pipeline's marginal cost of the
    model is ``with - history`` (read and parse shared).

Models: ``endpoint_counts`` (accumulating merge, one merge per batch) and ``requests_copy``
(``request_logs``' SQL under another name: an append of every event). Tables are counted after
each step against the expected counts. Results: ``bench/results/backfill_bench-<date>-<sha>.json``.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    bench_parser,
    bench_project,
    demo_data,
    files_source,
    progress_record,
    table_rows,
    write_result,
)
from tests.support.projects import ENDPOINT_COUNTS

MODELS = {"endpoint_counts": ENDPOINT_COUNTS,
          "requests_copy": (REPO / "models" / "request_logs.sql").read_text()}


def run(project: Path) -> dict[str, Any]:
    """One ``runner stream --available-now`` process; its records and wall time."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "runner", "stream", "--project-dir",
                           str(project), "--available-now", "--progress", "json"],
                          capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"runner failed in {project}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    docs = [d for line in proc.stdout.splitlines() if (d := progress_record(line)) is not None]
    summary = next(d["summary"] for d in docs if "summary" in d)
    done = [d["backfill"] for d in docs if "backfill" in d and d["backfill"]["done"]]
    return {"wall_s": round(wall, 2), "query_s": summary["seconds"],
            "batches": summary["batches"], "input_rows": summary["input_rows"],
            "backfill": done[0] if done else None}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, events=1_000_000, files=40, max_files=True, master=True,
                          rounds=1, workdir=True, json=True)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args(argv)

    work = args.workdir or Path(tempfile.mkdtemp(prefix="backfill-bench-"))
    data = work / "data"
    demo_data(data, args.events, args.files)
    models = [m for m in args.models.split(",") if m]
    rounds = []
    for r in range(args.rounds):
        base = work / f"round-{r}"
        shutil.rmtree(base, ignore_errors=True)
        source = files_source(data, args.max_files)
        hist = bench_project(base / "history", source=source, master=args.master)
        record: dict[str, Any] = {"history": run(hist)}
        print(f"round {r}: history {record['history']}", flush=True)
        for model in models:
            (hist / "models" / f"{model}.sql").write_text(MODELS[model])
            step = run(hist)
            alone = bench_project(base / f"alone-{model}", source=source, master=args.master,
                                  models=False, extra_models={model: MODELS[model]})
            live = run(alone)
            both = bench_project(base / f"with-{model}", source=source, master=args.master,
                                 extra_models={model: MODELS[model]})
            with_ = run(both)
            rows = {"backfilled": table_rows(hist / "_warehouse" / model),
                    "alone": table_rows(alone / "_warehouse" / model),
                    "with": table_rows(both / "_warehouse" / model)}
            assert len(set(rows.values())) == 1, (model, rows)
            assert step["backfill"] is not None and step["batches"] == 0, step
            record[model] = {
                "backfill": step, "alone": live, "with": with_, "rows": rows["backfilled"],
                "ratio_backfill_to_alone_inner": round(step["backfill"]["seconds"]
                                                       / live["query_s"], 3),
                "ratio_backfill_to_alone_wall": round(step["wall_s"] / live["wall_s"], 3),
                "live_marginal_s": round(with_["query_s"] - record["history"]["query_s"], 2),
            }
            print(f"round {r}: {model}: backfill {step['backfill']['seconds']:.1f}s "
                  f"(wall {step['wall_s']:.1f}s), alone {live['query_s']:.1f}s "
                  f"(wall {live['wall_s']:.1f}s), with {with_['query_s']:.1f}s; "
                  f"ratio {record[model]['ratio_backfill_to_alone_inner']}", flush=True)
        rounds.append(record)
    result = {"events": args.events, "files": args.files, "max_files": args.max_files,
              "master": args.master, "rounds": rounds,
              "median_ratio": {m: statistics.median(r[m]["ratio_backfill_to_alone_inner"]
                                                    for r in rounds) for m in models}}
    print(json.dumps(result["median_ratio"]))
    write_result(__file__, result, args.json)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
