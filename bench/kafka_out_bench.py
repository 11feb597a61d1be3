"""Kafka outputs: the runner's exactly-once producer against Spark's own Kafka sink.

One Apache Kafka KRaft node (:class:`tests.support.brokers.ApacheKafkaBroker`, the jars of
``.jars/kafka-broker``) and one SparkSession (``--master``, the spark-sql-kafka jars of
``--jars``). ``--events`` rows shaped like a Kafka model's (a key and four columns, the value
their JSON: ``to_json(struct(...))``) are computed and cached once; then, ``--rounds`` times,
the order alternated each round, each side writes them all to a fresh topic of
``--partitions`` partitions:

- ``spark``: ``df.write.format("kafka")`` (at-least-once: a retried task or a replayed batch
  writes its records again);
- ``runner``: :class:`runner.sinks.kafka_out.KafkaWriter` as ``runner stream`` runs it: the
  rows to the driver (``toArrow``), one transaction with the batch marker, committed.

Reported: seconds and rows/s per side, the wall ratio runner / spark (the issue's target:
within 1.5x), and whether a ``read_committed`` consumer counts every runner row once.

Usage::

    .venv/bin/python -m bench.kafka_out_bench --events 1000000 --rounds 3
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import (
    bench_parser,
    command_line,
    git_state,
    machine,
    median,
    span,
    spark_jars,
    write_result,
)


def _session(master: str, jars_dir: str | None) -> Any:
    from pyspark.sql import SparkSession

    folder, names = spark_jars(jars_dir)
    jars = ",".join(str(Path(folder) / n) for n in names if "kafka" in n or "commons-pool" in n
                    or "token-provider" in n)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return (SparkSession.builder.master(master).appName("kafka_out_bench")
            .config("spark.jars", jars).config("spark.ui.enabled", "false")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC").getOrCreate())


def _rows(spark: Any, events: int) -> Any:
    from pyspark.sql import functions as F

    df = spark.range(events).select(
        F.concat(F.lit("evt_"), F.col("id").cast("string")).alias("key"),
        F.concat(F.lit("evt_"), F.col("id").cast("string")).alias("eventId"),
        (F.col("id") % 97).alias("latency_ms"),
        F.element_at(F.array(*[F.lit(e) for e in ("/api/a", "/api/b", "/api/orders")]),
                     (F.col("id") % 3 + 1).cast("int")).alias("endpoint"),
        F.timestamp_seconds(F.col("id") + 1_700_000_000).alias("ts"))
    return df.cache()


def _spark_side(df: Any, bootstrap: str, topic: str) -> None:
    from pyspark.sql import functions as F

    (df.select(F.col("key"), F.to_json(F.struct("eventId", "latency_ms", "endpoint", "ts"))
               .alias("value"))
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).save())


def _runner_side(df: Any, bootstrap: str, topic: str) -> int:
    from runner.project.kafka_outputs import KafkaOutputs
    from runner.sinks.base import SinkSpec
    from runner.sinks.kafka_out import KafkaWriter

    writer = KafkaWriter(KafkaOutputs(bootstrap_servers=bootstrap))
    spec = SinkSpec(model="bench_out", path="-", app_id=f"bench.out.{uuid.uuid4().hex}",
                    materialized="kafka", topic=topic)
    try:
        return writer.write(spec, df, 0).rows
    finally:
        writer.close()


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, events=1_000_000, rounds=3, master=True, json=True, jars=True)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args(argv)
    from tests.support.brokers import ApacheKafkaBroker, apache_kafka_jars
    from tests.support.kafka_out import read_values

    jars = apache_kafka_jars()
    if jars is None:
        raise SystemExit("no Apache Kafka jars in .jars/kafka-broker (scripts/setup.sh)")
    runs: list[dict[str, Any]] = []
    with ApacheKafkaBroker(jars) as broker:
        bootstrap = broker.bootstrap
        spark = _session(args.master, args.jars)
        df = _rows(spark, args.events)
        df.count()  # the cache filled: both sides write the same computed rows
        _spark_side(df.limit(1000), bootstrap, _topic(bootstrap, 1))  # warm-up, untimed
        _runner_side(df.limit(1000), bootstrap, _topic(bootstrap, 1))
        for r in range(args.rounds):
            for side in (("spark", "runner") if r % 2 == 0 else ("runner", "spark")):
                topic = _topic(bootstrap, args.partitions)
                started = time.perf_counter()
                if side == "spark":
                    _spark_side(df, bootstrap, topic)
                else:
                    _runner_side(df, bootstrap, topic)
                seconds = time.perf_counter() - started
                run: dict[str, Any] = {"round": r, "side": side, "seconds": seconds,
                                       "rows_per_s": args.events / seconds}
                if side == "runner" and r == 0:
                    run["read_committed_rows"] = len(read_values(bootstrap, topic, timeout=120))
                runs.append(run)
                print(f"round {r} {side}: {seconds:.2f} s, {args.events / seconds:,.0f} rows/s")
        spark.stop()
    by = {s: median([x["seconds"] for x in runs if x["side"] == s]) for s in ("spark", "runner")}
    ratio = by["runner"] / by["spark"]
    print(f"runner / spark wall ratio: {ratio:.2f}")
    write_result(__file__, {"args": {**vars(args), "workdir": None, "json": None},
                            "git": git_state(), "machine": machine(), "runs": runs,
                            "median_s": by, "ratio": ratio}, args.json)
    return 0


def _topic(bootstrap: str, partitions: int) -> str:
    from tests.support.brokers import create_topic

    name = f"bench_out_{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name, partitions)
    return name


def docs_rows(d: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The docs' table (``bench.report``): the command, then (figure, value) rows."""
    a, runs = d["args"], d["runs"]
    rows = []
    for side, what in (("spark", "Spark's Kafka sink (`df.write.format(\"kafka\")`, "
                                 "at-least-once)"),
                       ("runner", "the runner's Kafka output (one transaction, exactly once)")):
        mine = [r for r in runs if r["side"] == side]
        rows.append((f"{a['events']:,} rows to a {a['partitions']}-partition topic, {what}, "
                     f"seconds / rows/s over {len(mine)} rounds",
                     f"{span([r['seconds'] for r in mine], ' s')} / "
                     f"{span([r['rows_per_s'] for r in mine], '', '{:,.0f}')}"))
    rows.append(("wall ratio runner / Spark's sink (medians; target within 1.5x)",
                 f"{d['ratio']:.2f}"))
    counted = [r["read_committed_rows"] for r in runs if "read_committed_rows" in r]
    if counted:
        rows.append(("rows a `read_committed` consumer counts in the runner's topic",
                     f"{counted[0]:,}" + ("" if counted[0] == a["events"] else " **wrong**")))
    return command_line("kafka_out_bench", ("events", a["events"]), ("rounds", a["rounds"])), rows


if __name__ == "__main__":
    raise SystemExit(main())
