"""The ``rs`` Delta writer at the Arrow level: real Delta tables, no Spark.

Tables are read back independently with deltalake + pyarrow, always through
``to_pyarrow_dataset().to_table(use_threads=False)`` (``to_pyarrow_table()`` makes the
interpreter abort at exit with deltalake 1.6.6 / pyarrow 26).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from runner.errors import ConfigError, SinkError
from runner.failpoints import FailpointError
from runner.sinks import RsWriter, SinkSpec, WriteResult, make_writer

UTC = dt.UTC


@pytest.fixture
def writer() -> RsWriter:
    return RsWriter()


def spec(tmp_path: Path, model: str = "m", **kwargs: Any) -> SinkSpec:
    kwargs.setdefault("app_id", f"pipe-{model}-q1")
    return SinkSpec(model=model, path=str(tmp_path / model), **kwargs)


def read(path: str, sort_by: str | list[str] | None = None) -> list[dict[str, Any]]:
    table = DeltaTable(path).to_pyarrow_dataset().to_table(use_threads=False)
    if sort_by:
        keys = [sort_by] if isinstance(sort_by, str) else sort_by
        table = table.sort_by([(k, "ascending") for k in keys])
    return table.to_pylist()


def events(*ids: int) -> pa.Table:
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "ts": pa.array([dt.datetime(2024, 5, 1, 12, i % 60, tzinfo=UTC) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "country": pa.array(["de" if i % 2 else "fr" for i in ids]),
    })


def counts(keys: list[str], ns: list[int], ts_minutes: list[int] | None = None) -> pa.Table:
    cols: dict[str, Any] = {"k": pa.array(keys), "n": pa.array(ns, pa.int64())}
    if ts_minutes is not None:
        cols["ts"] = pa.array([dt.datetime(2024, 5, 1, 0, m, tzinfo=UTC) for m in ts_minutes],
                              pa.timestamp("us", tz="UTC"))
    return pa.table(cols)




# -- append ---------------------------------------------------------------------------------


def test_append_creates_table_with_txn_and_utc_timestamps(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    result = writer.write(s, events(1, 2, 3), 0)
    assert result == WriteResult("m", 3, False, 0, result.seconds)
    table = DeltaTable(s.path)
    assert table.transaction_version(s.app_id) == 0
    assert writer.committed_version(s) == 0
    assert str(table.schema().fields[1].type) == 'PrimitiveType("timestamp")'
    rows = read(s.path, "id")
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert rows[0]["ts"] == dt.datetime(2024, 5, 1, 12, 1, tzinfo=UTC)
    commit = table.history(1)[0]
    assert commit["runner.app_id"] == s.app_id and commit["runner.batch_id"] == "0"


def test_replayed_batches_are_skipped_not_doubled(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    writer.write(s, events(1, 2), 0)
    replay0 = writer.write(s, events(1, 2), 0)
    assert replay0.skipped and replay0.rows == 0 and replay0.version is None
    assert writer.write(s, events(3), 1).version == 1
    assert writer.write(s, events(3), 1).skipped
    assert writer.write(s, events(9), 0).skipped  # a lower batch id too
    assert [r["id"] for r in read(s.path, "id")] == [1, 2, 3]
    assert DeltaTable(s.path).version() == 1


def test_another_app_id_is_not_skipped(writer: RsWriter, tmp_path: Path):
    first = spec(tmp_path, app_id="pipe-m-q1")
    writer.write(first, events(1), 5)
    second = spec(tmp_path, app_id="pipe-m-q2")  # a new checkpoint restarts at batch 0
    assert not writer.write(second, events(2), 0).skipped
    assert len(read(first.path)) == 2


def test_partition_by_makes_partition_columns(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, partition_by=["country"])
    writer.write(s, events(1, 2, 3), 0)
    writer.write(s, events(4), 1)
    table = DeltaTable(s.path)
    assert table.metadata().partition_columns == ["country"]
    assert sorted(p.name for p in Path(s.path).glob("country=*")) == ["country=de", "country=fr"]
    assert [r["id"] for r in read(s.path, "id")] == [1, 2, 3, 4]


def test_empty_batch_makes_no_commit(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    empty = events().slice(0, 0)
    result = writer.write(s, empty, 0)
    assert (result.rows, result.skipped, result.version) == (0, False, None)
    assert not DeltaTable.is_deltatable(s.path)
    writer.write(s, events(1), 1)
    writer.write(s, empty, 2)
    assert DeltaTable(s.path).version() == 0


def test_not_null_fields_become_nullable(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("tags", pa.list_(pa.field("t", pa.string(), nullable=False)))])
    writer.write(s, pa.table({"id": [1], "tags": [["a"]]}, schema=strict), 0)
    writer.write(s, pa.table({"id": pa.array([None], pa.int64()), "tags": [None]}), 1)
    assert len(read(s.path)) == 2


# -- merge ----------------------------------------------------------------------------------


def test_merge_inserts_then_updates(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"])
    assert writer.write(s, counts(["a", "b"], [1, 2]), 0).version == 0
    result = writer.write(s, counts(["b", "c"], [20, 30]), 1)
    assert (result.rows, result.skipped, result.version) == (2, False, 1)
    assert read(s.path, "k") == [{"k": "a", "n": 1}, {"k": "b", "n": 20}, {"k": "c", "n": 30}]
    assert DeltaTable(s.path).transaction_version(s.app_id) == 1
    assert DeltaTable(s.path).history(1)[0]["runner.batch_id"] == "1"


def test_accumulating_merge_update_is_exactly_once(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "target.n + source.n"})
    writer.write(s, counts(["a"], [1]), 0)
    writer.write(s, counts(["a", "b"], [2, 5]), 1)
    assert writer.write(s, counts(["a", "b"], [2, 5]), 1).skipped  # replay of batch 1
    assert writer.write(s, counts(["a"], [1]), 0).skipped  # replay of batch 0
    assert read(s.path, "k") == [{"k": "a", "n": 3}, {"k": "b", "n": 5}]


def test_merge_condition_guards_updates(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_condition="source.ts > target.ts")
    writer.write(s, counts(["a", "b"], [1, 1], ts_minutes=[10, 10]), 0)
    writer.write(s, counts(["a", "b", "c"], [2, 2, 2], ts_minutes=[5, 20, 1]), 1)
    rows = {r["k"]: (r["n"], r["ts"].minute) for r in read(s.path)}
    assert rows == {"a": (1, 10), "b": (2, 20), "c": (2, 1)}


def test_merge_update_leaves_unlisted_columns(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "source.n"}, merge_condition="source.ts > target.ts")
    writer.write(s, counts(["a"], [1], ts_minutes=[10]), 0)
    writer.write(s, counts(["a"], [7], ts_minutes=[5]), 1)  # older: no update
    writer.write(s, counts(["a"], [9], ts_minutes=[30]), 2)  # n only, ts kept
    assert [(r["n"], r["ts"].minute) for r in read(s.path)] == [(9, 10)]


def test_merge_without_merge_update_overwrites_non_key_columns(writer: RsWriter,
                                                               tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["k"])
    writer.write(s, counts(["a"], [1], ts_minutes=[10]), 0)
    writer.write(s, counts(["a"], [2], ts_minutes=[3]), 1)
    assert [(r["k"], r["n"], r["ts"].minute) for r in read(s.path)] == [("a", 2, 3)]


def test_composite_unique_key(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["day", "k"],
             merge_update={"n": "target.n + source.n"})
    batch = pa.table({"day": ["d1", "d1", "d2"], "k": ["a", "b", "a"], "n": [1, 1, 1]})
    writer.write(s, batch, 0)
    writer.write(s, batch.slice(0, 2), 1)
    assert [(r["day"], r["k"], r["n"]) for r in read(s.path, ["day", "k"])] == [
        ("d1", "a", 2), ("d1", "b", 2), ("d2", "a", 1)]


def test_null_key_matches_null_key(writer: RsWriter, tmp_path: Path):
    """Keys match null-safely (``<=>``): a NULL key accumulates into one row, not a new row
    per batch."""
    s = spec(tmp_path, materialized="merge", unique_key=["k"],
             merge_update={"n": "target.n + source.n"})
    for batch_id in range(3):
        writer.write(s, counts(["a", None], [1, 1]), batch_id)  # type: ignore[list-item]
    assert read(s.path, "k") == [{"k": "a", "n": 3}, {"k": None, "n": 3}]


def test_null_in_composite_key_matches(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["day", "k"])
    batch = pa.table({"day": ["d1", None, None], "k": [None, "a", None], "n": [1, 2, 3]})
    writer.write(s, batch, 0)
    writer.write(s, batch.set_column(2, "n", pa.array([10, 20, 30])), 1)
    rows = sorted((r["day"] or "", r["k"] or "", r["n"]) for r in read(s.path))
    assert rows == [("", "", 30), ("", "a", 20), ("d1", "", 10)]


def test_merge_predicate_is_null_safe_and_built_as_sql():
    from sqlglot import exp, parse_one

    from runner.sinks.base import merge_predicate

    text = merge_predicate(["day", "we`ird"])
    tree = parse_one(text, read="spark")
    pairs = [(c.this.sql(dialect="spark"), c.expression.sql(dialect="spark"))
             for c in tree.find_all(exp.NullSafeEQ)]
    assert pairs == [("target.`day`", "source.`day`"), ("target.`we``ird`", "source.`we``ird`")]


def test_merge_duplicate_key_names_model_and_key(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, model="daily_users", materialized="merge", unique_key=["user_id"])
    source = pa.table({"user_id": ["u1", "u42", "u42"], "n": [1, 2, 3]})
    with pytest.raises(SinkError) as err:
        writer.write(s, source, 3)
    assert str(err.value).startswith(
        "model daily_users: merge source has 2 rows for unique_key (user_id)='u42' in batch 3")
    assert not DeltaTable.is_deltatable(s.path)  # checked before anything was written


def test_merge_duplicate_composite_key(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["day", "k"])
    with pytest.raises(SinkError, match=r"\(day, k\)=\('d1', 7\)"):
        writer.write(s, pa.table({"day": ["d1", "d1"], "k": [7, 7]}), 0)


def test_merge_missing_key_column(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, materialized="merge", unique_key=["user_id"])
    with pytest.raises(SinkError, match="unique_key column.*user_id"):
        writer.write(s, pa.table({"id": [1]}), 0)


def test_bad_merge_update_expression_names_model(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path, model="totals", materialized="merge", unique_key=["k"],
             merge_update={"n": "target.nope + source.n"})
    writer.write(s, counts(["a"], [1]), 0)  # creates the table: no expression used
    with pytest.raises(SinkError, match="^model totals: merging batch 1") as err:
        writer.write(s, counts(["a"], [1]), 1)
    assert err.value.__cause__ is not None
    assert writer.committed_version(s) == 0


def test_merge_spec_needs_unique_key(tmp_path: Path):
    with pytest.raises(SinkError, match="model m: a merge model needs a unique_key"):
        spec(tmp_path, materialized="merge")


# -- table state ----------------------------------------------------------------------------


def test_foreign_app_ids(writer: RsWriter, tmp_path: Path):
    mine = spec(tmp_path, app_id="pipe-m-q2")
    assert writer.foreign_app_ids(mine) == set()
    assert writer.committed_version(mine) is None
    writer.write(spec(tmp_path, app_id="pipe-m-q1"), events(1), 0)
    write_deltalake(mine.path, events(2), mode="append")  # an untagged, non-runner commit
    writer.write(mine, events(3), 0)
    assert writer.foreign_app_ids(mine) == {"pipe-m-q1"}
    assert writer.foreign_app_ids(spec(tmp_path, app_id="pipe-m-q1")) == {"pipe-m-q2"}


def test_drop_removes_table(writer: RsWriter, tmp_path: Path):
    s = spec(tmp_path)
    writer.write(s, events(1), 0)
    writer.drop(s)
    assert not Path(s.path).exists()
    writer.drop(s)  # absent: no error
    assert not writer.write(s, events(1), 0).skipped


@pytest.mark.parametrize("materialized", ["append", "merge"])
def test_failpoint_after_commit_then_replay_is_skipped(writer: RsWriter, tmp_path: Path,
                                                       armed: Any, materialized: str):
    s = spec(tmp_path, model="orders", materialized=materialized,
             unique_key=("k",) if materialized == "merge" else ())
    writer.write(s, counts(["a"], [1]), 0)
    armed("sink.after_commit:orders@1=raise")
    with pytest.raises(FailpointError):
        writer.write(s, counts(["b"], [2]), 1)
    assert writer.committed_version(s) == 1  # the commit landed before the crash
    assert writer.write(s, counts(["b"], [2]), 1).skipped
    assert read(s.path, "k") == [{"k": "a", "n": 1}, {"k": "b", "n": 2}]


def test_failpoint_before_commit_leaves_nothing(writer: RsWriter, tmp_path: Path, armed: Any):
    s = spec(tmp_path, model="orders")
    writer.write(s, events(1), 0)
    armed("sink.before_commit:orders@1")
    with pytest.raises(FailpointError):
        writer.write(s, events(2), 1)
    assert writer.committed_version(s) == 0
    armed("")
    result = writer.write(s, events(2), 1)  # the replay writes it
    assert not result.skipped and result.version == 1


def test_make_writer_engines():
    assert make_writer("rs", None).engine == "rs"
    assert make_writer("auto", None).engine == "rs"
    with pytest.raises(ConfigError, match="delta-spark"):
        make_writer("spark", None)
    with pytest.raises(ConfigError, match="unknown delta.engine"):
        make_writer("duckdb", None)  # type: ignore[arg-type]


def test_arrow_max_rows_by_master_and_setting():
    from runner.sinks.rs import ARROW_MAX_ROWS, LOCAL_ARROW_MAX_ROWS, default_arrow_max_rows

    for master in ("local", "local[2]", "local[*]", " local[4] "):
        assert default_arrow_max_rows(master) == LOCAL_ARROW_MAX_ROWS
    for master in ("local-cluster[2,1,1024]", "spark://h:7077", "yarn", "k8s://x", None):
        assert default_arrow_max_rows(master) == ARROW_MAX_ROWS
    assert make_writer("rs", None).arrow_max_rows == ARROW_MAX_ROWS  # no session: cluster-safe
    assert make_writer("rs", None, arrow_max_rows=0).arrow_max_rows == 0  # project.yml wins
    assert make_writer("auto", None, arrow_max_rows=7).arrow_max_rows == 7
