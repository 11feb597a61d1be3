"""Where a batch's parse time goes: the hand-written pattern's ``from_json`` against the runner's parse.

A companion to ``bench.stream_bench`` (which times whole processes): here ONE warm SparkSession
times the pieces of one micro-batch on the same input, so start-up and the noisy machine
matter less. The raw lines of ``--files`` demo files are cached first (reading them is not
what is measured); then, after one warm-up round, interleaved over ``--repeat`` rounds, each case runs as a Spark job
and reports wall seconds and the JVM's CPU seconds (``/proc/<jvm>/stat``; a busy machine
inflates the first, much less the second):

plain           ``from_json(value, schema)`` -> ``e.*`` -> noop write (the hand-written pattern's parse)
plain+strict    the same with the runner's JSON options and corrupt-record column
plain+trailing  plus the runner's "text after the closing brace" check (rtrim + endswith)
plain+notnull   plus a NOT NULL flag (record, eventId or timestamp null)
plain+barrier   plus ``spark_partition_id()`` in the parsing projection (the runner's
                optimizer barrier that keeps filters from re-running from_json)
plain+metadata  plus ``_batch_id`` and ``_source_file`` columns
runner.valid    ``runner.runtime.batches.parse.parse_batch(...).valid`` -> noop (valid rows only)
runner.frame    ``parse_batch(...).frame`` -> noop (the frame the runner persists: parsed
                fields, dead flag, corrupt flag, raw text of dead rows, metadata columns)
runner.pruned   ``parse_batch(..., fields=<fields the example models read>).frame`` (when
                this runner version has ``fields``)
fill:plain      persist + count of ``plain`` (the cache fill of the hand-written pattern)
fill:plain+metadata  the same with ``_batch_id`` and ``_source_file`` in the cached rows
fill:runner-nometa   persist + count of the runner's frame without metadata columns
fill:runner     persist + count of ``runner.frame`` (the runner's cache fill)
fill:runner-uncompressed  the same with ``spark.sql.inMemoryColumnarStorage.compressed=false``
                (what ``runner.runtime.batches.batch.prepare`` sets unless project.yml sets it)
fill:runner-one-read      ``fill:runner`` without the record's second read, as an array's
                element (``parse.as_element`` replaced by a constant ``[{}]``): what the
                checks it serves cost, text after the object and wrapped epoch seconds;
                diagnostic only, the runner never skips them
dead:runner     after ``fill:runner``: the dead-letter frame -> noop (the runner's extra pass)

Usage::

    .venv/bin/python -m bench.parse_profile                 # 250k events, 3 rounds
    .venv/bin/python -m bench.parse_profile --events 100000 --repeat 2

Results: ``bench/results/parse_profile-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import inspect
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import bench_parser, example_config, write_result
from bench.processes import cpu_seconds


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=250_000, files=10, master=True, json=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from pyspark.sql import functions as F

    from runner.demo import write_demo_files
    from runner.runtime.batches.parse import JSON_OPTIONS, parse_batch, parse_schema
    from runner.runtime.client.session import build_session
    from runner.sources.files import BLANK_CHARS

    ddl = example_config()["schema"]
    tmp = Path(tempfile.mkdtemp(prefix="runner-parse-profile-"))
    try:
        write_demo_files(tmp / "data", events=args.events, files=args.files, poison_every=0)
        spark = build_session(master=args.master, app_name="parse-profile",
                              log_dir=str(tmp / "logs"))
        jvm_pid = spark.sparkContext._gateway.proc.pid
        raw = (spark.read.format("text").load(str(tmp / "data"))
               .select(F.col("value"), F.col("_metadata.file_path").alias("_source_file"))
               .filter(F.trim(F.col("value"), F.lit(BLANK_CHARS)) != "")
               .repartition(2 * args.files)  # the files source reads about a task per file
               .persist())
        n = raw.count()
        schema = parse_schema(ddl)
        plain = raw.select(F.from_json("value", schema).alias("e")).select("e.*")
        strict_schema = schema.add("__corrupt", "string")
        strict = raw.select(F.from_json("value", strict_schema, {
            **JSON_OPTIONS, "columnNameOfCorruptRecord": "__corrupt"}).alias("e")).select("e.*")

        # The runner's additions, one at a time, on top of the plain parse.
        e = F.from_json("value", schema).alias("e")
        fields = [F.col("e").getField(f.name).alias(f.name) for f in schema.fields]
        trailing = raw.select(e, F.col("value")).select(
            *fields, (~F.endswith(F.rtrim("value", F.lit(" \t\r\n")), F.lit("}")))
            .alias("trailing"))
        notnull = raw.select(e).select(
            *fields, (F.col("e").isNull() | F.col("e.eventId").isNull()
                      | F.col("e.timestamp").isNull()).alias("dead"))
        barrier = raw.select(e, F.spark_partition_id().alias("p")).select(
            *fields, (F.col("p") < 0).alias("dead"))
        with_meta = raw.select(e, "_source_file").select(
            *fields, F.lit(0).cast("bigint").alias("_batch_id"), "_source_file")

        def runner_parse(**extra: Any) -> Any:
            return parse_batch(raw, schema_ddl=ddl, batch_id=0,
                               metadata_columns=("_source_file",), **extra)

        has_fields = "fields" in inspect.signature(parse_batch).parameters
        used = ("eventId", "timestamp", "user", "request", "errors")  # the example models' reads

        def noop(df: Any) -> Callable[[], None]:
            return lambda: df.write.format("noop").mode("overwrite").save()

        def fill(df: Any) -> Callable[[], None]:
            def run() -> None:
                df.persist()
                df.count()
            return run

        cases: dict[str, Callable[[], None]] = {
            "plain": noop(plain),
            "plain+strict": noop(strict),
            "plain+trailing": noop(trailing),
            "plain+notnull": noop(notnull),
            "plain+barrier": noop(barrier),
            "plain+metadata": noop(with_meta),
            "runner.valid": noop(runner_parse().valid),
            "runner.frame": noop(runner_parse().frame),
        }
        if has_fields:
            cases["runner.pruned"] = noop(runner_parse(fields=used).frame)
        cases["fill:plain"] = fill(plain)
        cases["fill:plain+metadata"] = fill(with_meta)
        cases["fill:runner-nometa"] = fill(parse_batch(
            raw.select("value"), schema_ddl=ddl, batch_id=0, metadata_columns=()).frame)
        import runner.runtime.batches.parse as parse_mod

        def uncompressed(df: Any) -> Callable[[], None]:
            def run() -> None:
                key = "spark.sql.inMemoryColumnarStorage.compressed"
                spark.conf.set(key, "false")
                try:
                    fill(df)()
                finally:
                    spark.conf.unset(key)
            return run

        real_read = getattr(parse_mod, "as_element")  # noqa: B009 - patched below
        parse_mod._expressions.cache_clear()
        setattr(parse_mod, "as_element", lambda raw: F.lit("[{}]"))  # noqa: B010
        try:
            one_read = runner_parse().frame
        finally:
            setattr(parse_mod, "as_element", real_read)  # noqa: B010
            parse_mod._expressions.cache_clear()
        rp = runner_parse()
        cases["fill:runner"] = fill(rp.frame)
        # over a plan of its own (a filter that keeps every line): the same plan as rp.frame
        # would find rp.frame's cache (a projection of every column did: 0 MB filled)
        cases["fill:runner-uncompressed"] = uncompressed(parse_batch(
            raw.filter(F.length("value") >= 0), schema_ddl=ddl, batch_id=0,
            metadata_columns=("_source_file",)).frame)
        cases["fill:runner-one-read"] = fill(one_read)
        cases["dead:runner"] = noop(rp.dead)

        results: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in cases}
        sizes: dict[str, float] = {}
        def cached_mb() -> float:
            infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
            return sum(i.memSize() + i.diskSize() for i in infos) / 1e6

        for rnd in range(args.repeat + 1):  # round 0 warms the JVM up and is not recorded
            for name, run in cases.items():
                before = cached_mb()
                c0, t0 = cpu_seconds(jvm_pid), time.perf_counter()
                run()
                if rnd:
                    results[name]["wall"].append(time.perf_counter() - t0)
                    results[name]["cpu"].append(cpu_seconds(jvm_pid) - c0)
                if name.startswith("fill:"):
                    sizes[name] = cached_mb() - before
                if name == "dead:runner":  # the next round fills again: drop every cache,
                    spark.catalog.clearCache()  # then cache the raw lines again (unmeasured)
                    raw.persist().count()
        spark.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    base = statistics.median(results["plain"]["cpu"])
    print(f"\n## Parse profile: {n:,} events in one warm session, {args.master}, "
          f"median of {args.repeat}\n")
    print("| case | wall s | JVM CPU s | CPU vs plain | cached MB |")
    print("|---|---:|---:|---:|---:|")
    for name, r in results.items():
        cpu = statistics.median(r["cpu"])
        size = f"{sizes[name]:.0f}" if name in sizes else ""
        print(f"| {name} | {statistics.median(r['wall']):.2f} | {cpu:.2f} | "
              f"{cpu / base:.2f}x | {size} |")
    print(f"\nload average at end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    write_result(__file__, {"events": n, "args": vars(args), "results": results,
                            "cached_mb": sizes, "python": sys.version.split()[0]}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
