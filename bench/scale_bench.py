"""Scale evidence for ``runner stream``: models, batch sizes, executors.

One command runs four parts, each run of the runner AS A WHOLE PROCESS (interpreter, JVM and
SparkSession start included) through ``runner.load_project``/``compile_project``/``run_stream``
in a worker subprocess, on example-shaped events from ``runner.demo.write_demo_files`` (no poison
lines, so every variant writes the same rows):

models
    The runner with 1, 3, 10 and 30 projection models on the same events (``--events``,
    default 1M in 40 files, 10 files per trigger = 4 batches), interleaved over ``--rounds``
    rounds, order rotated. events/s of the whole process and of the batches alone; the plot
    ``docs/scale_models.png``.
memory
    The driver's peak memory (``VmHWM`` from ``/proc``: the Python process and its JVM child,
    separately) with the three example models at batch sizes of 100k, 1M and 5M events (one
    batch each): the runner as configured by default (on a local master, appends of batches
    up to 500,000 rows through Arrow, bigger ones Spark-native), with every append
    Spark-native (``delta.arrow_max_rows: 0``), and, for contrast, with every append forced
    through Arrow (``toArrow`` + ``write_deltalake``, the hand-written pattern's way; ``--arrow-sizes``,
    default 100k and 1M).
cluster
    The runner on ``local-cluster[2,1,1024]`` (two executor JVMs) with ``spark.eventLog``
    on; from the event log, the tasks that wrote output records and the executor that ran
    each: appends are written by executors, not the driver.
wide
    Parse only what is used: a 60-field event, two models reading 5 fields, the runner with
    ``parse_only_used_fields: true`` (schema pruned to the used fields) against the default
    (every declared field parsed and type-checked).

``--profile`` adds one in-process profile run (3 example models) with timers around the
Spark-native append's steps, the streaming query's own progress durations and per-job
durations from the event log: where a batch's time goes.

Usage::

    .venv/bin/python -m bench.scale_bench                          # everything
    .venv/bin/python -m bench.scale_bench --parts models --rounds 1 --events 200000
    .venv/bin/python -m bench.scale_bench --parts memory --sizes 100000,1000000

Raw results go to ``bench/results/scale_bench-<date>-<sha>.json``; a Markdown summary is printed.
Needs matplotlib for the plot (skipped with a note when missing).
"""

from __future__ import annotations

import argparse
import json
import os
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
    count_tables,
    demo_data,
    event_log_conf,
    event_logs,
    files_source,
    git,
    job_description,
    machine,
    read_events,
    run_env,
    write_result,
)
from bench.scale_worker import PREFIX

DOCS = REPO / "docs"
PARTS = ("models", "memory", "cluster", "wide")

PROJECTION = """\
-- projection model {i} of {n} (bench.scale_bench)
SELECT eventId, `timestamp`, user.userId AS userId, user.country AS country,
       request.endpoint AS endpoint, request.status_code AS status_code,
       request.latency_ms + {i} AS latency_ms
FROM parsed_events
"""


# -- the parent: data, projects, runs --------------------------------------------------------


def run(label: str, project: Path, *, timeout: float, **flags: Any) -> dict[str, Any]:
    """One worker process; its wall time, its report, and its tables' row counts."""
    cfg_path = project / "bench-worker.json"
    cfg_path.write_text(json.dumps({"project": str(project), **flags}))
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.scale_worker", str(cfg_path)], capture_output=True, text=True, timeout=timeout,
                              env=run_env(), cwd=str(project))
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = -9, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else "", "timeout"
    wall = time.perf_counter() - t0
    report = next((json.loads(line[len(PREFIX):]) for line in out.splitlines()
                   if line.startswith(PREFIX)), None)
    result = {"label": label, "rc": rc, "wall_seconds": wall, "load_before": load,
              "report": report, "tables": count_tables(project / "_warehouse")}
    if rc != 0 or report is None:
        result["stderr_tail"] = err[-3000:]
    batch_s = sum(b["seconds"] for b in report["batches"]) if report else float("nan")
    print(f"  {label}: rc {rc}, wall {wall:.1f} s, batches {batch_s:.1f} s"
          + (f", py {report['py_vmhwm_mb']:.0f} MB, jvm {max(report['jvm_vmhwm_mb'] or [0]):.0f}"
             " MB" if report else ""), flush=True)
    return result


# -- parts ----------------------------------------------------------------------------------


def part_models(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    data = work / "data-models"
    demo_data(data, args.events, 40)
    counts = [int(n) for n in args.models.split(",")]
    runs: list[dict[str, Any]] = []
    for rnd in range(args.rounds):
        order = counts[rnd % len(counts):] + counts[:rnd % len(counts)]
        for n in order:
            models = {f"proj_{i:02d}": PROJECTION.format(i=i, n=n) for i in range(n)}
            project = bench_project(work / f"models-{n}", source=files_source(data, 10),
                                    master=args.master, models=False, extra_models=models)
            r = run(f"{n} models (round {rnd})", project, timeout=args.timeout)
            r.update(models=n, round=rnd)
            r["ok"] = r["rc"] == 0 and all(r["tables"].get(m) == args.events for m in models)
            runs.append(r)
    summary = {}
    for n in counts:
        ok = [r for r in runs if r["models"] == n and r["ok"]]
        if not ok:
            summary[n] = None
            continue
        wall = statistics.median(r["wall_seconds"] for r in ok)
        batches = statistics.median(sum(b["seconds"] for b in r["report"]["batches"])
                                    for r in ok)
        summary[n] = {"wall_seconds": wall, "batch_seconds": batches,
                      "events_per_s": args.events / wall,
                      "batch_events_per_s": args.events / batches, "runs": len(ok)}
    _plot(summary, args.events)
    return {"events": args.events, "runs": runs, "summary": summary}


def _plot(summary: dict[int, Any], events: int) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib missing: no plot)")
        return
    ns = [n for n, s in summary.items() if s]
    if not ns:
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    ax.plot(ns, [summary[n]["events_per_s"] / 1000 for n in ns], "o-",
            label="whole process (JVM start included)")
    ax.plot(ns, [summary[n]["batch_events_per_s"] / 1000 for n in ns], "s--",
            label="batches only")
    ax.set_xscale("log")
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_xlabel("projection models on the same events")
    ax.set_ylabel("thousand events / s")
    ax.set_ylim(bottom=0)
    ax.set_title(f"runner stream, {events / 1e6:g}M events, local[2], rs engine")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    DOCS.mkdir(exist_ok=True)
    fig.savefig(DOCS / "scale_models.png")
    print(f"  plot: {DOCS / 'scale_models.png'}")


def part_memory(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    sizes = [int(s) for s in args.sizes.split(",")]
    arrow_sizes = {int(s) for s in args.arrow_sizes.split(",") if s}
    runs = []
    for size in sizes:
        files = max(1, size // 25_000)
        data = work / f"data-{size}"
        demo_data(data, size, files)
        for mode in ("default", "spark-native", "arrow"):
            if mode == "arrow" and size not in arrow_sizes:
                continue
            project = bench_project(work / f"memory-{size}-{mode}", master=args.master,
                                    source=files_source(data, files),
                                    delta={"arrow_max_rows": 0} if mode == "spark-native" else None)
            r = run(f"{size:,} events, {mode}", project, timeout=args.timeout,
                    arrow_appends=mode == "arrow")
            r.update(size=size, mode=mode)
            r["ok"] = r["rc"] == 0 and r["tables"].get("request_logs") == size
            runs.append(r)
    return {"runs": runs}


def part_cluster(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    data = work / "data-models"
    demo_data(data, args.events, 40)
    events_dir = work / "eventlog"
    conf = event_log_conf(events_dir)
    project = bench_project(work / "cluster", source=files_source(data, 10),
                            master="local-cluster[2,1,1024]", conf=conf)
    r = run("local-cluster[2,1,1024]", project, timeout=args.timeout)
    r["ok"] = r["rc"] == 0 and r["tables"].get("request_logs") == args.events
    r["eventlog"] = _writers_by_executor(events_dir)
    return r


def _writers_by_executor(events_dir: Path) -> dict[str, Any]:
    """From the event log: per job description, the tasks that wrote records, by executor."""
    jobs: dict[int, str] = {}
    stage_job: dict[int, int] = {}
    out: dict[str, dict[str, dict[str, int]]] = {}
    durations: dict[str, float] = {}
    starts: dict[int, int] = {}
    for log in event_logs(events_dir):  # Spark 4 rolls them: eventlog_v2_<app>/events_<n>
        for e in read_events(log):
            kind = e.get("Event")
            if kind == "SparkListenerJobStart":
                jobs[e["Job ID"]] = job_description(e) or "(no description)"
                starts[e["Job ID"]] = e["Submission Time"]
                for sid in e.get("Stage IDs", []):
                    stage_job[sid] = e["Job ID"]
            elif kind == "SparkListenerJobEnd":
                job = e["Job ID"]
                desc = _model_of(jobs.get(job, "?"))
                durations[desc] = durations.get(desc, 0.0) + (
                    e["Completion Time"] - starts.get(job, e["Completion Time"])) / 1000
            elif kind == "SparkListenerTaskEnd":
                written = (((e.get("Task Metrics") or {}).get("Output Metrics") or {})
                           .get("Records Written", 0))
                if not written:
                    continue
                desc = _model_of(jobs.get(stage_job.get(e["Stage ID"], -1), "?"))
                executor = e["Task Info"]["Executor ID"]
                slot = out.setdefault(desc, {}).setdefault(executor, {"tasks": 0, "records": 0})
                slot["tasks"] += 1
                slot["records"] += written
    return {"writes": out, "job_seconds": durations}


def _model_of(description: str) -> str:
    """``runner: request_logs batch 3`` -> ``request_logs``."""
    if description.startswith("runner: "):
        return description[len("runner: "):].rsplit(" batch ", 1)[0]
    return description


WIDE_FIELDS = 60


def _wide_schema() -> str:
    kinds = ["STRING", "BIGINT", "DOUBLE", "TIMESTAMP", "BOOLEAN",
             "STRUCT<a: STRING, b: INT>"]
    cols = ["eventId STRING NOT NULL"]
    cols += [f"f{i:02d} {kinds[i % len(kinds)]}" for i in range(1, WIDE_FIELDS)]
    return ", ".join(cols)


def _wide_data(path: Path, events: int, files: int) -> Path:
    import random

    marker = path.with_suffix(".json")
    want = {"events": events, "files": files, "fields": WIDE_FIELDS}
    if marker.is_file() and json.loads(marker.read_text()) == want:
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    rng = random.Random(7)
    per = -(-events // files)
    n = 0
    for f in range(files):
        lines = []
        for _ in range(min(per, events - n)):
            e: dict[str, Any] = {"eventId": f"evt_{n:09d}"}
            for i in range(1, WIDE_FIELDS):
                k = i % 6
                e[f"f{i:02d}"] = (
                    f"value-{rng.randint(0, 99999)}" if k == 0 else rng.randint(0, 10**9)
                    if k == 1 else rng.random() * 1000 if k == 2
                    else f"2026-03-12T10:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
                    if k == 3 else rng.random() < 0.5 if k == 4
                    else {"a": f"x{rng.randint(0, 99)}", "b": rng.randint(0, 999)})
            lines.append(json.dumps(e, separators=(",", ":")))
            n += 1
        (path / f"wide-{f:04d}.json").write_text("\n".join(lines) + "\n")
    marker.write_text(json.dumps(want))
    return path


def part_wide(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    events = args.wide_events
    data = _wide_data(work / "data-wide", events, 20)
    models = {
        "wide_a": "SELECT eventId, f01, f02, f03 FROM parsed_events",
        "wide_b": "SELECT eventId, f03 AS t, f04 AS flag, f05.a AS a FROM parsed_events",
    }
    runs = []
    for rnd in range(args.rounds):
        for mode in (("pruned", "full") if rnd % 2 == 0 else ("full", "pruned")):
            project = bench_project(work / f"wide-{mode}", source=files_source(data, 20),
                                    master=args.master, models=False, extra_models=models,
                                    schema=_wide_schema(),
                                    parse_only_used_fields=mode == "pruned")
            r = run(f"wide, {mode} parse (round {rnd})", project, timeout=args.timeout)
            r.update(mode=mode, round=rnd)
            r["ok"] = r["rc"] == 0 and r["tables"].get("wide_a") == events
            runs.append(r)
    return {"events": events, "fields": WIDE_FIELDS, "used": 6, "runs": runs}


def part_profile(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    data = work / "data-models"
    demo_data(data, args.events, 40)
    events_dir = work / "eventlog-profile"
    conf = event_log_conf(events_dir)
    project = bench_project(work / "profile", source=files_source(data, 10),
                            master=args.master, conf=conf)
    r = run("profile (3 example models)", project, timeout=args.timeout, profile=True)
    r["eventlog"] = _writers_by_executor(events_dir)
    return r


# -- report ---------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> str:
    lines = [f"# scale_bench {results['meta']['started']}", ""]
    if "models" in results:
        m = results["models"]
        lines += [f"## models ({m['events']:,} events)", "",
                  "| models | wall s | events/s | batches s | batch events/s | x 1 model |",
                  "|---:|---:|---:|---:|---:|---:|"]
        base = m["summary"].get(1) or m["summary"].get("1")
        for n, s in m["summary"].items():
            if not s:
                lines.append(f"| {n} | failed | | | | |")
                continue
            ratio = s["wall_seconds"] / base["wall_seconds"] if base else float("nan")
            lines.append(f"| {n} | {s['wall_seconds']:.1f} | {s['events_per_s']:,.0f} | "
                         f"{s['batch_seconds']:.1f} | {s['batch_events_per_s']:,.0f} | "
                         f"{ratio:.2f} |")
        lines.append("")
    if "memory" in results:
        lines += ["## memory (3 example models, one batch)", "",
                  "| events | appends | wall s | Python VmHWM MB | JVM VmHWM MB | ok |",
                  "|---:|---|---:|---:|---:|---|"]
        for r in results["memory"]["runs"]:
            rep = r["report"] or {}
            jvm = max(rep.get("jvm_vmhwm_mb") or [0])
            lines.append(f"| {r['size']:,} | {r['mode']} | {r['wall_seconds']:.1f} | "
                         f"{rep.get('py_vmhwm_mb', float('nan')):.0f} | {jvm:.0f} | "
                         f"{'yes' if r['ok'] else 'NO (rc {})'.format(r['rc'])} |")
        lines.append("")
    if "cluster" in results:
        c = results["cluster"]
        lines += ["## local-cluster[2,1,1024]", "",
                  f"rc {c['rc']}, wall {c['wall_seconds']:.1f} s, tables {c['tables']}", "",
                  "| job (model) | executor | tasks writing | records written |",
                  "|---|---|---:|---:|"]
        for model, by_exec in sorted(c["eventlog"]["writes"].items()):
            for executor, v in sorted(by_exec.items()):
                lines.append(f"| {model} | {executor} | {v['tasks']} | {v['records']:,} |")
        lines.append("")
    if "wide" in results:
        w = results["wide"]
        lines += [f"## wide event ({w['fields']} fields, models read {w['used']}, "
                  f"{w['events']:,} events)", "",
                  "| parse | wall s (median) | batches s (median) |", "|---|---:|---:|"]
        for mode in ("full", "pruned"):
            ok = [r for r in w["runs"] if r["mode"] == mode and r["ok"]]
            if ok:
                wall = statistics.median(r["wall_seconds"] for r in ok)
                bs = statistics.median(sum(b["seconds"] for b in r["report"]["batches"])
                                       for r in ok)
                lines.append(f"| {mode} | {wall:.1f} | {bs:.1f} |")
        lines.append("")
    if "profile" in results:
        p = results["profile"]
        rep = p["report"] or {}
        lines += ["## profile (3 example models)", "", "```",
                  json.dumps({"batches": rep.get("batches"), "timers": rep.get("timers"),
                              "progress": rep.get("progress"),
                              "job_seconds": p["eventlog"]["job_seconds"]}, indent=1),
                  "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=1_000_000, rounds=2, master=True, workdir=True,
                      timeout=1800, json=True)
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--profile", action="store_true", help="add the profile run")
    ap.add_argument("--models", default="1,3,10,30")
    ap.add_argument("--sizes", default="100000,1000000,5000000")
    ap.add_argument("--arrow-sizes", default="100000,1000000")
    ap.add_argument("--wide-events", type=int, default=500_000)
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.gettempdir()) / f"scale_bench-{os.getuid()}"
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"meta": {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), **machine(), "argv": sys.argv[1:],
        "commit": git("rev-parse", "--short", "HEAD")}}
    parts = [p for p in args.parts.split(",") if p]
    fns = {"models": part_models, "memory": part_memory, "cluster": part_cluster,
           "wide": part_wide}
    for part in parts:
        print(f"== {part}", flush=True)
        results[part] = fns[part](args, work)
    if args.profile:
        print("== profile", flush=True)
        results["profile"] = part_profile(args, work)
    print()
    print(report(results))
    write_result(__file__, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
