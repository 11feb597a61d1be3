"""Change data capture: an SCD 1 model against a hand-written foreachBatch MERGE, and the SCD 2
cost per batch as the table grows. One process, one SparkSession, the ``rs`` engine.

- ``scd1``: ``--changes`` changes over ``--keys`` keys (inserts, updates, deletes, late and
  duplicate changes: ``tests.support.cdc.change_log``) in ``--batches`` batches, written by the
  runner's writer for a CDC model (latest per key, tombstones, one MERGE) and by a hand-written
  foreachBatch function doing what such pipelines do (``row_number()`` latest per key,
  ``toArrow()``, one delta-rs MERGE with a delete clause and a sequence guard, no tombstones:
  a delete followed by an older late change brings the row back there, so its table is
  compared with the runner's only for the row count). Alternating order, after a warm-up
  round; the ratio is of medians within the run.
- ``scd2``: the same log through an SCD 2 model (history of ``name``), seconds per batch and
  the table's rows after each, to see whether a batch costs more as the history grows.

Wall time drifts with the machine's load (``loadavg`` is recorded). Usage::

    .venv/bin/python -m bench.cdc_bench --changes 1000000 --keys 100000 --batches 10

Results: ``bench/results/cdc_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import bench_parser, machine, write_result

SCHEMA = "id STRING, seq BIGINT, op STRING, name STRING, amount INT"


def _batches(spark: Any, log: list[dict], n: int) -> list[Any]:
    """The log cut into ``n`` equal batches, each a cached DataFrame (the model's output)."""
    from tests.support.cdc import cut

    frames = []
    for part in cut(log, f"even:{n}"):
        df = spark.createDataFrame([(c["id"], c["seq"], c["op"], c["name"], c["amount"])
                                    for c in part], SCHEMA).cache()
        df.count()
        frames.append(df)
    return frames


def _runner(frames: list[Any], path: Path, *, scd: int) -> list[float]:
    from runner.sinks import RsWriter, SinkSpec

    spec = SinkSpec(model="customers", path=str(path), app_id="bench.customers.q",
                    materialized="merge", unique_key=("id",), sequence_by="seq",
                    apply_as_deletes="op = 'd'", scd_type=2 if scd == 2 else 1,
                    track_history=("name",) if scd == 2 else None)
    writer = RsWriter(arrow_max_rows=10_000_000)
    seconds = []
    for batch_id, df in enumerate(frames):
        started = time.perf_counter()
        writer.write(spec, df, batch_id, rows_hint=df.count())
        seconds.append(time.perf_counter() - started)
    return seconds


def _hand_written(frames: list[Any], path: Path) -> list[float]:
    """What a hand-written foreachBatch does: latest per key, then one MERGE."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("id").orderBy(F.col("seq").desc(), (F.col("op") == "d").desc())
    seconds = []
    for df in frames:
        started = time.perf_counter()
        latest = (df.withColumn("rn", F.row_number().over(order)).filter("rn = 1")
                  .drop("rn").toArrow())
        if not (path / "_delta_log").is_dir():
            write_deltalake(str(path), latest.filter(pc.not_equal(latest["op"], "d")))
        else:
            (DeltaTable(str(path)).merge(latest, predicate="target.id = source.id",
                                         source_alias="source", target_alias="target")
             .when_matched_delete(predicate="source.op = 'd' AND source.seq >= target.seq")
             .when_matched_update_all(predicate="source.op <> 'd' AND source.seq > target.seq")
             .when_not_matched_insert_all(predicate="source.op <> 'd'")
             .execute())
        seconds.append(time.perf_counter() - started)
    return seconds


def _rows(path: Path) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_dataset().count_rows()


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, master=True, json=True)
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="measured rounds of scd1 (each both)")
    args = ap.parse_args(argv)

    from runner.runtime.client.session import build_session
    from tests.support.cdc import change_log, reference

    spark = build_session(master=args.master, app_name="cdc-bench")
    log = change_log(keys=args.keys, changes_per_key=args.changes / args.keys, seed=1)
    frames = _batches(spark, log, args.batches)
    root = Path(tempfile.mkdtemp(prefix="cdc-bench-"))
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds + 1):  # round 0 warms the JVM up
        for way in (("runner", "hand") if r % 2 else ("hand", "runner")):
            path = root / f"{way}-{r}"
            secs = _runner(frames, path, scd=1) if way == "runner" else \
                _hand_written(frames, path)
            print(f"round {r} {way}: {sum(secs):.2f} s ({len(log)} changes, "
                  f"{_rows(path)} rows)", flush=True)
            if r:
                runs.append({"way": way, "seconds": round(sum(secs), 3),
                             "per_batch": [round(s, 3) for s in secs], "rows": _rows(path)})
            shutil.rmtree(path)
    medians = {w: statistics.median(x["seconds"] for x in runs if x["way"] == w)
               for w in ("runner", "hand")}
    ratio = medians["runner"] / medians["hand"]
    print(f"scd1: runner {medians['runner']:.2f} s, hand-written {medians['hand']:.2f} s, "
          f"ratio {ratio:.2f}; live keys in the reference {len(reference(log))}")
    history = root / "scd2"
    scd2 = _runner(frames, history, scd=2)
    print("scd2 seconds per batch: " + ", ".join(f"{s:.2f}" for s in scd2)
          + f"; {_rows(history)} rows at the end")
    write_result(__file__, {
        "changes": len(log), "keys": args.keys, "batches": args.batches, "engine": "rs",
        "machine": machine(), "load": os.getloadavg(),
        "scd1": {"runs": runs, "median_runner_s": round(medians["runner"], 3),
                 "median_hand_s": round(medians["hand"], 3), "ratio": round(ratio, 3),
                 "live_keys_reference": len(reference(log))},
        "scd2": {"per_batch_s": [round(s, 3) for s in scd2], "rows_end": _rows(history)},
        "full_size_command": "python -m bench.cdc_bench --changes 1000000 --keys 100000 "
                             "--batches 10"}, args.json)
    shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
