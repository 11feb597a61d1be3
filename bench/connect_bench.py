"""The runner over Spark Connect against the classic session, in one run (docs/CONNECT.md).

The example project over ``--events`` generated events (``--files`` files, ``--max-files`` a
trigger), ``runner stream --available-now`` as a process, one run per variant, alternating
over ``--rounds`` rounds:

classic
    the runner's own local session (``local[2]``): the driver JVM is the runner's child.
connect
    the runner as a Spark Connect client (``SPARK_REMOTE``) of a standalone server on loopback
    (``tests/support/connect_server.py``: ``local[2]``, the same jars), started once before
    the rounds, its start not counted.

Wall seconds of each run, and CPU seconds: the runner's process tree (its JVM included,
sampled every 0.2 s) for ``classic``; the client's tree plus the server's (its JVM and its
Python workers, measured before and after the run) for ``connect``. The classic run's wall
time includes its JVM's start; the server's start is not counted. Every run's tables are counted against the
generated events. The machine is shared: compare the variants of one run.

Usage::

    .venv/bin/python -m bench.connect_bench                       # 1,000,000 events
    .venv/bin/python -m bench.connect_bench --events 100000 --rounds 1
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from bench.common import (
    bench_parser,
    bench_project,
    command_line,
    count_tables,
    demo_data,
    files_source,
    git_state,
    machine,
    run_env,
    write_result,
)

VARIANTS = ("classic", "connect")


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants, each with its children that ended
    and were waited for (the kernel adds those to their parent): over Connect the server's
    Python workers come and go during a run, and a worker that ended between the two samples
    would otherwise count only in the first (its CPU subtracted, not added)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                total += (times.user + times.system + times.children_user
                          + times.children_system)
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        pass
    return total


def _run(project: Path, env: dict[str, str], timeout: float) -> tuple[float, float, str]:
    """Wall seconds and CPU seconds of one ``runner stream`` process tree (its JVM, if any),
    sampled every 0.2 s: the last sample of each process counts."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                             str(project), "--available-now"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: dict[int, float] = {}
    while proc.poll() is None and time.perf_counter() - started < timeout:
        try:
            root = psutil.Process(proc.pid)
            for p in [root, *root.children(recursive=True)]:
                try:
                    times = p.cpu_times()
                    seen[p.pid] = times.user + times.system
                except psutil.NoSuchProcess:
                    continue
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.2)
    out, _ = proc.communicate(timeout=60)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"runner stream exited {proc.returncode}: {out[-3000:]}")
    return wall, sum(seen.values()), out


def docs_rows(d: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The docs' table (``bench.report``): the command, then (figure, value) rows."""
    a, data, s, r = d["args"], d["data"], d["summary"], d["ratios"]
    where = f"{data['events']:,} events, `{a['engine']}` engine"
    rows: list[tuple[str, str]] = [
        (f"{where}: over Spark Connect / the classic session (median of {a['rounds']})",
         f"{r['wall']:.2f}x wall, {r['cpu']:.2f}x CPU"),
        (f"{where}: classic; Connect (client + server CPU)",
         f"{s['classic']['wall']:.1f} s wall, {s['classic']['cpu']:.1f} s CPU; "
         f"{s['connect']['wall']:.1f} s wall, {s['connect']['client_cpu']:.1f} + "
         f"{s['connect']['server_cpu']:.1f} s CPU"),
        (f"{where}: tables exact in every run", "yes" if d["all_exact"] else "**no**")]
    return command_line("connect_bench",
                        ("events", a["events"] if a["events"] != 1_000_000 else None),
                        ("files", a["files"] if a["files"] != 20 else None),
                        ("rounds", a["rounds"] if a["rounds"] != 1 else None),
                        ("engine", a["engine"] if a["engine"] != "rs" else None)), rows


def main() -> int:
    ap = bench_parser(__doc__, events=1_000_000, files=20, max_files=True, rounds=1,
                      timeout=3600.0, workdir=True, json=True)
    ap.add_argument("--engine", default="rs", choices=("rs", "spark"))
    args = ap.parse_args()
    from tests.support.connect_server import ConnectServer

    work = args.workdir or Path(tempfile.mkdtemp(prefix="connect-bench-"))
    data = demo_data(work / "incoming", args.events, args.files)
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    with ConnectServer() as server:
        assert server.pid is not None
        print(f"Connect server listening after {server.start_seconds:.1f} s", flush=True)
        for round_no in range(args.rounds):
            order = VARIANTS if round_no % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                project = work / f"{variant}-{round_no}"
                shutil.rmtree(project, ignore_errors=True)
                bench_project(project, source=files_source(work / "incoming", args.max_files),
                              engine=args.engine)
                env = run_env()
                env.pop("SPARK_REMOTE", None)
                server_before = 0.0
                if variant == "connect":
                    env["SPARK_REMOTE"] = server.url
                    server_before = _tree_cpu(server.pid)
                wall, cpu, _ = _run(project, env, args.timeout)
                server_cpu = _tree_cpu(server.pid) - server_before if variant == "connect" \
                    else 0.0
                rows = count_tables(project / "_warehouse")
                ok = all(rows.get(t) == n for t, n in data["expected"].items())
                runs[variant].append({"wall": wall, "client_cpu": cpu, "server_cpu": server_cpu,
                                      "cpu": cpu + server_cpu, "rows": rows, "exact": ok})
                print(f"round {round_no} {variant}: {wall:.1f} s wall, "
                      f"{cpu + server_cpu:.1f} s CPU, tables exact: {ok}", flush=True)
    summary = {v: {k: statistics.median(r[k] for r in rs)
                   for k in ("wall", "client_cpu", "server_cpu", "cpu")}
               for v, rs in runs.items()}
    ratios = {k: summary["connect"][k] / summary["classic"][k] for k in ("wall", "cpu")}
    write_result(__file__, {"args": {k: str(v) if isinstance(v, Path) else v
                                     for k, v in vars(args).items()},
                            "data": {k: data[k] for k in ("events", "files", "bytes")},
                            "git": git_state(), "machine": machine(), "runs": runs,
                            "summary": summary, "ratios": ratios,
                            "all_exact": all(r["exact"] for rs in runs.values() for r in rs)},
                 args.json)
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    raise SystemExit(main())
