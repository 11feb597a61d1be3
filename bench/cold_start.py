"""Why a run's first batch is slow: the driver JVM's warm-up, counted per batch.

Each run is a whole process (``python -m bench.cold_start --worker CONFIG``): the runner
in-process (``load_project``, ``compile_project``, ``run_stream --available-now``) on a copy of
the example project over generated demo files (``--per-batch`` events a batch, ``--batches``
batches, one file each; a poison line every 500), its batch function wrapped to read the
driver JVM's counters before and after each batch: the JIT compiler's milliseconds
(``CompilationMXBean``: compiler threads' time, on the same cores as the tasks), classes
loaded, garbage-collection milliseconds, and Spark's code generation (``CodegenMetrics``:
classes compiled by Janino, their compile milliseconds). On ``local[N]`` the driver's JVM is
the only executor, so these are the whole run's.

cold
    The runner as it runs.
warm
    Before the query starts, the same JVM runs the batch's parse, every model's SQL and the
    dead letters over ``--warm-records`` example records (a poison line every 50) into Spark's
    ``noop`` sink, in a session of its own: what a warm-up before the query would buy, and
    what it costs (its seconds, and the time from the query's start to the first batch's
    end, against ``cold``'s).
aot
    ``cold`` with the JVM's ahead-of-time cache (JDK 25 and later: the classes a run loaded,
    linked, and the JIT's method profiles, ``-XX:AOTCache``), written by one untimed training
    run of the same scenario before the timed rounds (``-XX:AOTCacheOutput``, given to the
    driver through ``SPARK_SUBMIT_OPTS``); its seconds are reported as the training's.

``--java LABEL=JAVA_HOME`` (repeatable) runs every variant on each of those JVMs (default: the
environment's); ``aot`` runs only on JVMs that have the cache.

Runs alternate over ``--rounds`` rounds; medians are reported. The machine is shared: compare
the variants of one run.

Usage::

    .venv/bin/python -m bench.cold_start                       # 250,000 and 1,000 a batch
    .venv/bin/python -m bench.cold_start --per-batch 1000 --rounds 1
    .venv/bin/python -m bench.cold_start --variants cold,aot \
        --java java17=/usr/lib/jvm/java-17-openjdk-amd64 \
        --java java25=/usr/lib/jvm/temurin-25-jdk-amd64

Raw results go to ``bench/results/cold_start-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    bench_parser,
    bench_project,
    files_source,
    git_state,
    run_env,
    snapshot_runner,
    spark_jars,
    spark_machine,
    write_result,
)

VARIANTS = ("cold", "warm", "aot")
_PREFIX = "COLD "
#: The first Java release whose JVM writes and reads an ahead-of-time cache in one step.
AOT_MIN_JAVA = 25


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--worker"]:
        return worker(json.loads(Path(argv[1]).read_text(encoding="utf-8")))
    ap = bench_parser(__doc__, master=True, json=True, jars=True)
    ap.add_argument("--per-batch", default="250000,1000",
                    help="events per batch, a comma list: one scenario each")
    ap.add_argument("--engine", default="rs", help="Delta engines, a comma list (rs, spark)")
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warm-records", type=int, default=200)
    ap.add_argument("--variants", default="cold,warm",
                    help=f"a comma list of {', '.join(VARIANTS)}")
    ap.add_argument("--java", action="append", default=[], metavar="LABEL=JAVA_HOME",
                    help="a JVM to run on (repeatable; default: the environment's)")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.per_batch.split(",")]
    variants = [v for v in args.variants.split(",") if v]
    if unknown := sorted(set(variants) - set(VARIANTS)):
        ap.error(f"--variants: unknown {unknown}; choose from {', '.join(VARIANTS)}")
    javas = [_java(spec) for spec in args.java or [""]]
    if len({j["label"] for j in javas}) < len(javas):
        ap.error(f"--java: two JVMs with one label ({', '.join(j['label'] for j in javas)})")
    if "aot" in variants and not any(j["version"] >= AOT_MIN_JAVA for j in javas):
        ap.error(f"--variants aot needs a JVM of Java {AOT_MIN_JAVA} or later (--java); "
                 f"have {', '.join(j['label'] for j in javas)}")
    work = Path(tempfile.mkdtemp(prefix="runner-cold-start-"))
    try:
        src = snapshot_runner(work)
        runs, trainings = [], []
        for size in sizes:
            data = work / f"data-{size}"
            _write_data(data, size, args.batches)
            plan = [(e, j, v) for e in args.engine.split(",") for j in javas for v in variants
                    if v != "aot" or j["version"] >= AOT_MIN_JAVA]
            for engine, java in {(e, j["label"]): (e, j) for e, j, v in plan
                                 if v == "aot"}.values():
                training = _run(work, src, data, size, engine, "train", java, args)
                trainings.append({"per_batch": size, "engine": engine,
                                  "java": java["label"], "wall_s": training["wall_s"]})
            for rnd in range(args.rounds):
                for engine, java, variant in (plan if rnd % 2 == 0 else plan[::-1]):
                    run = _run(work, src, data, size, engine, variant, java, args)
                    run.update(per_batch=size, engine=engine, round=rnd)
                    runs.append(run)
                    print(f"{size:,}/batch {engine} {java['label']} round {rnd} {variant}: "
                          f"batches {[round(b['seconds'], 2) for b in run['batches']]}"
                          + (f", warm-up {run['warm_s']:.2f} s" if run.get("warm_s") else ""),
                          flush=True)
        doc = {"args": vars(args), "machine": spark_machine(), "git": git_state(),
               "javas": javas, "aot_trainings": trainings,
               "runs": runs, "summary": summary(runs)}
        for line in report(summary(runs)):
            print(line)
        write_result(__file__, doc, args.json)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _write_data(folder: Path, per_batch: int, batches: int) -> None:
    from runner.demo import write_demo_files

    write_demo_files(folder, events=per_batch * batches, files=batches, poison_every=500)


def _java(spec: str) -> dict[str, Any]:
    """``LABEL=JAVA_HOME`` (or ``""``: the environment's JVM) as label, home and release."""
    label, _, home = spec.partition("=") if "=" in spec else ("", "", spec)
    java = str(Path(home) / "bin" / "java") if home else (
        str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME")
        else "java")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise SystemExit(f"--java {spec!r}: cannot run {java}: {e}") from None
    found = re.search(r'version "(\d+)', out.stderr)
    if out.returncode != 0 or not found:
        raise SystemExit(f"--java {spec!r}: {java} -version failed: {out.stderr[-500:]}")
    version = int(found.group(1))
    return {"label": label or f"java{version}", "home": home or None, "version": version,
            "full": out.stderr.splitlines()[0]}


def _run(work: Path, src: Path, data: Path, size: int, engine: str, variant: str,
         java: dict[str, Any], args: Any) -> dict[str, Any]:
    root = work / f"run-{size}-{engine}-{java['label']}-{variant}"
    aot = work / f"{size}-{engine}-{java['label']}.aot"
    shutil.rmtree(root, ignore_errors=True)
    project = bench_project(root / "project", source=files_source(data, 1),
                            engine=engine, master=args.master)
    cfg = root / "cfg.json"
    cfg.write_text(json.dumps({"project": str(project), "variant": variant,
                               "warm_records": args.warm_records}), encoding="utf-8")
    env = run_env(src, spark_jars(args.jars)[0], bench=True)
    if java["home"]:
        env["JAVA_HOME"] = java["home"]
    flag = {"train": f"-XX:AOTCacheOutput={aot}", "aot": f"-XX:AOTCache={aot}"}.get(variant)
    if flag:  # the driver's JVM only (spark-submit's launcher JVM does not read it)
        env["SPARK_SUBMIT_OPTS"] = f"{env.get('SPARK_SUBMIT_OPTS', '')} {flag}".strip()
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "bench.cold_start", "--worker", str(cfg)],
                         capture_output=True, text=True, env=env, cwd=str(project), timeout=1800)
    wall = time.perf_counter() - started
    records = [json.loads(x[len(_PREFIX):]) for x in out.stdout.splitlines()
               if x.startswith(_PREFIX)]
    batches = [r for r in records if r["kind"] == "batch"]
    if out.returncode != 0 or len(batches) < 2:
        raise SystemExit(f"{variant} run failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    if variant == "train" and not aot.is_file():
        raise SystemExit(f"the training run on {java['label']} wrote no cache {aot}:\n"
                         f"{out.stderr[-3000:]}")
    warm = next((r for r in records if r["kind"] == "warm"), None)
    shutil.rmtree(root, ignore_errors=True)
    return {"variant": variant, "java": java["label"], "wall_s": wall, "batches": batches,
            "warm_s": warm["seconds"] if warm else None}


def summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scenario, JVM and variant, the medians over rounds."""
    rows = []
    scenarios = sorted({(r["per_batch"], r["engine"]) for r in runs}, key=lambda x: (-x[0], x[1]))
    javas = list(dict.fromkeys(_java_of(r) for r in runs))
    for (size, engine), java, variant in [(s, j, v) for s in scenarios for j in javas
                                          for v in VARIANTS]:
        mine = [r for r in runs if (r["per_batch"], r["engine"], _java_of(r), r["variant"])
                == (size, engine, java, variant)]
        if not mine:
            continue

        def med(fn: Any, of: list[dict[str, Any]] = mine) -> float:
            return float(statistics.median(fn(r) for r in of))

        def later(r: dict[str, Any], key: str) -> float:
            return float(statistics.median(b[key] for b in r["batches"][1:]))

        rows.append({
            "per_batch": size, "engine": engine, "java": java, "variant": variant,
            "rounds": len(mine), "wall_s": med(lambda r: r["wall_s"]),
            "first_s": med(lambda r: r["batches"][0]["seconds"]),
            "later_s": med(lambda r: later(r, "seconds")),
            "ratio": med(lambda r: r["batches"][0]["seconds"] / later(r, "seconds")),
            "first_end_s": med(lambda r: r["batches"][0]["since_query_s"]),
            "jit_first_ms": med(lambda r: r["batches"][0]["jit_ms"]),
            "jit_later_ms": med(lambda r: later(r, "jit_ms")),
            "classes_first": med(lambda r: r["batches"][0]["classes"]),
            "codegen_first": med(lambda r: r["batches"][0]["codegen"]),
            "codegen_first_ms": med(lambda r: r["batches"][0]["codegen_ms"]),
            "codegen_later": med(lambda r: later(r, "codegen")),
            "warm_s": (med(lambda r: r["warm_s"]) if variant == "warm" else None),
        })
    return rows


def _java_of(run: dict[str, Any]) -> str:
    """The run's JVM label; results written before ``--java`` ran the environment's."""
    return str(run.get("java", "the environment's JVM"))


def report(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["", "| events/batch | engine | JVM | variant | process s | first batch s "
             "| later s (median) | first / later | query start to first batch's end s "
             "| warm-up s | JIT ms first / later | classes loaded, first "
             "| codegen compiles first (ms) / later |",
             "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        warm = f"{r['warm_s']:.2f}" if r["warm_s"] is not None else "-"
        lines.append(f"| {r['per_batch']:,} | {r['engine']} | {r['java']} | {r['variant']} | "
                     f"{r['wall_s']:.1f} | {r['first_s']:.2f} | {r['later_s']:.2f} | "
                     f"{r['ratio']:.1f}x | {r['first_end_s']:.2f} | {warm} | "
                     f"{r['jit_first_ms']:,.0f} / {r['jit_later_ms']:,.0f} | "
                     f"{r['classes_first']:,.0f} | {r['codegen_first']:.0f} "
                     f"({r['codegen_first_ms']:,.0f}) / {r['codegen_later']:.0f} |")
    return lines


def docs_rows(d: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The docs' table (``bench.report``): the command, then (figure, value) rows."""
    a, rows = d["args"], []
    javas = {j["label"]: j["full"] for j in d.get("javas", [])}
    for r in d["summary"]:
        java = r.get("java", "")
        what = (f"{r['per_batch']:,} events a batch, `{r['engine']}`"
                + (f", {java}" if java in javas else "") + f", {r['variant']}")
        warm = (f"; warm-up {r['warm_s']:.2f} s before the query" if r["warm_s"] is not None
                else "")
        process = f"; whole process {r['wall_s']:.1f} s" if "wall_s" in r else ""
        rows.append((f"{what}: first batch / median of the later ones",
                     f"{r['first_s']:.2f} s / {r['later_s']:.2f} s = {r['ratio']:.1f}x; "
                     f"query start to the first batch's end {r['first_end_s']:.2f} s{warm}"
                     f"{process}"))
        rows.append((f"{what}: in the first batch / a later one",
                     f"JIT compiler {r['jit_first_ms'] / 1000:.1f} s / "
                     f"{r['jit_later_ms'] / 1000:.1f} s; {r['classes_first']:,.0f} classes "
                     f"loaded; {r['codegen_first']:.0f} generated classes compiled "
                     f"({r['codegen_first_ms'] / 1000:.1f} s) / {r['codegen_later']:.0f}"))
    for t in d.get("aot_trainings", []):
        rows.append((f"{t['per_batch']:,} events a batch, `{t['engine']}`, {t['java']}: the "
                     "ahead-of-time cache's training run", f"{t['wall_s']:.1f} s, once"))
    for label, full in javas.items():
        rows.append((f"JVM {label}", full))
    java_args = "".join(f" --java {j['label']}=<its JAVA_HOME>"
                        for j in d.get("javas", []) if j["home"])
    variants = f" --variants {a['variants']}" if a.get("variants", "cold,warm") != "cold,warm" \
        else ""
    return (f"`python -m bench.cold_start --per-batch {a['per_batch']} --engine {a['engine']} "
            f"--batches {a['batches']} --rounds {a['rounds']}{variants}{java_args}`"), rows


# ---- the worker: one runner run in this process ----------------------------------------------

def _emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(_PREFIX + json.dumps(doc) + "\n")
    sys.stdout.flush()


def _counters() -> dict[str, float]:
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    assert jvm is not None
    mx = jvm.java.lang.management.ManagementFactory
    codegen = jvm.org.apache.spark.metrics.source.CodegenMetrics
    compile_ms = codegen.METRIC_COMPILATION_TIME()
    return {"jit_ms": mx.getCompilationMXBean().getTotalCompilationTime(),
            "classes": mx.getClassLoadingMXBean().getTotalLoadedClassCount(),
            "gc_ms": sum(b.getCollectionTime() for b in mx.getGarbageCollectorMXBeans()),
            "codegen": compile_ms.getCount(),
            "codegen_ms": sum(compile_ms.getSnapshot().getValues())}


def worker(cfg: dict[str, Any]) -> int:
    from runner.build import compile_project
    from runner.project.loader import load_project
    from runner.runtime.start import query as query_mod
    from runner.runtime.start.stream import run_stream

    run_batch = getattr(query_mod, "run_batch")  # noqa: B009 - wrapped below
    prepare = getattr(query_mod, "prepare")  # noqa: B009 - wrapped below
    clock: dict[str, float] = {}

    def timed_batch(bp: Any, df: Any, batch_id: int, *a: Any, **k: Any) -> Any:
        before, t0 = _counters(), time.perf_counter()
        result = run_batch(bp, df, batch_id, *a, **k)
        after, t1 = _counters(), time.perf_counter()
        _emit({"kind": "batch", "batch_id": batch_id, "seconds": t1 - t0,
               "since_query_s": t1 - clock["query"],
               **{k: after[k] - before[k] for k in after}})
        return result

    def warm_prepare(bp: Any) -> None:
        prepare(bp)
        clock["query"] = time.perf_counter()
        if cfg["variant"] == "warm":
            t0 = time.perf_counter()
            _warm_up(bp, cfg["warm_records"])
            _emit({"kind": "warm", "seconds": time.perf_counter() - t0})

    setattr(query_mod, "run_batch", timed_batch)  # noqa: B010 - the query calls it by name
    setattr(query_mod, "prepare", warm_prepare)  # noqa: B010
    project = load_project(Path(cfg["project"]))
    run_stream(project, compile_project(project).plan, mode="available_now",
               trigger="1 second")
    return 0


def _warm_up(bp: Any, records: int) -> None:
    """The batch's Spark work on ``records`` example lines, into ``noop``, in a new session.
    A model that cannot run here (it joins a seed or source the batch pins) is left out."""
    from pyspark.sql import SparkSession

    from runner.compile.reads import PARSED_EVENTS
    from runner.demo import event_lines
    from runner.runtime.batches.parse import parse_batch
    from runner.runtime.batches.sql_guard import checked_query

    active = SparkSession.getActiveSession()
    assert active is not None
    spark = active.newSession()
    meta = tuple(bp.metadata_columns)
    rows = [(line, *["warm-up"] * len(meta)) for line in
            event_lines(records, start_id=0, poison_every=50)]
    raw = spark.createDataFrame(rows, ", ".join(["value STRING", *[f"{m} STRING" for m in meta]]))
    parsed = parse_batch(raw, schema_ddl=bp.plan.schema_ddl, batch_id=0, metadata_columns=meta,
                         fields=bp.parse_fields, valid_metadata=bp.models_read_metadata)
    parsed.persist()
    try:
        parsed.frame.write.format("noop").mode("overwrite").save()
        parsed.valid.createOrReplaceTempView(PARSED_EVENTS)
        for step in bp.plan.steps:
            try:
                frame = spark.sql(checked_query(spark, step.sql))
            except Exception:  # noqa: BLE001 - a lookup the warm-up does not register
                continue
            frame.createOrReplaceTempView(step.name)
            frame.write.format("noop").mode("overwrite").save()
        parsed.dead.write.format("noop").mode("overwrite").save()
    finally:
        parsed.frame.unpersist()


if __name__ == "__main__":
    raise SystemExit(main())
