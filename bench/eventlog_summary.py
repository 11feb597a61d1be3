"""One line per Spark job from a Spark event log: when it started, how long it ran, its tasks'
run, CPU and GC seconds, and its description (the runner names its jobs
``runner: <model> batch <id>``). Shows where a micro-batch's wall time goes between jobs.

Record event logs with the stream bench (same settings for every variant)::

    .venv/bin/python -m bench.stream_bench --rounds 1 --variants hand,runner \\
        --conf spark.eventLog.enabled=true --conf spark.eventLog.dir=/tmp/ev \\
        --conf spark.eventLog.compress=false
    .venv/bin/python -m bench.eventlog_summary /tmp/ev/*

Each argument is an event-log directory (``eventlog_v2_*``) or file (uncompressed).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import job_description, read_events


def summarize(path: Path) -> str:
    """The job table of one application's event log."""
    jobs: dict[int, dict[str, Any]] = {}
    stage_tasks: dict[int, int] = {}
    tasks: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    app = ""
    for e in read_events(path):
        kind = e["Event"]
        if kind == "SparkListenerApplicationStart":
            app = e.get("App Name", "")
        elif kind == "SparkListenerJobStart":
            jobs[e["Job ID"]] = {"start": e["Submission Time"], "desc": job_description(e),
                                 "stages": [s["Stage ID"] for s in e["Stage Infos"]]}
        elif kind == "SparkListenerJobEnd":
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            stage_tasks[info["Stage ID"]] = info["Number of Tasks"]
        elif kind == "SparkListenerTaskEnd":
            m = e.get("Task Metrics") or {}
            tasks[e["Stage ID"]].append((m.get("Executor Run Time", 0) / 1000,
                                         m.get("Executor CPU Time", 0) / 1e9,
                                         m.get("JVM GC Time", 0) / 1000))
    if not jobs:
        return f"{path}: no jobs"
    t0 = min(j["start"] for j in jobs.values())
    lines = [f"### {app} ({path.name})", "",
             "| job | start s | wall s | gap before s | tasks | task run s | task CPU s | "
             "GC s | description |", "|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    prev_end = None
    totals = defaultdict(float)
    for jid in sorted(jobs):
        j = jobs[jid]
        stages = [s for s in j["stages"] if s in stage_tasks]
        run = sum(t[0] for s in stages for t in tasks[s])
        cpu = sum(t[1] for s in stages for t in tasks[s])
        gc = sum(t[2] for s in stages for t in tasks[s])
        wall = (j.get("end", j["start"]) - j["start"]) / 1000
        gap = "" if prev_end is None else f"{max(0.0, (j['start'] - prev_end) / 1000):.2f}"
        prev_end = max(prev_end or 0, j.get("end", j["start"]))
        lines.append(f"| {jid} | {(j['start'] - t0) / 1000:.2f} | {wall:.2f} | {gap} | "
                     f"{[stage_tasks[s] for s in stages]} | {run:.2f} | {cpu:.2f} | {gc:.2f} | "
                     f"{j['desc'][:60]} |")
        for key, value in (("jobs", 1), ("run", run), ("cpu", cpu), ("gc", gc)):
            totals[key] += value
    span = (prev_end - t0) / 1000 if prev_end else 0.0
    lines.append("")
    lines.append(f"{int(totals['jobs'])} jobs over {span:.1f} s; tasks ran {totals['run']:.1f} s "
                 f"({totals['cpu']:.1f} s CPU, {totals['gc']:.1f} s GC)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for arg in argv:
        print(summarize(Path(arg)))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
