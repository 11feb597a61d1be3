"""Generated operations: a long seeded random sequence of runner operations, every table
checked against the plain-Python reference after every step.

    .venv/bin/python -m bench.generated_ops --engine rs|spark --steps 200 --seed N [--minutes M] [--keep DIR] [--json OUT] [--kafka]

The generator and the checker are ``tests/support/genops.py`` (the default suite runs a short
sequence of it: ``tests/faults/test_generated_ops.py``). Here crashes are real: ``runner stream``
in its own process, killed at a random failpoint of the next batch by ``os._exit(137)`` (as a
SIGKILL leaves things), then restarted in this process. Every other step runs in this process
(one SparkSession).

After each step every table of an enabled model and the dead-letter table must be exact, or the
step must have been refused (exit 2) with nothing changed. The run stops at the first step that
breaks that (exit 1; the step, the seed and the last steps are in the record) or after
``--steps`` (exit 0), or after ``--minutes`` (exit 0, the record says how many steps ran).

``--kafka``: the project also has a Kafka model (``materialized='kafka'``) producing to a
topic of one Apache Kafka node started for the run (``tests/support/brokers.py``); after each
step a ``read_committed`` consumer must see every valid event exactly once in its topic while
it is live. Its record is the engine's entry under ``runs`` as ``<engine>+kafka``.
Record: ``bench/results/generated_ops-<date>-<sha>.json`` (or ``--json``), one entry per engine
under ``runs``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import (
    bench_name,
    bench_parser,
    git_state,
    machine,
    result_path,
    write_result,
)


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, json=True)
    ap.add_argument("--engine", choices=("rs", "spark"), default="rs")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--minutes", type=float, default=None,
                    help="stop (exit 0) after this long, saying how many steps ran")
    ap.add_argument("--keep", default=None, metavar="DIR", help="keep the project here")
    ap.add_argument("--kafka", action="store_true",
                    help="add a Kafka model, on an Apache Kafka node started for the run")
    args = ap.parse_args(argv)
    return run(args)


def run(args: argparse.Namespace) -> int:
    if not args.kafka:
        return _run(args, None)
    from tests.support.brokers import ApacheKafkaBroker, apache_kafka_jars, start_with_retries

    jars = apache_kafka_jars()
    if jars is None:
        print("--kafka: no Apache Kafka broker jars in .jars/kafka-broker (scripts/setup.sh)",
              file=sys.stderr)
        return 2
    broker = start_with_retries(lambda: ApacheKafkaBroker(jars))
    try:
        return _run(args, broker.bootstrap)
    finally:
        broker.stop()


def _run(args: argparse.Namespace, kafka: str | None) -> int:
    from tests.support.genops import GenOps, subprocess_crash  # pyspark: not at import time

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="genops-"))
    if args.keep and work.exists():
        shutil.rmtree(work)
    ops = GenOps(work / "proj", seed=args.seed, engine=args.engine, crash=subprocess_crash,
                 kafka=kafka)
    started = time.monotonic()
    failure: dict[str, Any] | None = None
    stopped = "steps"

    def show(step: dict[str, Any]) -> None:
        print(f"[{time.monotonic() - started:7.0f}s] " + json.dumps(step)[:400], flush=True)

    try:
        ops.run(0)
        while len(ops.log) < args.steps:
            if args.minutes is not None and time.monotonic() - started > args.minutes * 60:
                stopped = "minutes"
                break
            show(ops.step())
    except Exception as e:  # noqa: BLE001 - any failure is the bench's result
        failure = {"step": ops.log[-1] if ops.log else None, "error": str(e)[:3000],
                   "kind": type(e).__name__, "traceback": traceback.format_exc()[-4000:]}
        print(f"FAILED at step {len(ops.log) - 1}: {e}", file=sys.stderr, flush=True)
    done = [s for s in ops.log if not s.get("skipped")]
    doc = {"engine": args.engine, "kafka_model": kafka is not None, "seed": args.seed, "steps_requested": args.steps,
           "steps_run": len(ops.log), "steps_not_skipped": len(done),
           "stopped_by": "failure" if failure else stopped,
           "result": "every step exact or refused with nothing changed" if failure is None
           else "FAILED",
           "ops": dict(Counter(s["op"] for s in done)),
           "refused": dict(Counter(s["op"] for s in ops.log if s.get("refused"))),
           "crashes_that_died": sum(bool(s.get("died")) for s in ops.log),
           "seconds": round(time.monotonic() - started, 1), "failure": failure,
           "last_steps": ops.log[-8:], "git": git_state(), "machine": machine(),
           "project": str(work)}
    # One record per day and commit, one entry per engine (the two engines run side by side).
    path = Path(args.json) if args.json else result_path(bench_name(__file__))
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    runs[args.engine + ("+kafka" if kafka else "")] = doc
    out = write_result(__file__, {"runs": runs}, path if args.json else None)
    print(f"{doc['result']}: {len(ops.log)} steps ({doc['seconds']} s), record {out}")
    if not args.keep and failure is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failure else 0


if __name__ == "__main__":
    sys.exit(main())
