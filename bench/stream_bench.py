"""Throughput of ``runner stream`` against the hand-written pattern it replaces.

One command generates seed-shaped events once (``runner.demo.write_demo_files``: the example
project's shape, no poison lines) and runs every variant AS A WHOLE PROCESS (interpreter, JVM
and SparkSession start included), interleaved over ``--rounds`` rounds with the order rotated,
because the machine is shared and noisy:

floor
    Spark floor: ``readStream.text`` -> ``from_json`` with every field of the example schema ->
    ``format("noop")``, ``availableNow``. The cost of reading and parsing, nothing else.
hand
    The seeds' hand-written pattern: one query, one ``foreachBatch``: parse once
    (``from_json``), ``persist``, the three example projections (``request_logs``,
    ``error_events`` exploded, ``performance_metrics``, same columns as ``models/*.sql``), each
    ``toArrow()`` and ``deltalake.write_deltalake(mode='append')`` with an application
    transaction (skipped when ``transaction_version >= batch_id``), sequentially;
    ``unpersist``.
naive
    Three streaming queries, each reading and parsing the source itself, each writing its
    table the same way (``foreachBatch`` -> ``toArrow`` -> ``write_deltalake`` with an app txn).
runner
    ``runner stream --available-now --progress json`` on a copy of the example project
    (``project.yml``, ``models/``, ``macros/``) whose ``source.path`` is the generated data,
    with ``delta.engine: rs`` written into it; fresh warehouse and checkpoint every run.

Production-path variants (``--set production`` runs ``floor,hand-spark,runner-spark,runner``
with ``hand-spark`` as the baseline): what a cluster with the delta-spark jars runs.

hand-spark
    The hand-written pattern the project was conceived from: one ``foreachBatch``: parse once
    (``from_json``), ``persist``, the three projections, each written with
    ``.write.format("delta").mode("append").option("txnAppId", ...)
    .option("txnVersion", batch_id).save(path)`` through delta-spark, sequentially;
    ``unpersist``. delta-spark itself skips a transaction version it already holds.
runner-spark
    ``runner`` (the CLI, not a worker) with ``delta.engine: spark``: every commit through
    delta-spark.

Diagnostic variants (not run unless named in ``--variants``; see docs/BENCHMARKS.md):

hand-par
    ``hand`` with the three sinks written from a thread pool (the runner's ``parallelism``).
hand-rparse
    ``hand`` on the runner's own parse (``runner.runtime.parse.parse_batch``: dead-letter flags,
    ``_batch_id``/``_source_file`` columns), its ``count()`` to fill the cache and its
    dead-letter ``toArrow`` - everything the runner adds, without the runner around it.
runner-prof
    The runner in-process (``load_project``/``compile_project``/``run_stream``) with timers
    around ``count()``, ``toArrow()`` and the Delta writes: where a runner batch's time goes.
runner-arrow
    ``runner-prof`` with every append taken through the rs engine's Arrow path (``toArrow`` +
    ``write_deltalake``, as ``hand`` does) instead of Spark-written Parquet committed by
    delta-rs: isolates the cost of the append path.

The work tree's ``runner/`` is copied once at start and every variant imports that copy
(``PYTHONPATH``): other engineers edit it while the bench runs. ``runner@REF`` (e.g.
``runner@HEAD``) runs ``runner stream`` from ``git archive REF runner`` instead, to compare
versions in one run.

Same for all: ``build_session`` from ``runner.runtime.session`` (UTC, loopback, quiet logs, 2 x
cores shuffle partitions; the jars of ``--jars``, default ``$RUNNER_JARS_DIR`` or ``.jars/spark``,
on ``spark.jars`` with Delta's SQL extension and catalog, in every variant, so every session
is started alike), ``--master`` (default ``local[2]``, also written into the runner
copy's ``spark.master``), ``SPARK_LOCAL_IP=127.0.0.1``, and ``--max-files`` files per trigger
(default 10: 40 files -> 4 batches of 250k events). Blank lines (the demo writes one per file)
are filtered out before parsing in every variant, as the runner's files source does.

Measured per run, from outside: wall time; the peak resident memory (``VmHWM`` from
``/proc/<pid>/status``, sampled every 0.2 s) of the Python driver, of its JVM child and of any
Python workers separately; CPU seconds of the process tree. From inside (JSON lines on stdout,
time-stamped on arrival): session start, per-batch seconds and, for ``hand``/``naive``, per-table
``toArrow``/write seconds. After each run the tables are counted with
``deltalake.DeltaTable(p).to_pyarrow_dataset().count_rows()`` and compared with the expected
counts (from the generated files) and with the runner's column names.

Ratios are per round against ``--baseline`` (default: ``hand``, or ``hand-spark`` for the
production set), then the median over rounds.

Usage::

    .venv/bin/python -m bench.stream_bench                   # 1M events, 3 rounds
    .venv/bin/python -m bench.stream_bench --events 100000 --rounds 1
    .venv/bin/python -m bench.stream_bench --set production  # floor,hand-spark,runner-spark,runner
    .venv/bin/python -m bench.stream_bench --set engines --rounds 2  # each engine vs its own hand

``--set engines`` (``floor,hand,runner,hand-spark,runner-spark``) also reports each runner
variant against the hand-written pattern ON ITS OWN ENGINE, per round (``runner`` / ``hand``,
``runner-spark`` / ``hand-spark``): the throughput target (at most 0.9x).
    .venv/bin/python -m bench.stream_bench --variants hand,hand-par,hand-rparse,runner

Raw results go to ``bench/results/stream_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    bench_parser,
    command_name,
    cpu_seconds,
    descendants,
    example_config,
    example_project,
    git_state,
    machine,
    median,
    progress_record,
    run_env,
    snapshot_runner,
    spark_conf,
    spark_jars,
    status_kb,
    tree_digest,
    write_result,
)

MAIN_VARIANTS = ("floor", "hand", "naive", "runner")
PRODUCTION_VARIANTS = ("floor", "hand-spark", "runner-spark", "runner")
ENGINE_VARIANTS = ("floor", "hand", "runner", "hand-spark", "runner-spark")
DIAG_VARIANTS = ("hand-par", "hand-rparse", "runner-prof", "runner-arrow")
#: ``--set`` name -> (variants, baseline of the ratios).
SETS = {"main": (MAIN_VARIANTS, "hand"), "production": (PRODUCTION_VARIANTS, "hand-spark"),
        "engines": (ENGINE_VARIANTS, "hand")}
#: The hand-written pattern on the same engine as a variant: the "vs own engine" column.
ENGINE_BASELINE = {"runner": "hand", "runner-spark": "hand-spark", "hand-rparse": "hand",
                   "hand-par": "hand", "runner-prof": "hand", "runner-arrow": "hand"}
#: Variants that run the ``runner stream`` CLI (also as ``NAME@REF``) -> their delta.engine.
RUNNER_CLI_ENGINES = {"runner": "rs", "runner-spark": "spark"}
TABLES = ("request_logs", "error_events", "performance_metrics")
_EVENT_PREFIX = "BENCH "


# ==========================================================================================
# Workers: each runs in its own process (`--worker VARIANT --config FILE`).
# ==========================================================================================

def _emit(doc: dict[str, Any]) -> None:
    """One progress record to the orchestrator (time-stamped there on arrival)."""
    sys.stdout.write(_EVENT_PREFIX + json.dumps(doc) + "\n")
    sys.stdout.flush()


def _session(cfg: dict[str, Any], name: str):  # type: ignore[no-untyped-def]
    from runner.runtime.session import build_session, session_info

    spark = build_session(master=cfg["master"], app_name=f"bench-{name}",
                          conf=cfg.get("spark_conf", {}), log_dir=str(Path(cfg["out"]) / "logs"))
    _emit({"event": "session", "start_seconds": session_info(spark).start_seconds})
    return spark


def _lines(spark, cfg: dict[str, Any]):  # type: ignore[no-untyped-def]
    """The raw stream, as the runner's files source reads it: text, blank lines dropped."""
    from pyspark.sql import functions as F

    from runner.sources.files import BLANK_CHARS

    raw = (spark.readStream.format("text")
           .option("maxFilesPerTrigger", str(cfg["max_files"])).load(cfg["data"]))
    return raw.filter(F.trim(F.col("value"), F.lit(BLANK_CHARS)) != "")


def _parse(lines, cfg: dict[str, Any]):  # type: ignore[no-untyped-def]
    """from_json with every field of the project schema, flattened (the hand-written pattern's parse)."""
    from pyspark.sql import functions as F

    from runner.runtime.parse import parse_schema

    schema = parse_schema(cfg["schema_ddl"])
    return lines.select(F.from_json(F.col("value"), schema).alias("e")).select("e.*")


@functools.lru_cache(maxsize=1)
def _owners() -> tuple[tuple[str, str], ...]:
    """The example's seed ``seeds/endpoint_owners.csv`` (endpoint, team), read once."""
    import csv

    with (REPO / "seeds" / "endpoint_owners.csv").open(encoding="utf-8", newline="") as f:
        return tuple((row["endpoint"], row["team"]) for row in csv.DictReader(f))


def _projections(parsed, slow_ms: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The example models as DataFrame code (same columns, names and types as models/*.sql;
    performance_metrics joins the seed of endpoint owners, broadcast, as a hand-written
    enrichment would)."""
    from pyspark.sql import functions as F

    owners = F.broadcast(parsed.sparkSession.createDataFrame(
        list(_owners()), "owner_endpoint STRING, team STRING"))
    status = F.col("request.status_code")
    latency = F.col("request.latency_ms")
    return {
        "request_logs": parsed.select(
            "eventId", "timestamp", F.col("user.userId").alias("userId"),
            F.col("request.endpoint").alias("endpoint"), status.alias("status_code"),
            F.when(status >= 500, "server_error").when(status >= 400, "client_error")
            .otherwise("ok").alias("status_class")),
        "error_events": parsed.select(
            "eventId", "timestamp", F.col("user.userId").alias("userId"),
            F.explode("errors").alias("err"))
            .select("eventId", "timestamp", "userId", F.col("err.errorCode").alias("errorCode"),
                    F.col("err.severity").alias("severity")),
        "performance_metrics": parsed.select(
            "eventId", "timestamp", F.col("request.endpoint").alias("endpoint"),
            latency.alias("latency_ms"), (latency >= slow_ms).alias("is_slow"))
            .join(owners, F.col("endpoint") == F.col("owner_endpoint"), "left")
            .drop("owner_endpoint"),
    }


def _write_arrow(path: str, app_id: str, df, batch_id: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """toArrow, then an idempotent delta-rs append (the hand-written sink); timings."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    t0 = time.perf_counter()
    if DeltaTable.is_deltatable(path):
        done = DeltaTable(path).transaction_version(app_id)
        if done is not None and done >= batch_id:
            return {"skipped": 1.0}
    t1 = time.perf_counter()
    table = df.toArrow()
    t2 = time.perf_counter()
    if table.num_rows:
        write_deltalake(path, table, mode="append", commit_properties=CommitProperties(
            app_transactions=[Transaction(app_id=app_id, version=batch_id)]))
    t3 = time.perf_counter()
    return {"check": t1 - t0, "to_arrow": t2 - t1, "write": t3 - t2, "rows": table.num_rows}


def _write_spark(path: str, app_id: str, df, batch_id: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The seeds' own sink: a delta-spark append carrying the application transaction (delta-spark
    skips a ``txnVersion`` it already holds for ``txnAppId``); its seconds."""
    t0 = time.perf_counter()
    (df.write.format("delta").mode("append").option("txnAppId", app_id)
     .option("txnVersion", batch_id).save(path))
    return {"write": time.perf_counter() - t0}


def _await(queries: list[Any]) -> list[dict[str, Any]]:
    for q in queries:
        q.awaitTermination()
        if q.exception() is not None:
            raise RuntimeError(f"query {q.name} failed: {q.exception()}")
    return [{"query": q.name, "batches": len(q.recentProgress),
             "input_rows": sum(p["numInputRows"] for p in q.recentProgress),
             "duration_ms": [p["durationMs"] for p in q.recentProgress]} for q in queries]


def worker_floor(cfg: dict[str, Any]) -> None:
    spark = _session(cfg, "floor")
    parsed = _parse(_lines(spark, cfg), cfg)
    started = time.perf_counter()
    q = (parsed.writeStream.format("noop").queryName("floor").trigger(availableNow=True)
         .option("checkpointLocation", str(Path(cfg["out"]) / "checkpoint")).start())
    progress = _await([q])
    _emit({"summary": {"query_seconds": time.perf_counter() - started, "queries": progress}})
    spark.stop()


def worker_hand(cfg: dict[str, Any], *, parallel: bool = False, runner_parse: bool = False,
                delta_spark: bool = False) -> None:
    """The seeds' pattern; ``parallel``/``runner_parse`` are the diagnostic variations;
    ``delta_spark``: the sinks are delta-spark appends (``hand-spark``), not toArrow + delta-rs."""
    from concurrent.futures import ThreadPoolExecutor

    if delta_spark:  # what delta's configure_spark_with_delta_pip sets, with local jars
        from runner.runtime.session import spark_jars

        if not any(Path(j).name.startswith("delta-spark_") for j in spark_jars()):
            raise RuntimeError("hand-spark needs the delta-spark jar: none in --jars "
                               f"({os.environ.get('RUNNER_JARS_DIR', '')!r})")
        cfg = {**cfg, "spark_conf": {
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            **cfg.get("spark_conf", {})}}
    spark = _session(cfg, "hand-spark" if delta_spark else "hand")
    if delta_spark:
        from runner.sinks.spark import delta_spark_available

        if not delta_spark_available(spark):
            raise RuntimeError("hand-spark: io.delta classes not loadable (see Spark's log)")
    write = _write_spark if delta_spark else _write_arrow
    out = Path(cfg["out"])
    warehouse = out / "warehouse"
    batches: list[dict[str, Any]] = []
    if runner_parse:
        from runner.runtime.parse import parse_batch
        from runner.sources.files import read_files_stream

        source = read_files_stream(spark, path=cfg["data"], max_files_per_trigger=cfg["max_files"])
    else:
        source = _lines(spark, cfg)

    def process(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        doc: dict[str, Any] = {"batch_id": batch_id, "sinks": {}}
        if runner_parse:
            pb = parse_batch(df, schema_ddl=cfg["schema_ddl"], batch_id=batch_id,
                             metadata_columns=("_source_file",))
            pb.persist()
            c0 = time.perf_counter()
            doc["input_rows"] = pb.frame.count()
            doc["count"] = time.perf_counter() - c0
            parsed, cached = pb.valid, pb.frame
        else:
            parsed = _parse(df, cfg).persist()
            cached = parsed
        frames = dict(_projections(parsed, cfg["slow_ms"]))
        if runner_parse:
            frames["_dead_letter"] = pb.dead
        jobs = {name: (str(warehouse / name), f"bench.{name}", df_) for name, df_ in frames.items()}
        if parallel:
            with ThreadPoolExecutor(max_workers=cfg["parallelism"]) as pool:
                futs = {n: pool.submit(write, *j[:2], j[2], batch_id) for n, j in jobs.items()}
                doc["sinks"] = {n: f.result() for n, f in futs.items()}
        else:
            for name, (path, app_id, df_) in jobs.items():
                doc["sinks"][name] = write(path, app_id, df_, batch_id)
        cached.unpersist()
        doc["seconds"] = time.perf_counter() - t0
        batches.append(doc)
        _emit({"batch": doc})

    started = time.perf_counter()
    q = (source.writeStream.queryName("hand").foreachBatch(process).trigger(availableNow=True)
         .option("checkpointLocation", str(out / "checkpoint")).start())
    progress = _await([q])
    _emit({"summary": {"query_seconds": time.perf_counter() - started, "queries": progress}})
    spark.stop()


def worker_naive(cfg: dict[str, Any]) -> None:
    spark = _session(cfg, "naive")
    out = Path(cfg["out"])
    parsed = _parse(_lines(spark, cfg), cfg)

    def sink(name: str) -> Callable[[Any, int], None]:
        path, app_id = str(out / "warehouse" / name), f"bench.{name}"

        def process(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            doc = _write_arrow(path, app_id, df, batch_id)
            _emit({"batch": {"query": name, "batch_id": batch_id, "sinks": {name: doc},
                             "seconds": time.perf_counter() - t0}})
        return process

    started = time.perf_counter()
    queries = [df.writeStream.queryName(f"naive_{name}").foreachBatch(sink(name))
               .trigger(availableNow=True)
               .option("checkpointLocation", str(out / "checkpoint" / name)).start()
               for name, df in _projections(parsed, cfg["slow_ms"]).items()]
    progress = _await(queries)
    _emit({"summary": {"query_seconds": time.perf_counter() - started, "queries": progress}})
    spark.stop()


def worker_runner_prof(cfg: dict[str, Any], *, arrow: bool = False) -> None:
    """The runner in-process, with timers around its Spark actions and Delta writes;
    ``arrow``: every append through ``toArrow()`` + ``write_deltalake`` (the rs engine's
    path for tiny batches) instead of Spark-written Parquet."""
    import pyspark.sql.classic.dataframe as classic

    import runner.runtime.batch as batch_mod
    import runner.sinks.rs as rs
    from runner.build import compile_project
    from runner.project.loader import load_project
    from runner.runtime.stream import run_stream

    timings: list[dict[str, Any]] = []
    lock = threading.Lock()

    def timed(kind: str, fn: Callable[..., Any], label: Callable[..., str]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                try:
                    what = label(*args, **kwargs)
                except Exception:  # noqa: BLE001 - a label must never break the runner
                    what = "?"
                with lock:
                    timings.append({"kind": kind, "what": what,
                                    "start": t0, "seconds": time.perf_counter() - t0,
                                    "thread": threading.current_thread().name})
        return wrapper

    classic.DataFrame.count = timed("count", classic.DataFrame.count, lambda *a, **k: "")

    def model(self: Any, spec: Any, *a: Any, **k: Any) -> str:
        return str(spec.model)

    rs.RsWriter._prepare = timed("prepare (toArrow if any)", rs.RsWriter._prepare, model)
    rs.RsWriter._append = timed("append", rs.RsWriter._append, model)
    rs.RsWriter.committed_version = timed("txn_check", rs.RsWriter.committed_version, model)
    # One sink's whole write as the batch sees it (the dead letters included).
    batch_mod._write = timed("sink (batch._write)", batch_mod._write,
                             lambda writer, spec, *a, **k: str(spec.model))
    batch_mod.parse_batch = timed("parse_batch (driver)", batch_mod.parse_batch,
                                  lambda *a, **k: "")
    batch_mod.apply_expectations = timed("spark.sql done -> expectations",
                                         batch_mod.apply_expectations,
                                         lambda df, step, **k: step.name)
    if hasattr(batch_mod, "_fill"):  # the parse job (cache fill + counts), when it has one
        batch_mod._fill = timed("parse (batch._fill)", batch_mod._fill, lambda *a, **k: "")
    # The Spark-native append path (runner.sinks.staged), when this runner version has it.
    for name, label in (("write_staged", lambda df, **k: Path(k["table_path"]).name),
                        ("collect_staged", lambda path, *a, **k: Path(path).name),
                        ("commit_staged", lambda path, *a, **k: Path(path).name)):
        if hasattr(rs, name):
            setattr(rs, name, timed(name, getattr(rs, name), label))
    if arrow:
        init = rs.RsWriter.__init__

        def arrow_init(self: Any, *a: Any, **k: Any) -> None:
            init(self, *a, **k)
            if not hasattr(self, "arrow_max_rows"):
                raise RuntimeError("this runner version has no RsWriter.arrow_max_rows")
            self.arrow_max_rows = 1 << 62  # every batch is "tiny": appends through Arrow

        rs.RsWriter.__init__ = arrow_init
    project = load_project(cfg["project"])
    plan = compile_project(project).plan

    def on_batch(result: Any) -> None:  # batches run one after another: all timers since
        with lock:                        # the previous batch belong to this one
            mine = list(timings)
            timings.clear()
        _emit({"batch": {"batch_id": result.batch_id, "input_rows": result.input_rows,
                         "seconds": result.seconds,
                         "writes": {w.model: w.seconds for w in result.writes},
                         "timers": mine}})

    started = time.perf_counter()
    summary = run_stream(project, plan, mode="available_now", trigger="1 second",
                         on_batch=on_batch,
                         on_event=lambda m: _emit({"event": m}))
    _emit({"summary": {"query_seconds": time.perf_counter() - started,
                       "runner_seconds": summary.seconds}})


WORKERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "floor": worker_floor,
    "hand": worker_hand,
    "hand-spark": lambda cfg: worker_hand(cfg, delta_spark=True),
    "hand-par": lambda cfg: worker_hand(cfg, parallel=True),
    "hand-rparse": lambda cfg: worker_hand(cfg, runner_parse=True),
    "naive": worker_naive,
    "runner-prof": worker_runner_prof,
    "runner-arrow": lambda cfg: worker_runner_prof(cfg, arrow=True),
}


# ==========================================================================================
# Orchestrator: data, processes, memory sampling, verification, report.
# ==========================================================================================

@dataclass
class Proc:
    """What the sampler saw of one process of a run's tree."""

    pid: int
    role: str
    hwm_kb: int = 0
    cpu_s: float = 0.0


class TreeSampler(threading.Thread):
    """Samples a process tree from /proc every ``interval`` s: per-process VmHWM, CPU ticks,
    and the peak of the tree's summed VmRSS."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.procs: dict[int, Proc] = {}
        self.other_names: dict[str, int] = {}
        self.tree_rss_peak_kb = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def _role(self, pid: int) -> str:
        if pid == self.root:
            return "driver"
        comm = command_name(pid)
        if comm is None:
            return "other"
        if comm == "java":
            return "jvm"
        return "py_workers" if comm.startswith("python") else "other"

    def sample(self) -> None:
        rss_total = 0
        for pid in descendants(self.root, include_root=True):
            hwm = status_kb(pid, "VmHWM")
            if not hwm:  # gone (or a kernel thread)
                continue
            proc = self.procs.get(pid)
            if proc is None:
                proc = self.procs[pid] = Proc(pid, self._role(pid))
                if proc.role == "other":  # count processes by name (a forked child shows
                    comm = command_name(pid) or "?"  # its parent thread's name until exec)
                    self.other_names[comm] = self.other_names.get(comm, 0) + 1
            elif proc.role == "other":  # spark-submit's shell exec()s into the JVM later
                proc.role = self._role(pid)
            proc.hwm_kb = max(proc.hwm_kb, hwm)
            proc.cpu_s = max(proc.cpu_s, cpu_seconds(pid))
            # Not "other": a process the JVM spawns (chmod, jspawnhelper...) shares or copies
            # the JVM's pages until it exec()s, which would count the JVM twice.
            if proc.role != "other":
                rss_total += status_kb(pid, "VmRSS")
        self.tree_rss_peak_kb = max(self.tree_rss_peak_kb, rss_total)

    def summary(self) -> dict[str, Any]:
        by_role: dict[str, dict[str, float]] = {}
        for p in self.procs.values():
            r = by_role.setdefault(p.role, {"peak_mb": 0.0, "cpu_s": 0.0, "processes": 0})
            r["peak_mb"] = max(r["peak_mb"], p.hwm_kb / 1024)  # largest single process
            r["cpu_s"] += p.cpu_s
            r["processes"] += 1
        return {"roles": by_role, "tree_rss_peak_mb": self.tree_rss_peak_kb / 1024,
                "other_process_names": self.other_names,
                "cpu_s": sum(r["cpu_s"] for r in by_role.values())}


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


def generate_data(workdir: Path, events: int, files: int) -> dict[str, Any]:
    """Write (or reuse) the demo events; return expected table counts."""
    from runner.demo import write_demo_files

    data = workdir / "data"
    marker = workdir / "data.json"
    want = {"events": events, "files": files, "seed": 42, "poison_every": 0}
    if marker.is_file():
        meta = json.loads(marker.read_text())
        if meta.get("params") == want:
            print(f"reusing {meta['events']:,} events in {data}", flush=True)
            return meta
    shutil.rmtree(data, ignore_errors=True)
    t0 = time.perf_counter()
    result = write_demo_files(data, events=events, files=files, seed=42, poison_every=0)
    errors = blanks = 0
    size = 0
    for path in sorted(data.glob("events-*.json")):
        text = path.read_text(encoding="utf-8")
        size += len(text.encode())
        errors += text.count('"errorCode"')
        blanks += sum(1 for line in text.split("\n")[:-1] if not line.strip())
    meta = {"params": want, "events": result.events, "files": result.files, "bytes": size,
            "blank_lines": blanks,
            "expected": {"request_logs": result.events, "performance_metrics": result.events,
                         "error_events": errors},
            "seconds": time.perf_counter() - t0}
    marker.write_text(json.dumps(meta, indent=2))
    print(f"generated {result.events:,} events ({size / 1e6:.0f} MB, {result.files} files, "
          f"{errors:,} errors) in {meta['seconds']:.0f} s", flush=True)
    return meta


def runner_project(dest: Path, *, data: Path, max_files: int, master: str,
                   spark_conf: dict[str, str], engine: str) -> Path:
    """A copy of the example project reading ``data`` (fresh warehouse and checkpoint), its
    ``delta.engine`` set to ``engine`` (never ``auto``: the comparison names its engine)."""
    config = example_config()
    spark = {**(config.get("spark") or {}), "master": master}
    if spark_conf:
        spark["conf"] = {**spark.get("conf", {}), **spark_conf}
    return example_project(
        dest, source={**config["source"], "path": str(data), "max_files_per_trigger": max_files},
        delta={**(config.get("delta") or {}), "engine": engine}, spark=spark)


def run_variant(variant: str, rnd: int, *, workdir: Path, base_cfg: dict[str, Any],
                timeout: float) -> Run:
    out = workdir / "runs" / f"{variant}-r{rnd}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # The snapshot of runner/ has no .jars beside it: name the folder (the same for all).
    env = run_env(base_cfg["runner_src"], base_cfg["jars_dir"])
    worker = [sys.executable, "-m", "bench.stream_bench", "--worker", variant,
              "--config", str(out / "cfg.json")]
    if variant.startswith("runner"):
        name, _, ref = variant.partition("@")
        project = runner_project(out / "project", data=Path(base_cfg["data"]),
                                 max_files=base_cfg["max_files"], master=base_cfg["master"],
                                 spark_conf=base_cfg["spark_conf"],
                                 engine=RUNNER_CLI_ENGINES.get(name, "rs"))
        warehouse = project / "_warehouse"
        cfg = {**base_cfg, "out": str(out), "project": str(project)}
        stream_args = ["stream", "--available-now", "--progress", "json",
                       "--project-dir", str(project)]
        if name in RUNNER_CLI_ENGINES:  # `runner stream ...`, from the snapshot or REF
            if ref:
                env["PYTHONPATH"] = str(export_runner(ref, workdir))  # ahead of the editable
            cmd = [sys.executable, "-m", "runner", *stream_args]  # install of the work tree
        else:
            cmd = worker
    else:
        warehouse = out / "warehouse"
        cfg = {**base_cfg, "out": str(out)}
        cmd = worker
    if cmd is worker:  # the worker is this module: the repository after the runner copy
        env = run_env(base_cfg["runner_src"], base_cfg["jars_dir"], bench=True)
    (out / "cfg.json").write_text(json.dumps(cfg))

    events: list[tuple[float, dict[str, Any]]] = []
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=str(out), start_new_session=True)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    stderr: list[str] = []
    err_thread = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
    err_thread.start()

    def read_stdout() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            doc = progress_record(line.strip().removeprefix(_EVENT_PREFIX))
            if doc is not None:
                events.append((time.perf_counter() - started, doc))
    out_thread = threading.Thread(target=read_stdout, daemon=True)
    out_thread.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # our own child's process group
        rc = proc.wait()
    wall = time.perf_counter() - started
    sampler.stop()
    out_thread.join(5)
    err_thread.join(5)
    run = Run(variant, rnd, wall, rc, events, sampler.summary(),
              stderr_tail="".join(stderr)[-2000:], load=(load_before, os.getloadavg()[0]))
    if variant != "floor":
        run.counts, run.columns = count_tables(warehouse)
    return run


def export_runner(ref: str, workdir: Path) -> Path:
    """``runner/`` as of git ``ref`` (``git archive``; the work tree is not touched)."""
    dest = workdir / "src" / "".join(c if c.isalnum() else "_" for c in ref)
    if not (dest / "runner").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "runner"],
                                 capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def count_tables(warehouse: Path) -> tuple[dict[str, int], dict[str, list[str]]]:
    from deltalake import DeltaTable

    counts, columns = {}, {}
    for name in TABLES:
        path = warehouse / name
        if not DeltaTable.is_deltatable(str(path)):
            counts[name] = -1
            continue
        dataset = DeltaTable(str(path)).to_pyarrow_dataset()  # never to_pyarrow_table()
        counts[name] = dataset.count_rows()
        columns[name] = list(dataset.schema.names)
    return counts, columns


# ---- report --------------------------------------------------------------------------------


def _session_at(run: Run) -> float | None:
    """Seconds from process start until the session was up (runner: its 'pipeline' line)."""
    for t, doc in run.events:
        if doc.get("event") == "session" or str(doc.get("event", "")).startswith("pipeline"):
            return t
    return None


def _batches(run: Run) -> list[dict[str, Any]]:
    return [doc.get("batch", doc) for _, doc in run.events
            if "batch" in doc or "batch_id" in doc]


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


def _machine() -> dict[str, Any]:
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {**machine(), "pyspark": pyspark.__version__,
            "java": java.splitlines()[0] if java else None}


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=1_000_000, files=40, max_files=True, master=True,
                      conf=True, rounds=3, jars=True, workdir=True, timeout=900, json=True)
    ap.add_argument("--set", choices=sorted(SETS), default="main",
                    help="a named list of variants and its baseline: main = "
                         f"{','.join(MAIN_VARIANTS)} (vs hand), production = "
                         f"{','.join(PRODUCTION_VARIANTS)} (vs hand-spark)")
    ap.add_argument("--variants", default=None,
                    help="comma list (overrides --set's) of "
                         f"{', '.join(dict.fromkeys(MAIN_VARIANTS + PRODUCTION_VARIANTS + DIAG_VARIANTS))}"
                         ", or runner@REF / runner-spark@REF")
    ap.add_argument("--baseline", default=None,
                    help="the variant every ratio is taken against, per round (default: "
                         "the --set's; with --variants: hand, else hand-spark, else the first)")
    ap.add_argument("--runner-ref", default=None, metavar="REF",
                    help="run every variant on runner/ as of git REF (default: a copy of the "
                         "work tree taken at start)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        WORKERS[args.worker](json.loads(args.config.read_text()))
        return 0

    set_variants, set_baseline = SETS[args.set]
    variants = ([v.strip() for v in args.variants.split(",") if v.strip()]
                if args.variants else list(set_variants))
    unknown = [v for v in variants
               if v not in WORKERS and v.partition("@")[0] not in RUNNER_CLI_ENGINES]
    if unknown:
        ap.error(f"unknown variant(s) {unknown}")
    if args.baseline is None:
        args.baseline = (set_baseline if not args.variants else
                         next((v for v in ("hand", "hand-spark") if v in variants), variants[0]))
    if args.baseline not in variants:
        ap.error(f"--baseline {args.baseline} is not among the variants {variants}")
    args.variants = ",".join(variants)
    args.jars, jars = spark_jars(args.jars)
    needs_delta = [v for v in variants if v == "hand-spark" or v.startswith("runner-spark")]
    if needs_delta and not any(j.startswith("delta-spark_") for j in jars):
        ap.error(f"{needs_delta} need the delta-spark jar: none in --jars {args.jars!r}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="runner-stream-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    example = example_config()
    meta = generate_data(workdir, args.events, args.files)
    gs = git_state()
    src = export_runner(args.runner_ref, workdir) if args.runner_ref else snapshot_runner(workdir)
    if args.runner_ref:
        gs.update(head=args.runner_ref, head_subject="--runner-ref", runner_uncommitted=[])
    base_cfg = {"runner_src": str(src), "data": str(workdir / "data"),
                "max_files": args.max_files,
                "spark_conf": spark_conf(args.conf),
                "master": args.master, "schema_ddl": example["schema"],
                "slow_ms": int(example.get("vars", {}).get("slow_request_ms", 1000)),
                "parallelism": int(example.get("parallelism", 4)),
                "jars_dir": str(Path(args.jars).resolve()) if args.jars.strip() else ""}
    gs["runner_snapshot_digest"] = tree_digest(Path(base_cfg["runner_src"]))
    gs["spark_jars"] = jars
    runs: list[Run] = []
    bench_started = time.perf_counter()
    try:
        for rnd in range(args.rounds):
            k = rnd % len(variants)
            for v in variants[k:] + variants[:k]:
                print(f"round {rnd}: {v} ...", end=" ", flush=True)
                run = run_variant(v, rnd, workdir=workdir, base_cfg=base_cfg,
                                  timeout=args.timeout)
                runs.append(run)
                status = "ok" if run.rc == 0 else f"FAILED rc={run.rc}: {run.stderr_tail[-600:]}"
                if run.counts and run.counts != meta["expected"]:
                    status += f" WRONG COUNTS {run.counts} != {meta['expected']}"
                print(f"{run.wall:.1f} s, {status} (load {run.load[0]:.1f} -> {run.load[1]:.1f})",
                      flush=True)
                if args.workdir is None:
                    shutil.rmtree(workdir / "runs" / f"{v}-r{rnd}", ignore_errors=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    text = report(runs, meta, args)
    cols = {r.variant: r.columns for r in runs if r.columns}
    ref_cols = next((cols[v] for v in cols if v.partition("@")[0] in RUNNER_CLI_ENGINES), None)
    mismatched = [v for v, c in cols.items() if ref_cols and c != ref_cols]
    text += ("\n\ncolumns: every variant's tables have the runner's column names"
             if ref_cols and not mismatched else
             f"\n\ncolumns differ from the runner's in: {mismatched}" if ref_cols else "")
    text += (f"\nrunner (snapshot at start): HEAD {gs['head']} ({gs['head_subject']}); "
             f"snapshot digest {gs['runner_snapshot_digest']}; uncommitted runner files: "
             f"{len(gs['runner_uncommitted'])}" + (
                 f" ({', '.join(x.split()[-1] for x in gs['runner_uncommitted'])})"
                 if gs["runner_uncommitted"] else ""))
    text += (f"\nbench wall time {time.perf_counter() - bench_started:.0f} s; load average at "
             f"end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine: "
             "compare ratios within one run)")
    print(text)
    write_result(__file__, {"args": vars(args), "data": meta, "machine": _machine(), "git": gs,
                            "runs": [r.to_json() for r in runs], "report": text}, args.json)
    failed = [r for r in runs if r.rc != 0 or (r.counts and r.counts != meta["expected"])]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
