"""Read tables by name from a Spark process of its own (issue 31's tests): what an analyst's
Spark session sees through the metastore, apart from the runner's.

``python -m tests.support.read_by_name thrift://HOST:PORT analytics.a analytics.b`` prints one
JSON document: ``{"analytics.a": {"columns": [...], "rows": [[...], ...]}, ...}`` with the rows
as strings, sorted; a name Spark cannot read maps to ``{"error": "..."}``. ``--ddl SQL`` runs a
statement first (a test creates a table the pipeline does not own).

With a Spark Connect URL instead (``sc://HOST:PORT``) it reads through a client session of its
own: the Connect server's catalog, as another client of that server sees it (no JVM here).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("uri")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--ddl", action="append", default=[])
    parser.add_argument("--storage", action="append", default=[],
                        help="a bucket URI whose settings (from the environment) Spark gets")
    args = parser.parse_args(argv)
    from runner.runtime.client.session import build_session
    from runner.spark_errors import first_line
    from runner.storage.settings import storage_settings

    remote = args.uri if args.uri.startswith("sc://") else None
    conf = {} if remote else {"spark.sql.catalogImplementation": "hive",
                              "spark.hadoop.hive.metastore.uris": args.uri,
                              "spark.sql.shuffle.partitions": "1"}
    for uri in args.storage:
        conf.update(storage_settings(uri, per_bucket=True).spark_conf())
    spark = build_session(master="local[1]", log_dir=tempfile.mkdtemp(prefix="read-by-name-"),
                          conf=conf, remote=remote)
    for statement in args.ddl:
        spark.sql(statement).collect()
    out: dict[str, object] = {}
    for name in args.names:
        try:
            frame = spark.table(name)
            rows = sorted([[None if v is None else str(v) for v in row] for row in
                           frame.collect()], key=lambda r: [x or "" for x in r])
            out[name] = {"columns": frame.columns, "rows": rows}
        except Exception as e:  # noqa: BLE001 - reported to the test, which says what it expected
            out[name] = {"error": first_line(e)}
    json.dump(out, sys.stdout)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
