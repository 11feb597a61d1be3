"""Memory and wall time of ``runner stream`` against Spark Declarative Pipelines on the same work.

The target: the runner's peak memory (whole process tree) at most SDP's on the same
work, at 3 and at 12 tables. One command generates example-shaped events once
(:func:`bench.common.demo_data`) and runs each variant AS A WHOLE PROCESS started by the bench,
at each ``--tables`` count, over ``--rounds`` rounds with the order of the variants rotated:

runner
    ``runner stream --available-now`` on a copy of the example project
    (:func:`bench.common.bench_project`: ``delta.engine: rs``, ``spark.master`` = ``--master``)
    whose ``source.path`` is the generated data, ``--max-files`` files per trigger. At 12 tables
    the example's three models are there 4 times: as they are and copied under new names
    (``request_logs_2``, ``request_logs_3``, ``request_logs_4``...), the same SQL.
sdp
    pyspark's own ``spark-pipelines run`` (``.venv/bin/spark-pipelines``, pyspark 4.2's
    ``pyspark.pipelines``) on a pipeline generated from the same project: a spec file
    (``spark-pipeline.yml``), one Python file defining two temporary views, ``parsed_events``
    (``readStream.format("text")`` on the same files, ``maxFilesPerTrigger`` = ``--max-files``,
    blank lines filtered out as the runner's files source does, ``from_json`` with
    project.yml's ``schema:``) and each seed (``endpoint_owners``: its CSV read with the column
    types its ``.yml`` declares), and one SQL file per model: ``CREATE STREAMING TABLE <model>
    USING delta AS <the SQL runner compile wrote to target/compiled/>`` with every read of
    ``parsed_events`` turned into ``STREAM(parsed_events)`` (through sqlglot's AST). A pipeline
    run with no refresh option is one triggered update: each streaming table's flow runs to
    the end of the files available (Spark's available-now) and the command exits.

How ``spark-pipelines`` runs here, offline: the script execs ``spark-submit`` with
``--remote local`` (our ``--remote local[2]`` replaces it: ``--master`` is refused beside
``--remote``); that JVM (SparkSubmit's PythonRunner, ``-Xmx1g``) starts
``pyspark/pipelines/cli.py``, which starts a second JVM, the real driver with the Spark Connect
server in it (:meth:`pyspark.sql.connect.session.SparkSession._start_connect_server`), the master
being the remote URL. The client needs Spark Connect's Python packages (``pyspark[pipelines]``:
grpcio, grpcio-status, googleapis-common-protos, zstandard), which the project's venv does not
hold: the bench puts ``--sdp-deps`` (default ``.sdp-deps``, filled once with ``pip install
--target .sdp-deps ...``, the command is printed when it is missing) on the SDP run's
``PYTHONPATH`` only. Static settings (jars, Delta's extension and catalog, the warehouse) reach
the driver JVM only through ``spark-defaults.conf`` (``SPARK_CONF_DIR``, written per run):
``--jars``/``--conf`` on the command line stay in the first JVM, and the spec's
``configuration:`` is set again per flow as SQL settings, where a static one fails.

Same for both: the data, ``--master`` (default ``local[2]``), ``SPARK_LOCAL_IP=127.0.0.1``,
the jars of ``--jars`` (default ``$RUNNER_JARS_DIR`` or ``.jars/spark``, as
``runner.runtime.client.session.spark_jars`` picks them) with Delta's SQL extension and catalog, the
runner's session defaults that matter for the work (``spark.sql.shuffle.partitions`` = 2 x
cores, delta-spark's ``snapshotPartitions`` likewise, UTC, ``TIMESTAMP_MICROS``, UI and
console progress off, loopback binding), Spark's default driver memory, ``--conf`` extra
settings (``--runner-conf``: the runner alone, to look for levers). The SDP run's settings
are written into its ``spark-defaults.conf``; the runner sets its own through
``build_session``.

What differs, by design of each tool (not settable to the same):

- Reads and parses: the runner reads the files once and parses once per batch for every
  model (one query, one ``foreachBatch``, the parsed batch cached); SDP inlines the temporary
  view into every streaming table's flow: N tables = N streaming queries, each reading and
  parsing every file, run concurrently by SDP's scheduler.
- Checkpoints: one for the runner; one per flow under SDP's ``storage``.
- Writes: the runner's ``rs`` engine writes each model's Parquet with Spark and commits with
  delta-rs (an application transaction per batch for idempotence); SDP writes through
  delta-spark (``USING delta``), tables registered in the session catalog with their data in
  ``spark.sql.warehouse.dir`` (a per-run folder).
- Dead letters: the runner's parse (``runner.runtime.batches.parse``) sends every record that is not
  a JSON object of the declared types (a NOT NULL field missing, a value Spark would convert,
  invalid UTF-8...) to its dead-letter table with its reason, in Spark expressions added to
  the one ``from_json``; SDP's view is the bare ``from_json`` (a malformed line would be a row
  of nulls, or a failed flow for a NOT NULL field). The generated data has no malformed
  lines, so both must hold the same rows. The runner also keeps its run record and its
  ledger under the checkpoint; SDP its event log.
- Seeds: the runner builds ``endpoint_owners`` from the CSV kept in its checkpoint, as an
  Arrow table (``runner.runtime.batches.pinned_lookups.seed_frame``: a local relation, no Python
  worker; a list of rows made PySpark fork workers that stayed up for the run, which this
  bench found); SDP's view reads the CSV with Spark's reader, in the JVM.
- Processes: the runner is one Python process and its one JVM; SDP is two JVMs (the
  spark-submit launcher that stays up for the run, and the driver) and the Python client.
  "JVM alone" below is the largest JVM of the tree (the driver in both); the tree's peak is
  the summed resident memory of every JVM and Python process of the tree, sampled every
  0.2 s (:class:`bench.processes.TreeSampler`).

Measured per run: wall, CPU seconds of the tree, peak of the tree's summed RSS, each
process's own peak (``VmHWM``); afterwards each table's rows (deltalake) against the expected
rows (from the generated files: a copy holds what its original holds) and its column names.
A run is ok when it exits 0 and every table holds the expected rows. Ratios runner / SDP per
round and table count, the median reported.

Usage::

    .venv/bin/python -m bench.sdp_bench --rounds 2 --tables 3,12
    .venv/bin/python -m bench.sdp_bench --events 100000 --rounds 1 --tables 3
    .venv/bin/python -m bench.sdp_bench --variants runner --tables 3 \\
        --runner-conf spark.memory.fraction=0.3       # a lever, on the runner alone

Raw results go to ``bench/results/sdp_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

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
    demo_data,
    example_config,
    git_state,
    run_env,
    snapshot_runner,
    spark_conf,
    spark_jars,
    spark_machine,
    tables_and_columns,
    tree_digest,
    write_result,
)
from bench.processes import TreeSampler, command_name
from bench.sdp_pipeline import (
    SDP_DEPS,
    compiled_sql,
    model_names,
    runner_project,
    sdp_deps_ok,
    sdp_project,
    sdp_session_conf,
)

VARIANTS = ("runner", "sdp")


class ProcessSampler(TreeSampler):
    """:class:`TreeSampler` that sees a JVM as ``jvm`` wherever it is in the tree (SDP's root
    process becomes the spark-submit JVM) and keeps each process's command name."""

    def __init__(self, root: int) -> None:
        super().__init__(root)
        self.names: dict[int, str] = {}

    def _role(self, pid: int) -> str:
        comm = command_name(pid)
        if comm:
            self.names[pid] = comm
        if comm == "java":
            return "jvm"
        if pid == self.root:
            return "driver" if comm and comm.startswith("python") else "other"
        return super()._role(pid)

    def processes(self) -> list[dict[str, Any]]:
        """Each process seen: command name, role, own peak MB, CPU seconds."""
        return [{"comm": self.names.get(p.pid, "?"), "role": p.role,
                 "peak_mb": round(p.hwm_kb / 1024, 1), "cpu_s": round(p.cpu_s, 2)}
                for p in sorted(self.procs.values(), key=lambda p: p.pid)]


def run_variant(variant: str, tables: int, rnd: int, *, workdir: Path, cfg: dict[str, Any],
                compiled: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run ``variant`` at ``tables`` tables once, as a whole process; what was measured."""
    out = workdir / "runs" / f"{variant}-{tables}-r{rnd}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    data = Path(cfg["data"])
    env = run_env(cfg["runner_src"], cfg["jars_dir"])
    if variant == "runner":
        project = runner_project(out / "project", data=data, tables=tables,
                                 max_files=cfg["max_files"], master=cfg["master"],
                                 conf={**cfg["conf"], **cfg["runner_conf"]})
        warehouse = project / "_warehouse"
        cmd = [sys.executable, "-m", "runner", "stream", "--available-now",
               "--project-dir", str(project)]
    else:
        warehouse = out / "warehouse"
        conf = sdp_session_conf(jars=cfg["jars"], master=cfg["master"], warehouse=warehouse,
                                extra=cfg["conf"])
        project = sdp_project(out / "pipeline", compiled=compiled, data=data,
                              max_files=cfg["max_files"], schema=cfg["schema"], conf=conf)
        env["PYTHONPATH"] = os.pathsep.join([cfg["sdp_deps"], env["PYTHONPATH"]])
        env["SPARK_CONF_DIR"] = str(project / "conf")
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        cmd = [str(Path(sys.executable).parent / "spark-pipelines"), "--remote", cfg["master"],
               "run", "--spec", str(project / "spark-pipeline.yml")]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with open(out / "stdout.log", "wb") as so, open(out / "stderr.log", "wb") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, env=env, cwd=str(out),
                                start_new_session=True)
        sampler = ProcessSampler(proc.pid)
        sampler.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # our own child's process group
            rc = proc.wait()
        wall = time.perf_counter() - started
        sampler.stop()
    names = list(model_names(tables))
    counts, columns = tables_and_columns(warehouse, names)
    expected = {n: cfg["expected"][m] for n, m in model_names(tables).items()}
    summary = sampler.summary()
    procs = sampler.processes()
    jvms = [p["peak_mb"] for p in procs if p["comm"] == "java"]
    stderr = (out / "stderr.log").read_text(encoding="utf-8", errors="replace")
    return {"variant": variant, "tables": tables, "round": rnd, "rc": rc,
            "wall_seconds": round(wall, 2), "cpu_seconds": round(summary["cpu_s"], 2),
            "tree_peak_mb": round(summary["tree_rss_peak_mb"], 1),
            "jvm_peak_mb": max(jvms, default=0.0), "jvms_peak_mb": jvms,
            "processes": procs, "memory": summary,
            "counts": counts, "expected": expected, "exact": counts == expected,
            "ok": rc == 0 and counts == expected, "columns": columns,
            "load": [load_before, os.getloadavg()[0]],
            "stderr_tail": "" if rc == 0 else stderr[-2000:]}


# ---- summary -------------------------------------------------------------------------------

#: Figure -> the run's key; the ratios taken runner / SDP.
FIGURES = {"wall": "wall_seconds", "cpu": "cpu_seconds", "tree_mb": "tree_peak_mb",
           "jvm_mb": "jvm_peak_mb"}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per table count: the medians of each variant and the runner / SDP ratios per round."""
    out: dict[str, Any] = {}
    for tables in sorted({r["tables"] for r in runs}):
        at = [r for r in runs if r["tables"] == tables]
        entry: dict[str, Any] = {"all_ok": all(r["ok"] for r in at)}
        for v in VARIANTS:
            ok = [r for r in at if r["variant"] == v and r["ok"]]
            if ok:
                entry[v] = {f: statistics.median(r[k] for r in ok) for f, k in FIGURES.items()}
                entry[v]["runs"] = len(ok)
        by = {(r["variant"], r["round"]): r for r in at if r["ok"]}
        rounds = sorted(k for v, k in by if v == "runner" and ("sdp", k) in by)
        if rounds:
            entry["ratios"] = {f: [by["runner", k][key] / by["sdp", k][key] for k in rounds]
                               for f, key in FIGURES.items()}
        out[str(tables)] = entry
    return out


def report(summary: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [f"{meta['events']:,} events in {meta['files']} files"]
    for tables, e in summary.items():
        lines.append(f"\n{tables} tables (every run exact: {'yes' if e['all_ok'] else 'NO'})")
        for v in VARIANTS:
            if v in e:
                m = e[v]
                lines.append(f"  {v:7} wall {m['wall']:7.1f} s  cpu {m['cpu']:7.1f} s  tree "
                             f"{m['tree_mb']:6.0f} MB  jvm {m['jvm_mb']:6.0f} MB "
                             f"(median of {m['runs']})")
        for f, xs in (e.get("ratios") or {}).items():
            lines.append(f"  runner/sdp {f:8} {statistics.median(xs):.2f}x  per round: "
                         + ", ".join(f"{x:.2f}" for x in xs))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=1_000_000, files=40, max_files=True, master=True,
                      conf=True, rounds=2, jars=True, workdir=True, timeout=1800, json=True)
    ap.add_argument("--tables", default="3,12",
                    help="table counts, comma list of multiples of 3 (default 3,12)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma list of runner, sdp (default both)")
    ap.add_argument("--runner-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for the runner's runs alone; repeatable")
    ap.add_argument("--sdp-deps", type=Path, default=REPO / ".sdp-deps",
                    help="folder holding Spark Connect's Python client packages (pip install "
                         "--target); on the SDP runs' PYTHONPATH only")
    args = ap.parse_args(argv)
    table_counts = [int(t) for t in args.tables.split(",") if t.strip()]
    for t in table_counts:
        model_names(t)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or set(variants) - set(VARIANTS):
        ap.error(f"--variants takes {', '.join(VARIANTS)}")
    if "sdp" in variants and not sdp_deps_ok(args.sdp_deps):
        ap.error(f"Spark Connect's client packages are not in {args.sdp_deps}: "
                 f"{Path(sys.executable).name} -m pip install --target {args.sdp_deps} "
                 + " ".join(f"'{d}'" for d in SDP_DEPS))
    args.jars, jars = spark_jars(args.jars)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="runner-sdp-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    meta = demo_data(workdir / "data", args.events, args.files)
    gs = git_state()
    src = snapshot_runner(workdir)
    gs["runner_snapshot_digest"] = tree_digest(src)
    gs["spark_jars"] = jars
    jars_dir = str(Path(args.jars).resolve()) if args.jars.strip() else ""
    from runner.runtime.client.session import spark_jars as session_jars

    cfg: dict[str, Any] = {
        "runner_src": str(src), "data": str((workdir / "data").resolve()),
        "max_files": args.max_files, "master": args.master, "conf": spark_conf(args.conf),
        "runner_conf": spark_conf(args.runner_conf), "schema": example_config()["schema"],
        "expected": meta["expected"], "jars_dir": jars_dir,
        "jars": session_jars(Path(jars_dir)) if jars_dir else [],
        "sdp_deps": str(args.sdp_deps.resolve())}
    compiled: dict[int, dict[str, str]] = {}
    for t in table_counts:  # the SQL the runner runs, rendered once per table count
        project = runner_project(workdir / "compile" / str(t), data=workdir / "data", tables=t,
                                 max_files=args.max_files, master=args.master, conf={})
        compiled[t] = compiled_sql(project, run_env(src, jars_dir))
    runs: list[dict[str, Any]] = []
    bench_started = time.perf_counter()
    try:
        for rnd in range(args.rounds):
            for t in table_counts:
                k = rnd % len(variants)
                for v in variants[k:] + variants[:k]:
                    print(f"round {rnd}, {t} tables: {v} ...", end=" ", flush=True)
                    run = run_variant(v, t, rnd, workdir=workdir, cfg=cfg,
                                      compiled=compiled[t], timeout=args.timeout)
                    runs.append(run)
                    status = "ok" if run["ok"] else (
                        f"FAILED rc={run['rc']}: {run['stderr_tail'][-600:]}" if run["rc"]
                        else f"WRONG COUNTS {run['counts']} != {run['expected']}")
                    print(f"{run['wall_seconds']:.1f} s, tree {run['tree_peak_mb']:.0f} MB, "
                          f"jvm {run['jvm_peak_mb']:.0f} MB, {status} (load "
                          f"{run['load'][0]:.1f} -> {run['load'][1]:.1f})", flush=True)
                    if args.workdir is None:
                        shutil.rmtree(workdir / "runs" / f"{v}-{t}-r{rnd}", ignore_errors=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    summary = summarize(runs)
    cols: dict[str, dict[str, list[str]]] = {}
    for r in runs:
        cols.setdefault(r["variant"], {}).update(r["columns"])
    same_columns = len(cols) < 2 or all(
        cols["sdp"].get(n) == c for n, c in cols.get("runner", {}).items())
    text = report(summary, meta) + (
        f"\ncolumns: {'the same' if same_columns else 'DIFFER'} in both variants' tables"
        f"\nbench wall time {time.perf_counter() - bench_started:.0f} s; load average at end "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine: compare "
        "ratios within one run)")
    print(text)
    args_doc = {**vars(args), "sdp_deps": str(args.sdp_deps)}
    write_result(__file__, {"args": args_doc, "data": meta, "machine": spark_machine(), "git": gs,
                            "summary": summary, "same_columns": same_columns,
                            "runs": runs, "report": text}, args.json)
    return 0 if all(r["ok"] for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
