"""The pure half of backfills: what the checkpoint's logs say each batch read, what the
start-up decides about new, returning, rebuilt and retired models, and Kafka's data-loss
rules for the history (no Spark, no broker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.checkpoint.kafka_offsets import KAFKA_OFFSETS_DIR, keep_offsets, kept_offsets
from runner.checkpoint.registry import Entry, load_registry, save_registry
from runner.checkpoint.spark_logs import kafka_start_offsets, last_committed
from runner.console import render
from runner.errors import ExecutionError
from runner.events import ModelAbsent, ModelJoining, ModelRebuilding, ModelRetired
from runner.runtime.start.backfill import decide
from runner.sources.history import (
    KafkaSpan,
    PastBatch,
    file_batches,
    kafka_batches,
)
from runner.sources.kafka.offset_plan import OffsetRange, Watermarks
from runner.sources.replay import resolve_spans

# -- a checkpoint written the way Spark writes it ----------------------------------------------


def _log(path: Path, *lines: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n" + "\n".join(lines))


def _commit(cp: Path, b: int) -> None:
    _log(cp / "commits" / str(b), '{"nextBatchWatermarkMs":0}')


def _offsets(cp: Path, b: int, offset: object) -> None:
    _log(cp / "offsets" / str(b), '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}',
         json.dumps(offset))


def _files_entry(n: int, *names: str) -> list[str]:
    return [json.dumps({"path": f"file:///in/{name}", "timestamp": 1, "batchId": n})
            for name in names]


def test_files_batches_from_the_source_log_with_compaction(tmp_path) -> None:
    cp = tmp_path / "cp"
    for b in range(12):
        _commit(cp, b)
        _offsets(cp, b, {"logOffset": b})
    # log batches 0..9 compacted into 9.compact (plain 0..8 deleted), 10 and 11 plain; batch
    # 12 planned (offsets and log entry) but not committed: not part of the history.
    _log(cp / "sources" / "0" / "9.compact",
         *[e for n in range(10) for e in _files_entry(n, f"f{n}.json")])
    _log(cp / "sources" / "0" / "10", *_files_entry(10, "f10a.json", "f10b.json"))
    _log(cp / "sources" / "0" / "11", *_files_entry(11, "f11.json"))
    _log(cp / "sources" / "0" / "12", *_files_entry(12, "f12.json"))
    _offsets(cp, 12, {"logOffset": 12})
    (cp / "sources" / "0" / ".11.crc").write_text("x")
    assert last_committed(cp) == 11
    batches = file_batches(cp, through=11)
    assert [b.batch_id for b in batches] == list(range(12))
    assert batches[10] == PastBatch(10, 10, ("file:///in/f10a.json", "file:///in/f10b.json"))
    assert all(b.first == b.batch_id for b in batches)
    assert [b.batch_id for b in file_batches(cp, through=4)] == [0, 1, 2, 3, 4]


def test_files_batches_older_than_the_retained_offsets_and_a_source_log_ahead(tmp_path) -> None:
    cp = tmp_path / "cp"
    # Spark kept only batches 3..5 of offsets/commits; the file source log is one ahead
    # (a run stopped after the source logged batch 0 and before the stream did).
    for b in (3, 4, 5):
        _commit(cp, b)
        _offsets(cp, b, {"logOffset": b + 1})
    _log(cp / "sources" / "0" / "6.compact",
         *[e for n in range(7) for e in _files_entry(n, f"f{n}.json")])
    batches = file_batches(cp, through=5)
    # log 0 and 1 fold onto batch 0 (shifted by one), 2 -> 1, 3 -> 2; then 4, 5, 6 exactly
    assert [(b.batch_id, b.first, len(b.files)) for b in batches] == [
        (0, 0, 2), (1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 4, 1), (5, 5, 1)]
    assert batches[-1].files == ("file:///in/f6.json",)


def test_kafka_batches_from_the_offsets_log(tmp_path) -> None:
    cp = tmp_path / "cp"
    for b, end in enumerate([{"t": {"0": 5, "1": 3}}, {"t": {"0": 9, "1": 3, "2": 0}},
                             {"t": {"0": 9, "1": 7, "2": 4}}]):
        _commit(cp, b)
        _offsets(cp, b, end)
    batches = kafka_batches(cp, through=2)
    # batch 0's start is unknown to the Python source: the earliest offset still retained
    assert batches[0].spans == (KafkaSpan("t", 0, None, 5), KafkaSpan("t", 1, None, 3))
    # partition 2 is new in batch 1: it starts at the earliest offset too
    assert batches[1].spans == (KafkaSpan("t", 0, 5, 9), KafkaSpan("t", 1, 3, 3),
                                KafkaSpan("t", 2, None, 0))
    assert batches[2].spans[2] == KafkaSpan("t", 2, 0, 4)
    known = kafka_batches(cp, through=0, initial={("t", 0): 2, ("t", 1): 0})
    assert known[0].spans == (KafkaSpan("t", 0, 2, 5), KafkaSpan("t", 1, 0, 3))
    # Spark's own source records batch 0's start in sources/0/0
    (cp / "sources" / "0").mkdir(parents=True)
    (cp / "sources" / "0" / "0").write_bytes(b'\x00v1\n{"t":{"0":1,"1":1}}')
    assert kafka_start_offsets(cp) == {"t": {"0": 1, "1": 1}}
    assert kafka_batches(cp, through=0)[0].spans[0] == KafkaSpan("t", 0, 1, 5)


def test_kafka_batches_with_purged_offsets_stand_for_the_older_ones(tmp_path) -> None:
    cp = tmp_path / "cp"
    for b in (7, 8):
        _commit(cp, b)
        _offsets(cp, b, {"t": {"0": 10 * b}})
    batches = kafka_batches(cp, through=8)
    assert [(b.batch_id, b.first) for b in batches] == [(7, 0), (8, 8)]
    assert batches[0].spans == (KafkaSpan("t", 0, None, 70),)


def test_kept_offsets_outlive_sparks_retention(tmp_path) -> None:
    """The stream keeps the committed batches' offsets in chunks while Spark has them; once
    Spark purged its own, each old batch is still its own past batch."""
    cp = tmp_path / "cp"
    for b in range(7):  # batches 0..6 committed, as the stream goes
        _commit(cp, b)
        _offsets(cp, b, {"t": {"0": 10 * (b + 1)}})
        assert keep_offsets(cp, before=b + 1, every=3) == (3 if b in (2, 5) else 0)
    assert sorted(kept_offsets(cp)) == [0, 1, 2, 3, 4, 5]
    assert keep_offsets(cp, before=7, every=3) == 0  # batch 6 waits for its chunk
    for b in range(5):  # Spark's retention deletes its logs of batches 0..4
        (cp / "commits" / str(b)).unlink()
        (cp / "offsets" / str(b)).unlink()
    batches = kafka_batches(cp, through=6, initial={("t", 0): 0})
    assert [(b.batch_id, b.first) for b in batches] == [(b, b) for b in range(7)]
    assert [b.spans[0].start for b in batches] == [0, 10, 20, 30, 40, 50, 60]
    # a chunk is written once: a second call for the same batches changes nothing
    chunk = sorted((cp / KAFKA_OFFSETS_DIR).iterdir())[0]
    before = chunk.read_text()
    assert keep_offsets(cp, before=3, every=1) == 0 and chunk.read_text() == before
    chunk.write_text("{not json")
    with pytest.raises(ExecutionError, match="kept Kafka offsets .* are unreadable"):
        kafka_batches(cp, through=6)


def test_resolve_spans_applies_the_data_loss_rules() -> None:
    marks = {("t", 0): Watermarks(10, 100), ("t", 1): Watermarks(0, 5)}
    ranges, losses = resolve_spans([KafkaSpan("t", 0, 4, 50), KafkaSpan("t", 1, None, 8),
                                    KafkaSpan("t", 2, 0, 3)], marks)
    assert ranges == [OffsetRange("t", 0, 10, 50), OffsetRange("t", 1, 0, 5)]
    assert [(x.partition, x.kind) for x in losses] == [(0, "expired"), (1, "reset"),
                                                       (2, "deleted")]
    assert "offsets 4..9 are no longer available" in losses[0].describe()


# -- the start-up's decisions ------------------------------------------------------------------


def test_decide_new_rebuild_no_backfill_and_fresh() -> None:
    live = {m: Entry("live") for m in ("a", "b")}
    h = decide(entries=live, run=["a", "b", "c", "d"], files={"a", "b", "c", "d"},
               committed=4, no_backfill={"d"}, rebuild={"b"})
    assert h.entries["c"] == Entry("backfilling", start=0)
    assert h.entries["b"] == Entry("backfilling", start=0, drop=True)
    assert h.entries["d"] == Entry("live", since=5)
    assert h.to_drop == ["b"] and h.next_batch == 5
    joining = {e.model: e for e in h.events if isinstance(e, ModelJoining)}
    assert (joining["c"].status, joining["c"].action, joining["c"].start) == ("new", "backfill", 0)
    assert (joining["d"].action, joining["d"].next_batch) == ("no_backfill", 5)
    assert ModelRebuilding("b", committed=4) in h.events
    # a fresh checkpoint: every model is live from batch 0, nothing said
    fresh = decide(entries=None, run=["a", "b"], files={"a", "b"}, committed=None)
    assert fresh.entries == {"a": Entry("live"), "b": Entry("live")} and not fresh.events


def test_decide_retired_absent_and_back() -> None:
    entries = {"a": Entry("live"), "gone": Entry("live"), "off": Entry("live")}
    h = decide(entries=entries, run=["a"], files={"a", "off"}, committed=6,
               table=lambda m: f"wh/{m}")
    assert h.entries["gone"] == Entry("retired", left_at=7)
    assert h.entries["off"] == Entry("absent", left_at=7)
    assert ModelRetired("gone", table="wh/gone", left_at=7) in h.events
    assert ModelAbsent("off", left_at=7) in h.events
    # later: both come back and catch up on what they missed, not more
    back = decide(entries=h.entries, run=["a", "gone", "off"], files={"a", "gone", "off"},
                  committed=9)
    assert back.entries["gone"] == Entry("backfilling", start=7)
    assert ModelJoining("off", "back", "backfill", start=7, committed=9, next_batch=10,
                        error=None) in back.events
    # a retired model whose table is gone is forgotten: back, it is new
    forgot = decide(entries=h.entries, run=["a"], files={"a", "off"}, committed=6,
                    exists=lambda m: m != "gone")
    assert "gone" not in forgot.entries


def test_decide_a_kafka_model_leaves_and_comes_back_as_its_topic() -> None:
    """A Kafka model has no table: whether it holds batches is its topic's (the start-up asks
    the markers' cut in the ledger), and the events name the topic, so a model re-enabled is
    "back" (catching up what it missed), not "new"."""
    entries = {"a": Entry("live"), "out": Entry("live"), "gone_out": Entry("live")}
    h = decide(entries=entries, run=["a"], files={"a", "out"}, committed=6,
               table=lambda m: f"wh/{m}", exists=lambda m: True,
               topics={"out": "topic orders", "gone_out": "topic old"})
    assert ModelAbsent("out", left_at=7, topic="topic orders") in h.events
    assert ModelRetired("gone_out", table=None, left_at=7, topic="topic old") in h.events
    assert [render(e) for e in h.events] == [
        "model out is not in this run (enabled=false or not selected): what it produces to its "
        "topic orders stops at batches up to 6; it catches up from batch 7 when it is back",
        "model gone_out is retired (its SQL file is gone): the records in its topic old stay "
        "(batches up to 6)"]
    back = decide(entries=h.entries, run=["a", "out"], files={"a", "out"}, committed=9)
    assert ModelJoining("out", "back", "backfill", start=7, committed=9,
                        next_batch=10) in back.events


def test_decide_a_backfill_cut_short_and_an_old_checkpoint() -> None:
    entries = {"a": Entry("live"), "n": Entry("backfilling", start=0)}
    # still in the run: it goes on (the table's transaction says where)
    h = decide(entries=entries, run=["a", "n"], files={"a", "n"}, committed=3)
    assert h.entries["n"] == Entry("backfilling", start=0)
    # left out after writing batches 0..1: it is missing batches from 2
    h = decide(entries=entries, run=["a"], files={"a", "n"}, committed=3,
               version=lambda m: 1 if m == "n" else None)
    assert h.entries["n"] == Entry("absent", left_at=2)
    # no registry yet, batches committed: tables with this checkpoint's transactions are known
    # (each model's state comes from its table's own batch ids: a at batch 2 is live, p at
    # batch 0 (parked or disabled then) catches up from batch 1)
    tables = {"a": 2, "x": 1, "p": 0}
    old = decide(entries=None, run=["a", "new", "p"], files={"a", "new", "x", "p"}, committed=2,
                 known={"a", "x", "p"}, version=tables.get)
    assert old.entries["a"] == Entry("live", since=3)
    assert old.entries["new"] == Entry("backfilling", start=0)
    assert old.entries["x"] == Entry("absent", left_at=2)
    assert old.entries["p"] == Entry("backfilling", start=1)


def test_registry_round_trip_and_a_damaged_file(tmp_path) -> None:
    assert load_registry(tmp_path) is None
    entries = {"b": Entry("backfilling", start=3, drop=True), "a": Entry("live", since=2)}
    save_registry(tmp_path, entries)
    assert load_registry(tmp_path) == entries
    (tmp_path / "runner.models.json").write_text("{not json")
    with pytest.raises(ExecutionError, match="registry .* is unreadable"):
        load_registry(tmp_path)


# -- the command line and the progress records ---------------------------------------------------


def test_full_refresh_with_select_rebuilds_the_selection_and_runs_every_model(
        tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    import runner.runtime.start.stream as stream_module
    from runner.cli import cli
    from tests.support.projects import write_project

    root = write_project(tmp_path, {
        "models/a.sql": "SELECT eventId, user.userId AS uid FROM parsed_events",
        "models/b.sql": "SELECT uid, count(*) AS n FROM {{ ref('a') }} GROUP BY uid"})
    calls = []

    def fake_run_stream(project, plan, **kw):
        from runner.runtime.start.stream import StreamSummary

        calls.append(([s.name for s in plan.steps], kw))
        return StreamSummary()

    monkeypatch.setattr(stream_module, "run_stream", fake_run_stream)
    result = CliRunner().invoke(cli, ["stream", "--project-dir", str(root), "--available-now",
                                      "--full-refresh", "--select", "b"])
    assert result.exit_code == 0, result.output
    (steps, kw), = calls
    assert steps == ["a", "b"] and kw["rebuild"] == ("b",) and kw["full_refresh"] is False
    result = CliRunner().invoke(cli, ["stream", "--project-dir", str(root), "--available-now",
                                      "--full-refresh", "--select", "c"])
    assert result.exit_code == 2 and "no model named 'c'" in result.output
    result = CliRunner().invoke(cli, ["stream", "--project-dir", str(root), "--available-now",
                                      "--full-refresh"])
    assert calls[-1][1]["full_refresh"] is True and calls[-1][1]["rebuild"] == ()


def test_backfill_progress_as_text_and_json() -> None:
    import io

    from runner.console import Console, event_doc
    from runner.runtime.start.backfill import BackfillProgress

    step = BackfillProgress(("m",), 3, 9, 1200, {"m": 40}, (), 0.5)
    done = BackfillProgress(("m",), 9, 9, 12000, {"m": 400}, (), 5.25, batches=10, done=True)
    out = io.StringIO()
    Console(out=out).event(step)
    Console(out=out).event(done)
    assert out.getvalue().splitlines() == [
        "backfill batch 3/9: in 1,200  m 40  (0.50s)",
        "backfill done: m: 10 batches through 9, 12,000 records read, rows written: m 400 (5.2s)"]
    record = event_doc(done)
    assert record["type"] == "backfill_progress"
    doc = record["backfill"]
    assert (doc["models"], doc["input_rows"], doc["rows"], doc["done"], doc["seconds"]) == \
        (["m"], 12000, {"m": 400}, True, 5.25)
