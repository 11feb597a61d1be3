"""Enrichment: the runner's pinned, cached join against the hand-written stream-static join.

Events (``--events``, spread over ``--files`` files, ``--max-files`` per trigger) carry an
endpoint drawn from ``--dim-rows`` keys; a Delta dimension (written with delta-rs) maps every
key to an owner. Both variants run in ONE process and ONE SparkSession (``--master``), one after
the other, ``--rounds`` times with the order rotated (a shared, noisy machine: compare the ratio
within one run), each into a fresh warehouse and checkpoint, delta engine ``rs``:

hand
    ``readStream.text`` -> ``from_json`` -> ``foreachBatch``: read the dimension again (delta-rs
    -> Arrow -> ``createDataFrame``, what a stream-static join does: the latest version per
    batch), join, ``toArrow()``, ``write_deltalake(mode='append')`` with an application
    transaction.
runner
    ``run_stream`` (available-now) on a project whose model joins ``{{ source('ref', 'dim') }}``:
    the dimension is pinned per batch and read once per version (persisted, broadcast).
plain, hand-plain (diagnostics, ``--variants hand,runner,plain,hand-plain``)
    ``runner`` and ``hand`` minus the join (``owner`` a constant, no dimension read): each one's
    cost without enrichment, so that runner - plain and hand - hand-plain are what the
    enrichment costs each.

Both tables are checked to hold every event once, enriched.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import bench_parser, git_state, machine, write_project_yml, write_result

SCHEMA = "eventId STRING, timestamp TIMESTAMP, request STRUCT<endpoint: STRING, latency_ms: INT>"
MODEL = """SELECT e.eventId, e.request.endpoint AS endpoint, d.owner, e.request.latency_ms
FROM parsed_events e LEFT JOIN {{ source('ref', 'dim') }} d ON e.request.endpoint = d.endpoint
"""


def _data(root: Path, events: int, files: int, dim_rows: int) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    (root / "incoming").mkdir(parents=True)
    per = events // files
    for f in range(files):
        with open(root / "incoming" / f"part-{f:04d}.json", "w") as out:
            for i in range(f * per, (f + 1) * per):
                out.write(json.dumps({"eventId": f"e{i}", "timestamp": "2026-01-01T00:00:00Z",
                                      "request": {"endpoint": f"/e{(i * 7919) % dim_rows}",
                                                  "latency_ms": i % 1000}}) + "\n")
    write_deltalake(str(root / "dim"), pa.table({
        "endpoint": [f"/e{k}" for k in range(dim_rows)],
        "owner": [f"team-{k % 97}" for k in range(dim_rows)]}))


def _hand(spark: Any, root: Path, out: Path, max_files: int, join: bool = True) -> None:
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
    from pyspark.sql import functions as F

    table, app = str(out / "wh" / "enriched"), "hand-enriched"

    def batch(df: Any, batch_id: int) -> None:
        if DeltaTable.is_deltatable(table) and (
                DeltaTable(table).transaction_version(app) or -1) >= batch_id:
            return
        session = df.sparkSession
        parsed = df.select(F.from_json("value", SCHEMA).alias("e"))
        if join:
            dim = session.createDataFrame(
                DeltaTable(str(root / "dim")).to_pyarrow_dataset().to_table())
            joined = (parsed.join(dim, F.col("e.request.endpoint") == dim["endpoint"], "left")
                      .select(F.col("e.eventId").alias("eventId"), dim["endpoint"],
                              dim["owner"], F.col("e.request.latency_ms").alias("latency_ms")))
        else:
            joined = parsed.select(F.col("e.eventId").alias("eventId"),
                                   F.col("e.request.endpoint").alias("endpoint"),
                                   F.lit("x").alias("owner"),
                                   F.col("e.request.latency_ms").alias("latency_ms"))
        write_deltalake(table, joined.toArrow(), mode="append",
                        commit_properties=CommitProperties(
                            app_transactions=[Transaction(app_id=app, version=batch_id)]))

    q = (spark.readStream.option("maxFilesPerTrigger", max_files).text(str(root / "incoming"))
         .writeStream.option("checkpointLocation", str(out / "cp"))
         .foreachBatch(batch).trigger(availableNow=True).start())
    q.awaitTermination()


PLAIN = """SELECT e.eventId, e.request.endpoint AS endpoint, 'x' AS owner, e.request.latency_ms
FROM parsed_events e
"""


def _runner(root: Path, out: Path, max_files: int, model: str = MODEL) -> None:
    from runner.build import compile_project
    from runner.project.loader import load_project
    from runner.runtime.start.stream import run_stream

    proj = out / "proj"
    (proj / "models").mkdir(parents=True)
    write_project_yml(proj, yaml.safe_load(
        f"name: enrich_bench\nsource:\n  type: files\n  path: {root / 'incoming'}\n"
        f"  max_files_per_trigger: {max_files}\nschema: >-\n  {SCHEMA}\nwarehouse: "
        f"{out / 'wh'}\ncheckpoint: {out / 'cp'}\ndelta:\n  engine: rs\nspark:\n"
        f"  master: {os.environ.get('BENCH_MASTER', 'local[2]')}\n"))
    (proj / "models" / "enriched.sql").write_text(model)
    (proj / "models" / "sources.yml").write_text(
        f"sources:\n  - name: ref\n    tables:\n      - name: dim\n        path: {root / 'dim'}\n")
    project = load_project(proj)
    run_stream(project, compile_project(project).plan, mode="available_now", trigger="1 second")


def _check(table: Path, events: int) -> str | None:
    from deltalake import DeltaTable

    t = DeltaTable(str(table)).to_pyarrow_dataset().to_table(columns=["eventId", "owner"])
    ids = t.column("eventId").to_pylist()
    if len(ids) != events or len(set(ids)) != events:
        return f"{len(ids)} rows, {len(set(ids))} distinct, expected {events}"
    if t.column("owner").null_count:
        return f"{t.column('owner').null_count} rows not enriched"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=200_000, files=20, max_files=2, rounds=1, master=True,
                      json=True, workdir=True)
    ap.add_argument("--dim-rows", type=int, default=100_000, help="rows of the dimension")
    ap.add_argument("--variants", default="hand,runner", help="comma-separated: hand, runner, "
                    "plain, hand-plain")
    args = ap.parse_args(argv)
    os.environ["BENCH_MASTER"] = args.master
    from runner.runtime.client.session import build_session, stop_session

    work = args.workdir or Path(tempfile.mkdtemp(prefix="enrich-bench-"))
    started = time.perf_counter()
    _data(work / "data", args.events, args.files, args.dim_rows)
    events = args.events // args.files * args.files
    spark = build_session(master=args.master, app_name="enrich-bench",
                          log_dir=str(work / "logs"))
    runs: list[dict[str, Any]] = []
    try:
        for r in range(args.rounds):
            names = args.variants.split(",")
            order = names[r % len(names):] + names[:r % len(names)]
            for variant in order:
                out = work / f"{variant}-{r}"
                t0 = time.perf_counter()
                if variant.startswith("hand"):
                    _hand(spark, work / "data", out, args.max_files, variant == "hand")
                else:
                    _runner(work / "data", out, args.max_files,
                            PLAIN if variant == "plain" else MODEL)
                seconds = time.perf_counter() - t0
                problem = _check(out / "wh" / "enriched", events)
                runs.append({"variant": variant, "round": r, "seconds": round(seconds, 2),
                             "problem": problem})
                print(f"round {r} {variant}: {seconds:.1f} s" + (f" PROBLEM {problem}"
                                                                if problem else ""))
                shutil.rmtree(out, ignore_errors=True)
    finally:
        stop_session(spark)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    best = {v: min(x["seconds"] for x in runs if x["variant"] == v)
            for v in args.variants.split(",")}
    ratio = best["runner"] / best["hand"]
    report = (f"{events:,} events x {args.dim_rows:,}-row dimension, {args.files} files, "
              f"{args.max_files} per trigger, {args.master}: "
              + ", ".join(f"{v} {t:.1f} s" for v, t in best.items())
              + f" (best of {args.rounds}); runner/hand {ratio:.2f}; "
              f"bench wall {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f}")
    print(report)
    write_result(__file__, {"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs,
                            "best": best, "ratio": ratio, "machine": machine(),
                            "git": git_state(), "report": report}, args.json)
    return 1 if any(x["problem"] for x in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
