"""Two changes of one key with one sequence value are resolved the same way in one batch and
across two batches, in either order, in SCD 1 and SCD 2, on both engines: a delete wins, else
the change whose other columns are greater (compared one by one in name order, NULL lowest:
runner/sinks/cdc.py ``tie_break_columns``). Written through the writers (no stream), read back
with deltalake.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.sinks import SinkSpec, make_writer
from tests.support.cdc import history_rows, table_rows

SCHEMA = "id STRING, seq BIGINT, op STRING, name STRING, amount INT"

#: Ties: a@2 ("x" against "y": name decides, amount being equal), b@3 (a create against a
#: delete), c@2 (amount 1 against NULL: NULL is lowest).
FIRST = [("a", 1, "c", "a1", 1), ("a", 2, "u", "x", 5), ("b", 3, "c", "b", 1),
         ("c", 1, "c", "c1", 1), ("c", 2, "u", "n", 1)]
SECOND = [("a", 2, "u", "y", 5), ("b", 3, "d", None, None), ("c", 2, "u", "n", None),
          ("c", 3, "u", "c3", 3)]
CUTS = {"one batch": [FIRST + SECOND], "first then second": [FIRST, SECOND],
        "second then first": [SECOND, FIRST]}


def _spec(path: Path, scd_type: int) -> SinkSpec:
    return SinkSpec(model="customers", path=str(path), app_id="p.customers.q",
                    materialized="merge", unique_key=("id",), sequence_by="seq",
                    apply_as_deletes="op = 'd'", scd_type=scd_type)  # type: ignore[arg-type]


@pytest.mark.parametrize("scd_type", [1, 2], ids=["scd1", "scd2"])
def test_same_key_same_sequence_resolves_alike_whatever_the_cut(tmp_path, spark, delta_engine,
                                                                scd_type) -> None:
    writer = make_writer(delta_engine, spark)
    results = {}
    for i, (name, batches) in enumerate(CUTS.items()):
        spec = _spec(tmp_path / f"cut{i}", scd_type)
        for batch_id, rows in enumerate(batches):
            writer.write(spec, spark.createDataFrame(rows, SCHEMA), batch_id)
        read = table_rows if scd_type == 1 else history_rows
        results[name] = {k: tuple(r[c] for c in ("seq", "op", "name", "amount") + (
            ("valid_from", "valid_to") if scd_type == 2 else ()))
            for k, r in read(Path(spec.path)).items()}
    expected = ({"a": (2, "u", "y", 5), "c": (3, "u", "c3", 3)} if scd_type == 1 else {
        ("a", 1): (1, "c", "a1", 1, 1, 2), ("a", 2): (2, "u", "y", 5, 2, None),
        ("c", 1): (1, "c", "c1", 1, 1, 2), ("c", 2): (2, "u", "n", 1, 2, 3),
        ("c", 3): (3, "u", "c3", 3, 3, None)})
    assert results == dict.fromkeys(CUTS, expected)
