"""A CDC model's sink, written directly (no stream): several changes of one key in a batch, a
late change older than a delete, a NULL sequence value; on both engines, read back with
deltalake."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import NullSequenceError
from runner.sinks import SinkSpec, make_writer
from tests.support.cdc import table_rows

SCHEMA = "id STRING, seq BIGINT, op STRING, name STRING, amount INT"


def _spec(tmp_path: Path) -> SinkSpec:
    return SinkSpec(model="customers", path=str(tmp_path / "customers"), app_id="p.customers.q",
                    materialized="merge", unique_key=("id",), sequence_by="seq",
                    apply_as_deletes="op = 'd'")


def test_latest_wins_deletes_stick_and_replays_are_skipped(tmp_path, spark, delta_engine):
    writer = make_writer(delta_engine, spark)
    spec = _spec(tmp_path)
    batches = [
        [("a", 2, "u", "a2", 2), ("a", 1, "c", "a1", 1), ("b", 1, "c", "b1", 1),
         ("b", 1, "c", "b1", 1), ("c", 5, "d", None, None)],     # c: deleted before it exists
        [("b", 3, "d", None, None), ("c", 4, "c", "c4", 4), ("d", 1, "c", "d1", 1)],
        [("b", 2, "u", "late", 9), ("a", 3, "u", "a3", 3), ("c", 6, "c", "c6", 6)],
    ]
    for batch_id, rows in enumerate(batches):
        writer.write(spec, spark.createDataFrame(rows, SCHEMA), batch_id)
    replay = writer.write(spec, spark.createDataFrame(batches[2], SCHEMA), 2)
    assert replay.skipped
    rows = table_rows(Path(spec.path))
    assert {k: (r["seq"], r["name"]) for k, r in rows.items()} == {
        "a": (3, "a3"), "c": (6, "c6"), "d": (1, "d1")}  # b: its late update stays deleted
    assert set(next(iter(rows.values()))) == {"id", "seq", "op", "name", "amount"}


def test_null_sequence_fails_the_model_before_anything_is_written(tmp_path, spark,
                                                                   delta_engine):
    writer = make_writer(delta_engine, spark)
    spec = _spec(tmp_path)
    df = spark.createDataFrame([("a", 1, "c", "a", 1), ("a", None, "u", "b", 2)], SCHEMA)
    with pytest.raises(NullSequenceError, match="model customers: .* NULL sequence_by"):
        writer.write(spec, df, 0)
    assert not (tmp_path / "customers").exists()
