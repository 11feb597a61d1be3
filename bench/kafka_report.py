"""The measurements and Markdown report of ``bench.kafka_bench``: per-batch breakdowns from
Spark's event log (trigger phases, the runner's labelled jobs, the driver time between them),
percentiles, and the backlog and fixed-rate tables."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bench.common import event_logs, job_description, median, read_events

#: Spark's trigger phases (``StreamingQueryProgress.durationMs``), in the order they run.
PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (nearest rank; NaN when empty)."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def quantiles(xs: list[float]) -> dict[str, float]:
    """p50, p95, p99, max and count of ``xs`` (NaN when empty)."""
    return {"p50": pct(xs, 0.5), "p95": pct(xs, 0.95), "p99": pct(xs, 0.99),
            "max": max(xs) if xs else float("nan"), "n": len(xs)}


def report_backlog(res: dict[str, Any]) -> str:
    n = res["events"]
    out = [f"\n### Backlog: {n:,} events, {res['partitions']} partitions, "
           f"{res['max_offsets_per_trigger']:,} per batch, {res['rounds']} round(s), order "
           "rotated each round\n",
           "| source / engine | wall s (median) | events/s (wall) | query s (median) | "
           "events/s (query) | per-batch s (median run) | rows ok |",
           "|---|---:|---:|---:|---:|---|---|"]
    for variant in res["variants"]:
        runs = [r for r in res["runs"] if r["variant"] == variant]
        if not runs:
            continue
        wall = median([r["wall_s"] for r in runs])
        query = median([r["query_s"] for r in runs])
        mid = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
        out.append(f"| {variant} | {wall:.1f} | {n / wall:,.0f} | {query:.1f} | "
                   f"{n / query:,.0f} | {' '.join(f'{s:.1f}' for s in mid['batch_s'])} | "
                   f"{'yes' if all(r['counts_ok'] for r in runs) else 'NO'} |")
    return "\n".join(out)


_BATCH_JOB = re.compile(r"runner: (?P<what>\S+) batch (?P<id>\d+)")


def batch_breakdown(eventlog: Path, batch_ids: set[int]) -> dict[str, Any]:
    """Per timed batch, from Spark's event log: the trigger's phases (its progress event's
    ``durationMs``) and the runner's labelled jobs (wall seconds, tasks, task CPU seconds).

    Returns ``{"batches": [{"batch_id", "durationMs", "jobs": [...]}], "phases": {phase:
    median ms}, "jobs": {label: median wall s per batch}, ...}`` (medians over the batches).
    """
    events = [e for d in event_logs(eventlog) for e in read_events(d)]
    progress: dict[int, dict[str, int]] = {}
    jobs: dict[int, dict[str, Any]] = {}
    job_stages: dict[int, list[int]] = {}
    stage_cpu: dict[int, float] = {}
    stage_tasks: dict[int, int] = {}
    for e in events:
        kind = e["Event"]
        if kind.endswith("StreamingQueryListener$QueryProgressEvent"):
            p = e["progress"]
            if p["batchId"] in batch_ids:
                progress[p["batchId"]] = p.get("durationMs", {})
        elif kind == "SparkListenerJobStart":
            desc = job_description(e)
            m = _BATCH_JOB.search(desc)
            if m and int(m.group("id")) in batch_ids:
                label = m.group("what")  # parse, or the model (or dead-letter table) written
                if desc.startswith("Delta: "):  # delta-spark's own jobs for that write
                    label = f"Delta: {label}"
                jobs[e["Job ID"]] = {"batch_id": int(m.group("id")), "label": label,
                                     "start": e["Submission Time"]}
                job_stages[e["Job ID"]] = [s["Stage ID"] for s in e["Stage Infos"]]
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif kind == "SparkListenerTaskEnd":
            m = e.get("Task Metrics") or {}
            stage_cpu[e["Stage ID"]] = stage_cpu.get(e["Stage ID"], 0.0) + \
                m.get("Executor CPU Time", 0) / 1e9
            stage_tasks[e["Stage ID"]] = stage_tasks.get(e["Stage ID"], 0) + 1
    per_batch: list[dict[str, Any]] = []
    for bid in sorted(batch_ids):
        mine = [(jid, j) for jid, j in jobs.items() if j["batch_id"] == bid]
        labels: dict[str, dict[str, float]] = {}
        for jid, j in mine:
            acc = labels.setdefault(j["label"], {"jobs": 0, "wall_s": 0.0, "tasks": 0,
                                                 "task_cpu_s": 0.0})
            acc["jobs"] += 1
            acc["wall_s"] += (j.get("end", j["start"]) - j["start"]) / 1000
            acc["tasks"] += sum(stage_tasks.get(s, 0) for s in job_stages[jid])
            acc["task_cpu_s"] += sum(stage_cpu.get(s, 0.0) for s in job_stages[jid])
        spans = sorted(((j["start"], j.get("end", j["start"])) for _, j in mine))
        busy, reach = 0.0, None  # the union of the jobs' intervals (sink jobs overlap)
        for start, end in spans:
            if reach is None or start > reach:
                busy += end - start
                reach = end
            elif end > reach:
                busy += end - reach
                reach = end
        add = progress.get(bid, {}).get("addBatch")
        per_batch.append({"batch_id": bid, "durationMs": progress.get(bid, {}), "jobs": labels,
                          "jobs_busy_s": busy / 1000,
                          "outside_jobs_s": None if add is None else add / 1000 - busy / 1000})
    phases = {ph: median([float(b["durationMs"][ph]) for b in per_batch
                           if ph in b["durationMs"]]) for ph in (*PHASES, "triggerExecution")}
    all_labels = sorted({label for b in per_batch for label in b["jobs"]})
    job_medians = {label: {k: median([float(b["jobs"].get(label, {}).get(k, 0.0))
                                       for b in per_batch])
                           for k in ("jobs", "wall_s", "tasks", "task_cpu_s")}
                   for label in all_labels}
    return {"batches": per_batch, "phases_ms": phases, "jobs": job_medians,
            "jobs_busy_s": median([b["jobs_busy_s"] for b in per_batch]),
            "outside_jobs_s": median([b["outside_jobs_s"] for b in per_batch
                                       if b["outside_jobs_s"] is not None]),
            "progress_events": len(progress)}


def report_rate(res: dict[str, Any]) -> str:
    s, rows, gaps, lag = res["batch_s"], res["batch_rows"], res["interval_s"], res["lag_s"]
    out = [
        f"\n### Fixed input rate, {res['variant']}, round {res.get('round', 0)}: "
        f"{res['rate']:,.0f} events/s for "
        f"{res['duration_s']:g} s (achieved {res['achieved_rate']:,.0f}/s), trigger "
        f"'{res['trigger']}', {res['partitions']} partitions\n",
        "| batches | rows/batch (median, max) | per-batch s p50 | p95 | max | "
        "batch interval s (median) | lag s p50 | p95 | p99 | max |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {res['batches']} | {median(rows):,.0f}, {max(rows, default=0):,} | "
        f"{pct(s, 0.5):.2f} | {pct(s, 0.95):.2f} | {max(s, default=float('nan')):.2f} | "
        f"{median(gaps):.2f} | {lag['p50']:.2f} | "
        f"{lag['p95']:.2f} | {lag['p99']:.2f} | {lag['max']:.2f} |",
        "\nlag = the event's batch reported done (all tables committed) minus the event's "
        f"Kafka timestamp, over {lag['n']:,} events (warm-up excluded); rows ok: "
        f"{'yes' if res['counts_ok'] else 'NO'}"]
    bd = res.get("breakdown")
    if bd and bd["batches"]:
        ph = bd["phases_ms"]
        out += ["\nWhere a timed batch's time goes (Spark's event log; medians over "
                f"{len(bd['batches'])} batches, {bd['progress_events']} with a progress "
                "event). Trigger phases, ms (addBatch = the runner's foreachBatch):\n",
                "| " + " | ".join((*PHASES, "triggerExecution")) + " |",
                "|" + "---:|" * (len(PHASES) + 1),
                "| " + " | ".join(f"{ph[p]:.0f}" for p in (*PHASES, "triggerExecution")) + " |",
                "\nSpark jobs inside the batch, by the runner's job labels (per batch):\n",
                "| jobs of | jobs | wall s | tasks | task CPU s |", "|---|---:|---:|---:|---:|"]
        out += [f"| {label} | {j['jobs']:.0f} | {j['wall_s']:.2f} | {j['tasks']:.0f} | "
                f"{j['task_cpu_s']:.2f} |" for label, j in bd["jobs"].items()]
        out.append(f"\nPer batch, some job running: {bd['jobs_busy_s']:.2f} s; in addBatch with "
                   f"no job running (driver: Python, py4j, delta-rs commits, Delta log "
                   f"reads): {bd['outside_jobs_s']:.2f} s (medians)")
    return "\n".join(out)


def report_rate_summary(runs: list[dict[str, Any]]) -> str:
    """One line per rate run, for comparing readers and engines side by side."""
    out = ["\n### Fixed input rate: every run\n",
           "| reader / engine | rate/s | round | batches | per-batch s p50 | addBatch s p50 | "
           "no job running s p50 | lag s p50 | p95 | p99 | rows ok |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        bd = r.get("breakdown") or {}
        add = (bd.get("phases_ms") or {}).get("addBatch", float("nan")) / 1000
        out.append(f"| {r['variant']} | {r['rate']:,.0f} | {r.get('round', 0)} | {r['batches']} | "
                   f"{pct(r['batch_s'], 0.5):.2f} | {add:.2f} | "
                   f"{bd.get('outside_jobs_s', float('nan')):.2f} | {r['lag_s']['p50']:.2f} | "
                   f"{r['lag_s']['p95']:.2f} | {r['lag_s']['p99']:.2f} | "
                   f"{'yes' if r['counts_ok'] else 'NO'} |")
    return "\n".join(out)
