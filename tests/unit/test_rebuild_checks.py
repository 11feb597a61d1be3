"""Check, then act, for rebuilds and backfills (no Spark): the history check's pure parts, the
ledger rewrite, and the refusal of `--full-refresh --select +m`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.cli import cli
from runner.errors import ConfigError
from runner.events import Event, KafkaStartUnknown
from runner.project.loader import load_project
from runner.runtime.start.history_check import check_history, missing_files
from runner.runtime.start.restate import forget
from runner.sources.history import PastBatch, local_path
from tests.support.projects import BASE_YML, write_project

GOOD = {"models/a.sql": "SELECT eventId, user.userId AS uid FROM parsed_events",
        "models/b.sql": "SELECT uid, count(*) AS n FROM {{ ref('a') }} GROUP BY uid"}


def test_missing_files_names_each_gone_local_file_of_the_batches_to_replay(tmp_path) -> None:
    here, gone = tmp_path / "a b.json", tmp_path / "c.json"
    here.write_text("{}\n")
    batches = [PastBatch(0, 0, (gone.as_uri(),)), PastBatch(1, 1, (here.as_uri(),)),
               PastBatch(2, 2, (str(gone), "hdfs://nn/k.json"))]
    assert missing_files(batches, since=0) == [(0, gone.as_uri()), (2, str(gone))]
    assert missing_files(batches, since=1) == [(2, str(gone))]  # batch 0 is not replayed
    assert local_path(here.as_uri()) == str(here)  # %20 decoded
    assert local_path("s3a://bucket/k.json") is None  # another file system: the replay checks


def test_forget_then_rewrite_the_ledger_atomically(tmp_path) -> None:
    ledger = Ledger(tmp_path)
    for b in range(3):
        ledger.record(LedgerEntry(b, {"a": b + 1, "b": b}, query_id="q",
                                  parked={"b": 1} if b else {}))
    assert forget(tmp_path, ["b"]) == 3
    assert [ledger.get(b).tables for b in range(3)] == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert all(not ledger.get(b).parked for b in range(3))
    assert not ledger.record(LedgerEntry(1, {"a": 9}))  # the stream's entries stay write-once
    ledger.rewrite(LedgerEntry(1, {"a": 2, "b": 7}, query_id="q"))  # a rebuild's restatement
    assert ledger.get(1).tables == {"a": 2, "b": 7}
    assert sorted(p.name for p in ledger.folder.iterdir()) == [
        f"{b:020d}.json" for b in range(3)]  # no temporary file left behind
    assert forget(tmp_path, ["zzz"]) == 0


def test_full_refresh_select_with_ancestors_is_refused_with_the_spelling_to_use(
        tmp_path) -> None:
    root = write_project(tmp_path, GOOD)
    result = CliRunner().invoke(cli, ["stream", "--project-dir", str(root), "--full-refresh",
                                      "--select", "+b", "--available-now"])
    assert result.exit_code == 2, result.output
    assert "every ancestor" in result.output
    assert "--full-refresh --select b" in result.output
    assert not (root / "_checkpoint").exists() and not (root / "cp").exists()


def _kafka_project(tmp_path, *, strict: bool):
    yml = BASE_YML.replace("  type: files\n  path: incoming\n",
                           "  type: kafka\n  bootstrap_servers: localhost:1\n  topic: events\n"
                           f"  starting_offsets: latest\n"
                           f"  fail_on_data_loss: {str(strict).lower()}\n")
    root = write_project(tmp_path / ("strict" if strict else "lenient"), GOOD, project_yml=yml)
    cp = root / "cp"
    for b, end in enumerate((5, 9)):  # as Spark writes them; no sources/0/0: start unknown
        for folder, doc in (("offsets", json.dumps({"events": {"0": end}})),
                            ("commits", '{"nextBatchWatermarkMs":0}')):
            (cp / folder).mkdir(parents=True, exist_ok=True)
            (cp / folder / str(b)).write_text(
                "v1\n" + ('{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n'
                          if folder == "offsets" else "") + doc)
    return load_project(root)


def test_kafka_replay_with_an_unknown_batch_0_start_is_refused_under_fail_on_data_loss(
        tmp_path) -> None:
    """`latest`, never recorded (the Python reader): no broker is asked (localhost:1)."""
    project = _kafka_project(tmp_path, strict=True)
    with pytest.raises(ConfigError, match=r"(?s)cannot rebuild b: where batch 0 started is "
                                          r"unknown for events\[0\].*starting_offsets"):
        check_history(project, {"b": 0}, committed=1, rebuild=["b"])
    said: list[Event] = []
    check_history(_kafka_project(tmp_path, strict=False), {"b": 0}, committed=1,
                  rebuild=["b"], report=said.append)  # reported, not refused
    assert said == [KafkaStartUnknown("rebuild", ("b",), ("events[0]",))]
