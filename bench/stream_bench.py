"""Throughput of ``runner stream`` against the hand-written pattern it replaces.

One command generates example-shaped events once (``runner.demo.write_demo_files``: the example
project's shape, no poison lines) and runs every variant AS A WHOLE PROCESS (interpreter, JVM
and SparkSession start included), interleaved over ``--rounds`` rounds with the order rotated,
because the machine is shared and noisy:

floor
    Spark floor: ``readStream.text`` -> ``from_json`` with every field of the example schema ->
    ``format("noop")``, ``availableNow``. The cost of reading and parsing, nothing else.
hand
    The hand-written pattern: one query, one ``foreachBatch``: parse once
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
    ``hand`` on the runner's own parse (``runner.runtime.batches.parse.parse_batch``: dead-letter flags,
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

Same for all: ``build_session`` from ``runner.runtime.client.session`` (UTC, loopback, quiet logs, 2 x
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
    .venv/bin/python -m bench.stream_bench --variants hand,hand-par,hand-rparse,runner

``--set engines`` (``floor,hand,runner,hand-spark,runner-spark``) also reports each runner
variant against the hand-written pattern ON ITS OWN ENGINE, per round (``runner`` / ``hand``,
``runner-spark`` / ``hand-spark``): the throughput target (at most 0.9x).

Raw results go to ``bench/results/stream_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    bench_parser,
    demo_data,
    example_config,
    example_project,
    git_state,
    progress_record,
    run_env,
    snapshot_runner,
    spark_conf,
    spark_jars,
    spark_machine,
    tables_and_columns,
    tree_digest,
    write_result,
)
from bench.processes import TreeSampler
from bench.stream_report import Run, report
from bench.stream_workers import EVENT_PREFIX, TABLES, WORKERS

MAIN_VARIANTS = ("floor", "hand", "naive", "runner")
PRODUCTION_VARIANTS = ("floor", "hand-spark", "runner-spark", "runner")
ENGINE_VARIANTS = ("floor", "hand", "runner", "hand-spark", "runner-spark")
DIAG_VARIANTS = ("hand-par", "hand-rparse", "runner-prof", "runner-arrow")
#: ``--set`` name -> (variants, baseline of the ratios).
SETS = {"main": (MAIN_VARIANTS, "hand"), "production": (PRODUCTION_VARIANTS, "hand-spark"),
        "engines": (ENGINE_VARIANTS, "hand")}
#: Variants that run the ``runner stream`` CLI (also as ``NAME@REF``) -> their delta.engine.
RUNNER_CLI_ENGINES = {"runner": "rs", "runner-spark": "spark"}



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
    worker = [sys.executable, "-m", "bench.stream_workers", variant, str(out / "cfg.json")]
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
            doc = progress_record(line.strip().removeprefix(EVENT_PREFIX))
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
        run.counts, run.columns = tables_and_columns(warehouse, TABLES)
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
    args = ap.parse_args(argv)

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
    meta = demo_data(workdir / "data", args.events, args.files)
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
    write_result(__file__, {"args": vars(args), "data": meta, "machine": spark_machine(), "git": gs,
                            "runs": [r.to_json() for r in runs], "report": text}, args.json)
    failed = [r for r in runs if r.rc != 0 or (r.counts and r.counts != meta["expected"])]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
