"""Check, then act, for rebuilds and backfills (no Spark): the history check's pure parts, the
ledger rewrite, and the refusal of `--full-refresh --select +m`."""

from __future__ import annotations

from click.testing import CliRunner

from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.cli import cli
from runner.runtime.history_check import local_path, missing_files
from runner.runtime.restate import forget
from runner.sources.history import PastBatch
from tests.support.projects import write_project

GOOD = {"models/a.sql": "SELECT eventId, user.userId AS uid FROM parsed_events",
        "models/b.sql": "SELECT uid, count(*) AS n FROM {{ ref('a') }} GROUP BY uid"}


def test_missing_files_names_each_gone_local_file_of_the_batches_to_replay(tmp_path) -> None:
    here, gone = tmp_path / "a b.json", tmp_path / "c.json"
    here.write_text("{}\n")
    batches = [PastBatch(0, 0, (gone.as_uri(),)), PastBatch(1, 1, (here.as_uri(),)),
               PastBatch(2, 2, (str(gone), "s3a://bucket/k.json"))]
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
