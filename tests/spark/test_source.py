"""The files source, driven by real streaming queries (availableNow + foreachBatch)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from runner.errors import SourceError
from runner.sources.files import read_files_stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark


def _run(spark: SparkSession, incoming: Path, checkpoint: Path,
         max_files_per_trigger: int | None = None) -> tuple[list[list[tuple[str, str]]], int]:
    """One availableNow run: each batch's (value, file name) rows, and total numInputRows."""
    batches: list[list[tuple[str, str]]] = []

    def collect(batch: DataFrame, batch_id: int) -> None:
        rows = [(r["value"], r["_source_file"].rsplit("/", 1)[-1]) for r in batch.collect()]
        if rows:
            batches.append(sorted(rows))

    stream = read_files_stream(spark, path=str(incoming),
                               max_files_per_trigger=max_files_per_trigger)
    query = (stream.writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
        progress: list[dict[str, Any]] = query.recentProgress
    finally:
        query.stop()
    assert query.exception() is None
    return batches, sum(p["numInputRows"] for p in progress)


def test_files_stream_blank_lines_metadata_and_checkpoint(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    incoming, checkpoint = tmp_path / "incoming", tmp_path / "checkpoint"
    incoming.mkdir()
    (incoming / "a.json").write_text('{"n":1}\n\n   \n{"n":2}\n\t\n', encoding="utf-8")
    (incoming / "b.json").write_text('{"n":3}\r\n \r\n{"n":4}', encoding="utf-8")
    (incoming / ".hidden.tmp").write_text('{"n":"in flight"}\n', encoding="utf-8")

    batches, input_rows = _run(spark, incoming, checkpoint)
    rows = sorted(r for b in batches for r in b)
    assert rows == [('{"n":1}', "a.json"), ('{"n":2}', "a.json"),
                    ('{"n":3}', "b.json"), ('{"n":4}', "b.json")]
    # numInputRows counts lines before the blank-line filter: 4 records + 4 blank lines.
    assert input_rows == 8

    # A second run on the same checkpoint reads only the file that landed since.
    (incoming / "c.json").write_text('{"n":5}\n', encoding="utf-8")
    batches, _ = _run(spark, incoming, checkpoint)
    assert batches == [[('{"n":5}', "c.json")]]


def test_max_files_per_trigger_splits_batches(spark: SparkSession, tmp_path: Path) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    for i in range(3):
        (incoming / f"f{i}.json").write_text(f'{{"n":{i}}}\n{{"m":{i}}}\n', encoding="utf-8")
    batches, _ = _run(spark, incoming, tmp_path / "checkpoint", max_files_per_trigger=1)
    assert len(batches) == 3
    assert all(len({name for _, name in b}) == 1 and len(b) == 2 for b in batches)
    assert sorted(b[0][1] for b in batches) == ["f0.json", "f1.json", "f2.json"]


def test_missing_or_bad_path(spark: SparkSession, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(SourceError, match="does not exist"):
        read_files_stream(spark, path=str(missing), max_files_per_trigger=None)
    assert not missing.exists()
    read_files_stream(spark, path=str(missing), max_files_per_trigger=None, create_missing=True)
    assert missing.is_dir()

    a_file = tmp_path / "file.json"
    a_file.write_text("{}\n", encoding="utf-8")
    with pytest.raises(SourceError, match="is a file"):
        read_files_stream(spark, path=str(a_file), max_files_per_trigger=None)
    with pytest.raises(SourceError, match="positive integer"):
        read_files_stream(spark, path=str(missing), max_files_per_trigger=0)


def test_a_file_older_than_a_week_is_read(spark: SparkSession, tmp_path: Path) -> None:
    """Spark's file source skips a new file whose mtime is older than ``maxFileAge`` (7 days)
    before the newest file it has seen, once a batch has run: a file copied with its mtime
    (``cp -p``, ``rsync -t``) was lost. The runner reads every file, whatever its age."""
    import os
    import time

    incoming, checkpoint = tmp_path / "incoming", tmp_path / "checkpoint"
    incoming.mkdir()
    (incoming / "new.json").write_text('{"n":1}\n', encoding="utf-8")
    batches, _ = _run(spark, incoming, checkpoint)
    assert [r for b in batches for r in b] == [('{"n":1}', "new.json")]

    old = incoming / "old.json"
    old.write_text('{"n":2}\n', encoding="utf-8")
    month_ago = time.time() - 30 * 86400
    os.utime(old, (month_ago, month_ago))
    batches, _ = _run(spark, incoming, checkpoint)
    assert [r for b in batches for r in b] == [('{"n":2}', "old.json")]
