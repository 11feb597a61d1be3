"""Crash loop: SIGKILL a running ``runner stream`` N times, then check every table exactly once.

    .venv/bin/python -m bench.crash_loop --kills 20 [--engine rs|spark] [--s3] [--seed 1] [--keep DIR] [--json OUT]

What it does, on a copy of the example project (its three models plus ``endpoint_counts``, an
accumulating merge: ``requests = target.requests + source.requests``, which a replayed batch
would double):

1. a feeder thread keeps writing new input files (``runner.demo.write_demo_files``: atomic
   rename, poison lines included) every 1-3 s (``--feed-every LO-HI``);
2. ``runner stream`` (the project's trigger: 1 second) runs in its own process group; at a
   random moment the whole group (Python driver, JVM, Python workers) gets SIGKILL: for 15%
   of the runs 1-8 s after spawning (start-up); otherwise after 0, 1, 2 or 3 batches of this
   run completed (equally likely), 0.5-20 s after the query started for 0, else 0-6.7 s after
   that batch. It is restarted; N times. Kills land anywhere: during start-up, between
   batches, inside a batch between two sink commits, between the last commit and Spark's
   commit log;
3. the feeder stops, a final ``runner stream --available-now`` drains what is left (exit 0);
4. every table (request_logs, error_events, performance_metrics, endpoint_counts and the
   dead-letter table) is compared, as a multiset of rows, with a reference computed here in
   plain Python from the input files: no lost row, no duplicated row, merge totals exact.

With ``--add-models``, ``endpoint_counts`` is not there at first: halfway through the runs it
is added together with ``slow_requests`` (an append model that refs performance_metrics),
so the next start-up backfills both from the checkpoint's history; the runs after that are
killed during the backfill (after 1-3 backfill batches, up to 2 s later) whenever one is under
way, and the final tables must hold the whole history for both.

With ``--s3`` every location is in a bucket of moto's S3 server (started here on a loopback
port, :mod:`bench.s3`): the source files (the feeder writes each file locally, the reference's
copy, then puts it in the bucket with one PUT), the checkpoint and the warehouse; the runner's
processes get the bucket's ``AWS_*`` variables, and the tables are read back from the bucket.

Exit code 0 when every table matches, 1 on any discrepancy (printed, and in the record:
``bench/results/crash_loop-<date>-<sha>.json``, or ``--json``: one entry per engine and
storage under ``loops``, e.g. ``rs`` and ``spark/s3``, the runs of one day and commit together).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    bench_name,
    bench_parser,
    bench_project,
    files_source,
    git_state,
    is_batch_record,
    progress_record,
    result_path,
    write_result,
)
from bench.s3 import MotoBucket
from runner.demo import write_demo_files
from runner.storage.objects import ObjectPath, object_path
from runner.storage.ops import names
from tests.support.projects import ENDPOINT_COUNTS, SLOW_REQUESTS
from tests.support.reference import (
    DEFAULT_TABLES,
    actual_tables,
    compare,
    expected_tables,
)

LATE_MODELS = {"endpoint_counts": ENDPOINT_COUNTS, "slow_requests": SLOW_REQUESTS}


def loop_project(root: Path, *, late: bool = False, engine: str = "rs",
                 bucket: str | None = None) -> Path:
    """The example project: the given Delta engine, 1 s trigger, up to 8 files a batch, plus
    the merge model (unless ``late``: then :func:`add_models` brings it, with slow_requests,
    later). With ``bucket`` (``s3://name``) the source, checkpoint and warehouse are in it."""
    where: dict[str, Any] = {"checkpoint": f"{bucket}/cp", "warehouse": f"{bucket}/wh"} \
        if bucket else {}
    bench_project(root, source=files_source(f"{bucket}/incoming" if bucket else
                                            "data/incoming", 8), engine=engine,
                  extra_models={} if late else {"endpoint_counts": ENDPOINT_COUNTS},
                  trigger="1 second", **where)
    (root / "data" / "incoming").mkdir(parents=True)
    return root


def add_models(root: Path) -> None:
    for name, text in LATE_MODELS.items():
        (root / "models" / f"{name}.sql").write_text(text)


class Feeder(threading.Thread):
    """Writes a new demo file (atomically) every 1-3 s until stopped."""

    def __init__(self, incoming: Path, rng: random.Random,
                 bucket: MotoBucket | None = None, every: tuple[float, float] = (1.0, 3.0),
                 ) -> None:
        super().__init__(daemon=True)
        self.incoming, self.rng, self.bucket, self.every = incoming, rng, bucket, every
        self.stop = threading.Event()
        self.files = self.events = 0

    def run(self) -> None:
        while not self.stop.is_set():
            before = set(self.incoming.iterdir())
            result = write_demo_files(self.incoming, events=self.rng.randint(50, 800), files=1,
                                      seed=self.rng.randint(0, 10**6),
                                      poison_every=self.rng.choice([37, 101, 499]))
            if self.bucket is not None:
                for path in sorted(set(self.incoming.iterdir()) - before):
                    self.bucket.upload(path, "incoming")
            self.files += result.files
            self.events += result.events
            self.stop.wait(self.rng.uniform(*self.every))


# -- running and killing ------------------------------------------------------------------------

def _batches_in_checkpoint(checkpoint: Path | ObjectPath, kind: str) -> set[int]:
    return {int(name) for name in names(checkpoint / kind) if name.isdigit()}


def spawn(project: Path, log: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(project),
         "--progress", "json", *args],
        stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)


def read_progress(log: Path) -> dict[str, Any]:
    batches, backfill, started, summary = [], [], False, None
    for line in log.read_text(errors="replace").splitlines():
        doc = progress_record(line)
        if doc is None:
            continue
        if is_batch_record(doc):
            batches.append(doc)
        elif "backfill" in doc:
            backfill.append(doc["backfill"])
        elif str(doc.get("event", "")).startswith("pipeline "):
            started = True
        elif "summary" in doc:
            summary = doc["summary"]
    return {"batches": batches, "query_started": started, "summary": summary,
            "backfill": [b for b in backfill if not b["done"]],
            "backfill_done": any(b["done"] for b in backfill)}


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, json=True)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--max-run", type=float, default=20.0,
                        help="a kill lands up to this many seconds after the query started "
                             "(or up to a third of it after the 1st, 2nd or 3rd batch)")
    parser.add_argument("--startup-kills", type=float, default=0.15,
                        help="share of runs killed 1-8 s after spawning (during start-up)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, default=None,
                        help="work in this (new) directory and keep it")
    parser.add_argument("--add-models", action="store_true",
                        help="add endpoint_counts and slow_requests halfway (backfilled), and "
                             "kill during their backfill")
    parser.add_argument("--engine", choices=("rs", "spark"), default="rs",
                        help="delta.engine of the project (spark: delta-spark's jars, "
                             "scripts/setup.sh)")
    parser.add_argument("--feed-every", default="1-3", metavar="LO-HI",
                        help="seconds between two new input files (uniform); a slower feed "
                             "keeps the final drain short where batches are slow (S3, load)")
    parser.add_argument("--s3", action="store_true",
                        help="every location in a bucket of moto's S3 server (started here)")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="crash-loop-"))
    logs = work / "logs"
    logs.mkdir(parents=True)
    if not args.s3:
        return loop(args, work, logs, None)
    with MotoBucket(logs, "crash-loop") as bucket:
        return loop(args, work, logs, bucket)


def loop(args: Any, work: Path, logs: Path, bucket: MotoBucket | None) -> int:
    rng = random.Random(args.seed)
    project = loop_project(work / "project", late=args.add_models, engine=args.engine,
                           bucket=bucket.uri if bucket else None)
    added_at = args.kills // 2 if args.add_models else None
    checkpoint: Path | ObjectPath = object_path(f"{bucket.uri}/cp") if bucket \
        else project / "_checkpoint"
    warehouse: Path | ObjectPath = object_path(f"{bucket.uri}/wh") if bucket \
        else project / "_warehouse"
    started = time.monotonic()
    requests_at = bucket.log.mark() if bucket else 0
    low, _, high = args.feed_every.partition("-")
    feeder = Feeder(project / "data" / "incoming", rng, bucket,
                    (float(low), float(high or low)))
    feeder.start()
    runs: list[dict[str, Any]] = []
    try:
        for k in range(args.kills):
            log = logs / f"run-{k:02d}.log"
            if k == added_at:
                add_models(project)
                print(f"run {k:2d}: models added: {', '.join(LATE_MODELS)}", flush=True)
            backfill_kill = rng.choice([1, 2, 3]) if added_at is not None and k >= added_at \
                else None
            commits_before = _batches_in_checkpoint(checkpoint, "commits")
            proc = spawn(project, log)
            t0 = time.monotonic()
            died = None
            # When to kill: in start-up (a share of the runs), or once the query started and
            # `after_batches` batches completed in this run, a random moment later: within
            # the first batch (which replays the batch in flight at the previous kill), or
            # within a later one, anywhere between its first and its last sink commit.
            startup = rng.random() < args.startup_kills
            after_batches = rng.choice([0, 1, 2, 3])
            deadline = t0 + rng.uniform(1.0, 8.0) if startup else None
            while deadline is None or time.monotonic() < deadline:
                if proc.poll() is not None:
                    died = proc.returncode
                    break
                if deadline is None:
                    progress = read_progress(log)
                    if time.monotonic() - t0 > 600:
                        deadline = time.monotonic()
                    elif backfill_kill and not progress["backfill_done"] and \
                            len(progress["backfill"]) >= backfill_kill:
                        deadline = time.monotonic() + rng.uniform(0.0, 2.0)
                    elif progress["query_started"] and after_batches == 0:
                        deadline = time.monotonic() + rng.uniform(0.5, args.max_run)
                    elif after_batches and len(progress["batches"]) >= after_batches:
                        deadline = time.monotonic() + rng.uniform(0.0, args.max_run / 3)
                time.sleep(0.1)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            offsets = _batches_in_checkpoint(checkpoint, "offsets")
            commits = _batches_in_checkpoint(checkpoint, "commits")
            progress = read_progress(log)
            runs.append({
                "run": k, "killed_after_s": round(time.monotonic() - t0, 2),
                "exited_by_itself": died,
                "query_started": progress["query_started"],
                "batches_done": [b["batch_id"] for b in progress["batches"]],
                "backfill_batches": [b["batch_id"] for b in progress["backfill"]],
                "killed_during_backfill": bool(progress["backfill"])
                and not progress["backfill_done"],
                "replayed_with_skips": [b["batch_id"] for b in progress["batches"] if b["skipped"]],
                "sinks_skipped": sum(len(b["skipped"]) for b in progress["batches"]),
                "new_commits": len(commits - commits_before),
                # Spark plans the next batch (offsets/N) as soon as input is there: under a
                # constant feed nearly every kill finds one planned and not committed.
                "uncommitted_batch_at_kill": bool(offsets)
                and max(offsets) > max(commits, default=-1),
            })
            print(f"run {k:2d}: killed after {runs[-1]['killed_after_s']:5.1f}s, batches "
                  f"{runs[-1]['batches_done']}, replays with skipped sinks "
                  f"{runs[-1]['replayed_with_skips']}, uncommitted batch at kill: "
                  f"{runs[-1]['uncommitted_batch_at_kill']}"
                  + (f", backfill batches {runs[-1]['backfill_batches']}"
                     + (" (KILLED DURING BACKFILL)" if runs[-1]["killed_during_backfill"]
                        else "") if runs[-1]["backfill_batches"] else "")
                  + (f", EXITED BY ITSELF ({died})" if died is not None else ""), flush=True)
    finally:
        feeder.stop.set()
        feeder.join()

    log = logs / "final.log"
    proc = spawn(project, log, "--available-now")
    final_code = proc.wait(timeout=1800)
    final = read_progress(log)
    tables = DEFAULT_TABLES + (tuple(LATE_MODELS) if args.add_models else ())
    result = compare(expected_tables(project / "data" / "incoming", tables),
                     actual_tables(warehouse))  # type: ignore[arg-type]  # a Location
    ok = final_code == 0 and not any(r["exited_by_itself"] for r in runs) and all(r["lost"] == 0 and r["duplicated_or_extra"] == 0
                                 for r in result.values())
    all_batches = [b for r in runs for b in r["batches_done"]] + \
        [b["batch_id"] for b in final["batches"]]
    record = {
        "ok": ok, "kills": args.kills, "seed": args.seed, "engine": args.engine,
        "feed_every_s": args.feed_every,
        "storage": "s3 (moto, loopback)" if bucket else "local",
        "s3_requests": bucket.log.since(requests_at) if bucket else None,
        "duration_s": round(time.monotonic() - started, 1),
        "input_files": feeder.files, "input_records": feeder.events,
        "batches_committed": len(_batches_in_checkpoint(checkpoint, "commits")),
        "batch_runs": len(all_batches),
        "kills_before_query_started": sum(not r["query_started"] for r in runs),
        "models_added_before_run": added_at,
        "kills_during_backfill": sum(r["killed_during_backfill"] for r in runs),
        "backfill_batches_run": sum(len(r["backfill_batches"]) for r in runs)
        + len(final["backfill"]),
        "kills_with_uncommitted_batch": sum(r["uncommitted_batch_at_kill"] for r in runs),
        "replays_with_skipped_sinks": sum(len(r["replayed_with_skips"]) for r in runs)
        + sum(1 for b in final["batches"] if b["skipped"]),
        "sinks_skipped_total": sum(r["sinks_skipped"] for r in runs)
        + sum(len(b["skipped"]) for b in final["batches"]),
        "runs_that_exited_by_themselves": [r for r in runs if r["exited_by_itself"] is not None],
        "final_run_exit_code": final_code, "final_run_batches": len(final["batches"]),
        "tables": result, "runs": runs, "work_dir": str(work),
    }
    print(json.dumps({k: v for k, v in record.items() if k != "runs"}, indent=2))
    # One record per day and commit, one entry per engine and storage (``rs``, ``spark/s3``).
    path = args.json or result_path(bench_name(__file__))
    earlier = json.loads(path.read_text()) if path.exists() else {}
    loops = earlier.get("loops", {})
    loops[args.engine + ("/s3" if bucket else "")] = {**record, "git": git_state()}
    write_result(__file__, {"loops": loops}, args.json)
    if not args.keep and ok:
        shutil.rmtree(work, ignore_errors=True)
    print("OK: every table exactly once" if ok else f"FAILED: see {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
