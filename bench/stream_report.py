"""The Markdown report of ``bench.stream_bench``: per variant wall, events/s, ratios to the
baseline per round, CPU, peak memory by role, where the wall time goes, per-table write
seconds; and :class:`Run`, one variant's run, which the bench records and the report reads."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from bench.common import is_batch_record, median

#: The hand-written pattern on the same engine as a variant: the "vs own engine" column.
ENGINE_BASELINE = {"runner": "hand", "runner-spark": "hand-spark", "hand-rparse": "hand",
                   "hand-par": "hand", "runner-prof": "hand", "runner-arrow": "hand"}


@dataclass
class Run:
    variant: str
    round: int
    wall: float
    rc: int
    events: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    stderr_tail: str = ""
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after

    def to_json(self) -> dict[str, Any]:
        return {"variant": self.variant, "round": self.round, "wall_seconds": self.wall,
                "rc": self.rc, "events": [{"t": t, **d} for t, d in self.events],
                "memory": self.memory, "counts": self.counts, "columns": self.columns,
                "stderr_tail": self.stderr_tail, "loadavg_before_after": self.load}



def _session_at(run: Run) -> float | None:
    """Seconds from process start until the session was up (runner: its 'pipeline' line)."""
    for t, doc in run.events:
        if doc.get("event") == "session" or str(doc.get("event", "")).startswith("pipeline"):
            return t
    return None


def _batches(run: Run) -> list[dict[str, Any]]:
    return [doc.get("batch", doc) for _, doc in run.events
            if "batch" in doc or is_batch_record(doc)]


def _batch_seconds(run: Run) -> list[float]:
    return [float(b["seconds"]) for b in _batches(run) if "seconds" in b]


def report(runs: list[Run], meta: dict[str, Any], args: argparse.Namespace) -> str:
    variants = [v for v in dict.fromkeys(r.variant for r in runs)]
    ok_runs = [r for r in runs if r.rc == 0]
    by_v = {v: [r for r in ok_runs if r.variant == v] for v in variants}
    events = meta["events"]
    base = args.baseline
    base_wall = {r.round: r.wall for r in by_v.get(base, [])}
    base_cpu = {r.round: r.memory["cpu_s"] for r in by_v.get(base, [])}
    lines = []
    lines.append(f"\n## Stream benchmark: {events:,} events, {meta['files']} files "
                 f"({meta['bytes'] / 1e6:.0f} MB), {args.max_files} files per trigger, "
                 f"master {args.master}, {args.rounds} round(s)\n")
    lines.append(f"| variant | wall s (median) | min-max s | events/s | vs {base} (wall) | "
                 f"CPU s (tree) | vs {base} (CPU) | driver peak MB | JVM peak MB | "
                 "tree RSS peak MB | rows ok |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for v in variants:
        rs = by_v[v]
        if not rs:
            lines.append(f"| {v} | failed | | | | | | | | | |")
            continue
        walls = [r.wall for r in rs]
        ratios = [r.wall / base_wall[r.round] for r in rs if r.round in base_wall]
        ratio = f"{median(ratios):.2f}x" if ratios else "-"
        if len(ratios) > 1:
            ratio += f" ({min(ratios):.2f}-{max(ratios):.2f})"
        def mem(role: str, rs: list = rs) -> float:  # type: ignore[type-arg]
            return median([r.memory["roles"].get(role, {}).get("peak_mb", 0) for r in rs])
        cpu = median([r.memory["cpu_s"] for r in rs])
        cpu_ratios = [r.memory["cpu_s"] / base_cpu[r.round] for r in rs if r.round in base_cpu]
        cpu_ratio = f"{median(cpu_ratios):.2f}x" if cpu_ratios else "-"
        tree = median([r.memory["tree_rss_peak_mb"] for r in rs])
        ok = "n/a (noop)" if v == "floor" else (
            "yes" if all(r.counts == meta["expected"] for r in rs) else "NO")
        lines.append(f"| {v} | {median(walls):.1f} | {min(walls):.1f}-{max(walls):.1f} | "
                     f"{events / median(walls):,.0f} | {ratio} | {cpu:.0f} | {cpu_ratio} | "
                     f"{mem('driver'):,.0f} | {mem('jvm'):,.0f} | {tree:,.0f} | {ok} |")
    lines.extend(_engine_ratios(by_v))
    lines.append("")
    lines.append("Where the wall time goes (medians): start = process start until the session "
                 "is up (runner: until its 'pipeline' line, i.e. imports + compile + session); "
                 "batches = sum of per-batch seconds reported from inside foreachBatch.\n")
    lines.append("| variant | start s | batches s | batch count | per-batch s | rest s |")
    lines.append("|---|---:|---:|---:|---|---:|")
    for v in variants:
        rs = by_v[v]
        if not rs:
            continue
        starts = [s for s in (_session_at(r) for r in rs) if s is not None]
        bsum = [sum(_batch_seconds(r)) for r in rs]
        counts = [len(_batch_seconds(r)) for r in rs]
        per = [" ".join(f"{s:.1f}" for s in _batch_seconds(r)) for r in rs]
        rest = [r.wall - (_session_at(r) or 0) - sum(_batch_seconds(r)) for r in rs]
        if v in ("floor", "naive"):  # no batch lines / three queries overlapping in time
            bsum_s, per_s, rest_s = "-", "-" if v == "floor" else "3 queries, concurrent", "-"
        else:
            bsum_s, per_s = f"{median(bsum):.1f}", "; ".join(per[:3])
            rest_s = f"{median(rest):.1f}"
        lines.append(f"| {v} | {median(starts):.1f} | {bsum_s} | {median(counts):.0f} | "
                     f"{per_s} | {rest_s} |")
    sinks = _sink_breakdown(by_v)
    if sinks:
        lines.append("")
        lines.append("Per-table seconds inside the batches (sum over batches, median over "
                     "rounds; the first table's toArrow (`hand`) or write (`hand-spark`) also "
                     "fills the cache; `write` is delta-rs after toArrow, or the whole "
                     "delta-spark append):\n")
        lines.append("| variant | table | toArrow s | write s | txn check s |")
        lines.append("|---|---|---:|---:|---:|")
        lines.extend(sinks)
    for pv in ("runner-prof", "runner-arrow"):
        prof = _runner_prof_breakdown(by_v.get(pv, []))
        if prof:
            lines.append("")
            lines.append(f"{pv}: timers inside the runner (sum over batches, median over "
                         "rounds; sinks run in parallel threads, so per-sink seconds "
                         "overlap):\n")
            lines.append("| timer | sink | seconds |")
            lines.append("|---|---|---:|")
            lines.extend(prof)
    lines.append("")
    lines.append("Wall seconds per round (order rotated each round):\n")
    lines.append("| round | " + " | ".join(variants) + " | load avg (1 min) |")
    lines.append("|---" * (len(variants) + 2) + "|")
    for rnd in sorted({r.round for r in runs}):
        cells = []
        for v in variants:
            r = next((x for x in runs if x.variant == v and x.round == rnd), None)
            cells.append("-" if r is None else (f"{r.wall:.1f}" if r.rc == 0 else f"rc={r.rc}"))
        loads = [x.load[0] for x in runs if x.round == rnd]
        lines.append(f"| {rnd} | " + " | ".join(cells) +
                     f" | {min(loads):.1f}-{max(loads):.1f} |")
    return "\n".join(lines)


def _engine_ratios(by_v: dict[str, list[Run]]) -> list[str]:
    """Each variant against the hand-written pattern on its own engine, per round (median)."""
    rows = []
    for v, rs in by_v.items():
        base = ENGINE_BASELINE.get(v.partition("@")[0])
        if base is None or not rs or not by_v.get(base):
            continue
        walls = {r.round: r.wall for r in by_v[base]}
        cpus = {r.round: r.memory["cpu_s"] for r in by_v[base]}
        w = [r.wall / walls[r.round] for r in rs if r.round in walls]
        c = [r.memory["cpu_s"] / cpus[r.round] for r in rs if r.round in cpus]
        if not w:
            continue
        rows.append(f"| {v} | {base} | {median(w):.2f}x ({min(w):.2f}-{max(w):.2f}) | "
                    f"{median(c):.2f}x ({min(c):.2f}-{max(c):.2f}) |")
    if not rows:
        return []
    return ["", "Against the hand-written pattern on the same engine (per round, median; "
            "target: at most 0.90x):\n", "| variant | vs | wall | CPU |", "|---|---|---:|---:|",
            *rows]


def _sink_breakdown(by_v: dict[str, list[Run]]) -> list[str]:
    rows = []
    for v, rs in by_v.items():
        if v.startswith(("floor", "runner")) or not rs:
            continue
        per_table: dict[str, dict[str, list[float]]] = {}
        for r in rs:
            sums: dict[str, dict[str, float]] = {}
            for b in _batches(r):
                for name, s in b.get("sinks", {}).items():
                    acc = sums.setdefault(name, {"to_arrow": 0.0, "write": 0.0, "check": 0.0})
                    for k in acc:
                        acc[k] += float(s.get(k, 0.0))
            for name, acc in sums.items():
                for k, val in acc.items():
                    per_table.setdefault(name, {}).setdefault(k, []).append(val)
        for name, acc in per_table.items():
            rows.append(f"| {v} | {name} | {median(acc['to_arrow']):.1f} | "
                        f"{median(acc['write']):.1f} | {median(acc['check']):.2f} |")
    return rows


def _runner_prof_breakdown(rs: list[Run]) -> list[str]:
    acc: dict[tuple[str, str], list[float]] = {}
    for r in rs:
        sums: dict[tuple[str, str], float] = {}
        for b in _batches(r):
            key = ("batch (run_batch)", "")
            sums[key] = sums.get(key, 0.0) + float(b.get("seconds", 0.0))
            for model, sec in b.get("writes", {}).items():
                key = ("sink write (WriteResult.seconds)", model)
                sums[key] = sums.get(key, 0.0) + float(sec)
            for t in b.get("timers", []):
                key = (t["kind"], t["what"])
                sums[key] = sums.get(key, 0.0) + float(t["seconds"])
        for key, val in sums.items():
            acc.setdefault(key, []).append(val)
    return [f"| {kind} | {what or '-'} | {median(vals):.2f} |"
            for (kind, what), vals in sorted(acc.items())]

