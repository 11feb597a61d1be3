"""Persist or not, for a frame read twice in a batch: ``run_batch`` timings, one process.

Two cases, each run with the persist forced on and off, alternating, after one warm-up round:

- ``parsed``: one model reads ``parsed_events``; the dead-letter search reads it too
  (:func:`runner.runtime.batches.batch.should_persist`);
- ``child``: that model is ``ref``'d by one other model (an aggregate over it)
  (:func:`runner.runtime.batches.batch.persisted_models`).

Wall time drifts with the machine's load; the CPU seconds of the process and its JVM (user +
system, from ``/proc``) drift much less. Usage::

    .venv/bin/python -m bench.persist_bench --events 200000 --rounds 5 --case parsed

Results: ``bench/results/persist_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import bench_parser, write_result
from bench.processes import cpu_seconds, descendants

SCHEMA = ("eventId STRING NOT NULL, timestamp TIMESTAMP NOT NULL, "
          "user STRUCT<userId: STRING, country: STRING>, "
          "request STRUCT<endpoint: STRING, method: STRING, latency_ms: INT, "
          "status_code: INT>, errors ARRAY<STRUCT<errorCode: STRING, severity: STRING>>")


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and the processes below it (the JVM)."""
    return time.process_time() + sum(cpu_seconds(p) for p in descendants(os.getpid()))


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, events=200_000, rounds=5, master=True, json=True)
    parser.add_argument("--case", choices=["parsed", "child"], default="parsed")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from runner.compile.plan import Plan, Step
    from runner.demo import write_demo_files
    from runner.project.config import ModelConfig
    from runner.runtime.batches import batch
    from runner.runtime.client.session import build_session
    from runner.sinks import RsWriter, sink_specs

    spark = build_session(master=args.master, app_name="persist-bench")
    root = Path(tempfile.mkdtemp(prefix="persist-bench-"))
    write_demo_files(root / "in", events=args.events, files=8)
    raw = (spark.read.text(str(root / "in"))
           .select("value", F.col("_metadata.file_path").alias("_source_file")))
    steps = [Step(name="m", path="models/m.sql", config=ModelConfig(), depends_on=(),
                  columns=(), sql="SELECT eventId, user.country AS country, "
                                  "request.latency_ms AS ms FROM parsed_events")]
    if args.case == "child":
        steps.append(Step(name="c", path="models/c.sql", config=ModelConfig(),
                          depends_on=("m",), columns=(),
                          sql="SELECT country, count(*) AS n FROM m GROUP BY country"))
    plan = Plan("bench", "files", SCHEMA, "_dead", tuple(steps), None)
    runs = []
    for r in range(args.rounds + 1):  # round 0 warms the JVM up
        for persist in ((True, False) if r % 2 else (False, True)):
            if args.case == "parsed":
                batch.should_persist = lambda _plan, on=persist: on  # type: ignore[misc]
            else:
                batch.persisted_models = (  # type: ignore[misc]
                    lambda _plan, on=persist: frozenset({"m"} if on else ()))
            warehouse = root / f"wh-{r}-{persist}"
            sinks, dead = sink_specs(plan, table_path=lambda n, w=warehouse: str(w / n),
                                     run_id="bench")
            bp = batch.BatchPlan(plan=plan, sinks=sinks, dead_letter=dead,
                                 metadata_columns={"_source_file": "STRING"},
                                 writer=RsWriter(arrow_max_rows=0))
            wall, cpu = time.perf_counter(), tree_cpu_seconds()
            result = batch.run_batch(bp, raw, 0)
            wall, cpu = time.perf_counter() - wall, tree_cpu_seconds() - cpu
            print(f"round {r} persist={persist}: {wall:.2f} s wall, {cpu:.2f} s CPU, "
                  f"{result.input_rows} rows, {result.dead_letters} dead", flush=True)
            if r:
                runs.append({"persist": persist, "wall": round(wall, 3), "cpu": round(cpu, 3)})
            shutil.rmtree(warehouse)
    for persist in (True, False):
        for key in ("wall", "cpu"):
            values = sorted(x[key] for x in runs if x["persist"] is persist)
            print(f"persist={persist} {key}: median {values[len(values) // 2]:.2f} s {values}")
    write_result(__file__, {"case": args.case, "events": args.events,
                            "load": os.getloadavg(), "runs": runs}, args.json)
    shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
