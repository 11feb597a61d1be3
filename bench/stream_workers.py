"""The hand-written patterns ``bench.stream_bench`` compares the runner with, and its
in-process diagnostics: each variant runs in its own process,
``python -m bench.stream_workers VARIANT CONFIG``, and reports to the bench as JSON lines on
stdout prefixed with :data:`EVENT_PREFIX`. What each variant is: :mod:`bench.stream_bench`.

Nothing here imports pyspark or the runner at import time: a worker imports the runner copy
its ``PYTHONPATH`` names.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO

#: The prefix of a worker's progress lines on stdout.
EVENT_PREFIX = "BENCH "
TABLES = ("request_logs", "error_events", "performance_metrics")


def _emit(doc: dict[str, Any]) -> None:
    """One progress record to the orchestrator (time-stamped there on arrival)."""
    sys.stdout.write(EVENT_PREFIX + json.dumps(doc) + "\n")
    sys.stdout.flush()


def _session(cfg: dict[str, Any], name: str):  # type: ignore[no-untyped-def]
    from runner.runtime.client.session import build_session, session_info

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

    from runner.runtime.batches.parse import parse_schema

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
    """The hand pattern's own sink: a delta-spark append carrying the application transaction (delta-spark
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
    """The hand-written pattern; ``parallel``/``runner_parse`` are the diagnostic variations;
    ``delta_spark``: the sinks are delta-spark appends (``hand-spark``), not toArrow + delta-rs."""
    from concurrent.futures import ThreadPoolExecutor

    if delta_spark:  # what delta's configure_spark_with_delta_pip sets, with local jars
        from runner.runtime.client.session import spark_jars

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
        from runner.runtime.batches.parse import parse_batch
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

    import runner.runtime.batches.batch as batch_mod
    import runner.sinks.rs as rs
    from runner.build import compile_project
    from runner.console import render
    from runner.events import BatchDone, Event
    from runner.project.loader import load_project
    from runner.runtime.start.stream import run_stream

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

    def on_event(event: Event) -> None:
        if not isinstance(event, BatchDone):
            _emit({"event": render(event)})
            return
        result = event.result  # batches run one after another: all timers since the
        with lock:             # previous batch belong to this one
            mine = list(timings)
            timings.clear()
        _emit({"batch": {"batch_id": result.batch_id, "input_rows": result.input_rows,
                         "seconds": result.seconds,
                         "writes": {w.model: w.seconds for w in result.writes},
                         "timers": mine}})

    started = time.perf_counter()
    summary = run_stream(project, plan, mode="available_now", trigger="1 second",
                         report=on_event)
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


def main(argv: list[str] | None = None) -> int:
    """``VARIANT CONFIG``: run one worker on the JSON config the bench wrote."""
    variant, config = (argv if argv is not None else sys.argv[1:])[:2]
    with open(config, encoding="utf-8") as f:
        WORKERS[variant](json.load(f))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
