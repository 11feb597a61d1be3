"""Tables kept open between batches (runner/sinks/open_tables.py): current at each look, and
never a dropped table's state for the table written again at the same path (that would answer
"committed" for batches the new table does not hold: data lost). delta-rs only, no Spark."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from runner.sinks import RsWriter, SinkSpec
from runner.sinks.open_tables import OpenTables

ROWS = pa.table({"k": ["a"], "n": [1]})


def commit(path: Path, batch_id: int | None, app_id: str = "app") -> None:
    txn = [] if batch_id is None else [Transaction(app_id=app_id, version=batch_id)]
    write_deltalake(str(path), ROWS, mode="append",
                    commit_properties=CommitProperties(app_transactions=txn))


def test_no_table_then_the_table_then_other_writers_commits(tmp_path: Path):
    tables, path = OpenTables(), tmp_path / "t"
    assert tables.get(str(path)) is None
    commit(path, 0)
    first = tables.get(str(path))
    assert first is not None and first.version() == 0
    commit(path, 1)  # another writer, through its own object
    again = tables.get(str(path))
    assert again is first  # kept open, brought up to date
    assert (again.version(), again.transaction_version("app")) == (1, 1)


def test_a_dropped_and_rewritten_table_is_opened_afresh(tmp_path: Path):
    """The new table has more commits than the old one had: an incremental update of the old
    state would read the new table's later commits on top of it and still hold batch 1."""
    tables, path = OpenTables(), tmp_path / "t"
    for b in range(2):
        commit(path, b)
    assert tables.get(str(path)).transaction_version("app") == 1  # type: ignore[union-attr]
    shutil.rmtree(path)  # dropped behind the cache's back (not through forget)
    for _ in range(4):
        commit(path, None)
    table = tables.get(str(path))
    assert table is not None
    assert (table.version(), table.transaction_version("app")) == (3, None)
    assert table.to_pyarrow_table().num_rows == 4


def test_the_writer_forgets_a_table_it_drops(tmp_path: Path):
    writer = RsWriter()
    spec = SinkSpec(model="m", path=str(tmp_path / "m"), app_id="app")
    writer.write(spec, ROWS, 0)
    writer.write(spec, ROWS, 1)
    assert writer.committed_version(spec) == 1
    writer.drop(spec)
    assert writer.committed_version(spec) is None
    result = writer.write(spec, ROWS, 0)  # batch 0 of a new checkpoint: written, not skipped
    assert (result.skipped, result.version) == (False, 0)
    assert DeltaTable(spec.path).to_pyarrow_table().num_rows == 1
