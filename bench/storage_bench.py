"""The same stream with every location on local disk and with every location in S3, on both
engines, in one run: wall and CPU per contender, the S3 / local ratio per engine, and the
object-store requests a batch makes.

    .venv/bin/python -m bench.storage_bench                      # 200,000 events, 10 files, 2 rounds
    .venv/bin/python -m bench.storage_bench --events 1000000 --files 40 --max-files 10 --rounds 3
    .venv/bin/python -m bench.storage_bench --contenders local-rs,s3-rs --rounds 1   # quick

Contenders: ``local-rs``, ``s3-rs``, ``local-spark``, ``s3-spark`` (``delta.engine`` rs or
spark). Each runs ``runner stream --available-now --progress json`` AS A WHOLE PROCESS on a
copy of the example project with a fresh checkpoint and warehouse: ``local-*`` reads the
generated files from local disk and writes checkpoint and warehouse there; ``s3-*`` reads the
same files from a bucket and writes checkpoint and warehouse to it (``source.path``,
``checkpoint``, ``warehouse`` all ``s3://bench/...``). The bucket is moto's S3 server, started
here on a loopback port (:mod:`bench.s3`); every runner process gets its ``AWS_*`` variables.
Rounds run every contender, the order rotated each round; ratios are taken per round.

moto is an in-memory server on loopback: its requests cost a loopback HTTP round trip and
moto's Python, not a data centre's latency. The ratio therefore measures what the runner's
request pattern costs on top of local disk, with a fast, close server; on real S3 each request
costs more (tens of milliseconds), so the request counts are the figure to carry over.

Requests are counted from moto's log (one line per HTTP request), by kind (GET of an object,
LIST, HEAD, PUT, POST, DELETE), per run and per batch: the requests logged between the
progress records of two consecutive batches (what a steady-state batch costs, planning of the
next batch included), and before the first batch's record (start-up and the first batch).
moto's own CPU seconds during the run are reported beside the runner's (they are not in the
runner's process tree). Every table of every run is counted against the generated input.

Result: ``bench/results/storage_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    bench_parser,
    demo_data,
    example_config,
    example_project,
    git_state,
    is_batch_record,
    machine,
    progress_record,
    run_env,
    snapshot_runner,
    tree_digest,
    write_result,
)
from bench.processes import TreeSampler, cpu_seconds
from bench.s3 import KINDS, MotoBucket

CONTENDERS = ("local-rs", "s3-rs", "local-spark", "s3-spark")
TABLES = ("request_logs", "error_events", "performance_metrics")


def project_for(dest: Path, contender: str, *, data: str, root: str | None, max_files: int,
                master: str) -> Path:
    """The example project reading ``data``; checkpoint and warehouse under ``root`` (a
    bucket prefix) or, when None, in the project folder."""
    config = example_config()
    where: dict[str, Any] = {"checkpoint": f"{root}/cp", "warehouse": f"{root}/wh"} \
        if root else {}
    return example_project(
        dest, source={**config["source"], "path": data, "max_files_per_trigger": max_files},
        delta={"engine": contender.rsplit("-", 1)[1]},
        spark={**(config.get("spark") or {}), "master": master}, **where)


def table_counts(warehouse: str) -> dict[str, int]:
    """Rows of each example table (-1: none) under ``warehouse`` (a folder or a URI)."""
    from deltalake import DeltaTable

    from runner.storage.ops import delta_options

    counts = {}
    for name in TABLES:
        uri = f"{warehouse}/{name}"
        options = delta_options(uri)
        if not DeltaTable.is_deltatable(uri, storage_options=options):
            counts[name] = -1
            continue
        counts[name] = DeltaTable(uri, storage_options=options).to_pyarrow_dataset().count_rows()
    return counts


def run_one(contender: str, rnd: int, *, workdir: Path, bucket: MotoBucket, data: Path,
            env: dict[str, str], args: Any) -> dict[str, Any]:
    """One whole ``runner stream --available-now`` process; its wall, CPU, batches, the
    requests moto logged meanwhile, and the table counts."""
    out = workdir / "runs" / f"{contender}-r{rnd}"
    s3 = contender.startswith("s3-")
    root = f"{bucket.uri}/{contender}-r{rnd}" if s3 else None
    project = project_for(out / "project", contender,
                          data=f"{bucket.uri}/incoming" if s3 else str(data), root=root,
                          max_files=args.max_files, master=args.master)
    cmd = [sys.executable, "-m", "runner", "stream", "--available-now", "--progress", "json",
           "--project-dir", str(project)]
    moto_pid = bucket.pid
    moto_cpu0, load0 = cpu_seconds(moto_pid), os.getloadavg()[0]
    mark = bucket.log.mark()
    marks: list[int] = []  # the log's size when each batch's record arrived
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(out), start_new_session=True)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    stderr: list[str] = []
    err = threading.Thread(target=lambda: stderr.extend(proc.stderr or ()), daemon=True)
    err.start()

    def read_stdout() -> None:
        for line in proc.stdout or ():
            doc = progress_record(line)
            if doc is not None and is_batch_record(doc):
                marks.append(bucket.log.mark())
    out_thread = threading.Thread(target=read_stdout, daemon=True)
    out_thread.start()
    try:
        rc = proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # our own child's process group
        rc = proc.wait()
    wall = time.perf_counter() - started
    sampler.stop()
    out_thread.join(5)
    err.join(5)
    time.sleep(0.2)  # the last request's log line
    end = bucket.log.mark()
    run: dict[str, Any] = {
        "contender": contender, "round": rnd, "rc": rc, "wall_s": round(wall, 2),
        "cpu_s": round(sampler.summary()["cpu_s"], 2), "batches": len(marks),
        "moto_cpu_s": round(cpu_seconds(moto_pid) - moto_cpu0, 2),
        "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "stderr_tail": "".join(stderr)[-1500:] if rc else ""}
    if s3:
        bounds = [mark, *marks, end]
        segments = [bucket.log.between(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
        run["requests"] = bucket.log.between(mark, end)
        run["requests_startup_and_first_batch"] = segments[0]
        run["requests_per_later_batch"] = segments[1:-1]
        run["requests_after_last_batch"] = segments[-1]
    run["counts"] = table_counts(f"{root}/wh" if root else str(project / "_warehouse"))
    if root:
        from runner.storage.objects import object_path
        from runner.storage.ops import rmtree

        rmtree(object_path(root))  # moto holds everything in memory
    return run


def summarise(runs: list[dict[str, Any]], expected: dict[str, int],
              contenders: list[str]) -> dict[str, Any]:
    """Per contender: median wall and CPU; per engine: the S3 / local ratios per round; per
    S3 contender: requests per run and per steady-state batch (medians) by kind."""
    ok = [r for r in runs if r["rc"] == 0 and r["counts"] == expected]
    out: dict[str, Any] = {"contenders": {}, "ratios": {}, "requests": {}}
    for c in contenders:
        mine = [r for r in ok if r["contender"] == c]
        out["contenders"][c] = {
            "runs": len(mine), "wall_s": statistics.median([r["wall_s"] for r in mine]) if mine
            else None, "cpu_s": statistics.median([r["cpu_s"] for r in mine]) if mine else None,
            "batches": mine[0]["batches"] if mine else None}
    for engine in ("rs", "spark"):
        pairs = [(a, b) for a in ok for b in ok if a["contender"] == f"s3-{engine}"
                 and b["contender"] == f"local-{engine}" and a["round"] == b["round"]]
        if pairs:
            out["ratios"][engine] = {
                "wall": [round(a["wall_s"] / b["wall_s"], 3) for a, b in pairs],
                "cpu": [round(a["cpu_s"] / b["cpu_s"], 3) for a, b in pairs]}
    for c in contenders:
        mine = [r for r in ok if r["contender"] == c and "requests" in r]
        if not mine:
            continue
        later = [seg for r in mine for seg in r["requests_per_later_batch"]]
        out["requests"][c] = {
            "per_run": {k: statistics.median([r["requests"][k] for r in mine])
                        for k in (*KINDS, "total")},
            "startup_and_first_batch": {k: statistics.median(
                [r["requests_startup_and_first_batch"][k] for r in mine])
                for k in (*KINDS, "total")},
            "per_later_batch": {k: statistics.median([s[k] for s in later])
                                for k in (*KINDS, "total")} if later else None,
            "after_last_batch": {k: statistics.median(
                [r["requests_after_last_batch"][k] for r in mine]) for k in (*KINDS, "total")},
            "moto_cpu_s": statistics.median([r["moto_cpu_s"] for r in mine])}
    out["all_exact"] = len(ok) == len(runs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=200_000, files=10, max_files=2, master=True, rounds=2,
                      timeout=900, workdir=True, json=True)
    ap.add_argument("--contenders", default=",".join(CONTENDERS),
                    help=f"comma list of {', '.join(CONTENDERS)}")
    args = ap.parse_args(argv)
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if unknown := [c for c in contenders if c not in CONTENDERS]:
        ap.error(f"unknown contender(s) {unknown}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="runner-storage-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    meta = demo_data(workdir / "data", args.events, args.files)
    gs = git_state()
    src = snapshot_runner(workdir)  # the runner as it was at start, whatever others edit
    gs["runner_snapshot_digest"] = tree_digest(src)
    jars = src / ".jars"  # the runner finds .jars/spark and .jars/cloud beside its package
    if not jars.exists():
        jars.symlink_to(Path(__file__).resolve().parents[1] / ".jars")
    runs: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        with MotoBucket(workdir / "moto", "bench") as bucket:
            for f in sorted((workdir / "data").glob("*.json")):
                bucket.upload(f, "incoming")
            env = run_env(src)  # after MotoBucket: the AWS_* variables are in os.environ
            for rnd in range(args.rounds):
                k = rnd % len(contenders)
                for c in contenders[k:] + contenders[:k]:
                    print(f"round {rnd}: {c} ...", end=" ", flush=True)
                    run = run_one(c, rnd, workdir=workdir, bucket=bucket,
                                  data=workdir / "data", env=env, args=args)
                    runs.append(run)
                    status = "ok" if run["rc"] == 0 else f"FAILED rc={run['rc']}: " \
                        f"{run['stderr_tail'][-600:]}"
                    if run["counts"] != meta["expected"]:
                        status += f" WRONG COUNTS {run['counts']} != {meta['expected']}"
                    reqs = run.get("requests", {}).get("total")
                    print(f"{run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, "
                          f"{run['batches']} batches" + (f", {reqs} requests" if reqs else "")
                          + f", {status} (load {run['load'][0]} -> {run['load'][1]})",
                          flush=True)
                    shutil.rmtree(workdir / "runs" / f"{c}-r{rnd}", ignore_errors=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    summary = summarise(runs, meta["expected"], contenders)
    for engine, r in summary["ratios"].items():
        print(f"s3 / local, {engine}: wall {r['wall']}, CPU {r['cpu']}")
    for c, r in summary["requests"].items():
        print(f"{c}: requests per run {r['per_run']}; per later batch {r['per_later_batch']}")
    write_result(__file__, {"args": vars(args), "data": meta, "machine": machine(), "git": gs,
                            "seconds": round(time.perf_counter() - started, 1),
                            "summary": summary, "runs": runs}, args.json)
    return 0 if summary["all_exact"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
