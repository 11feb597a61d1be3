"""The rule behind ``runner snapshot``'s lag marks, without Spark (tables written by the real
delta-rs writer, entries by the real Bookkeeper: tests/support/fake_stream.py): the last batch
a lagging table holds, the refusal when the model registry cannot be read or keeps changing.
The whole path through ``runner stream --select`` on both engines: tests/faults/
test_snapshot_lag.py."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import count

from click.testing import CliRunner

import runner.ops.snapshot as snapshot_module
from runner.checkpoint.ledger import Ledger
from runner.checkpoint.registry import REGISTRY_FILE, Entry, save_registry
from runner.cli import cli
from tests.support.fake_stream import APPENDS, DEAD, FakeStream, make_project, read


def _stream(tmp_path) -> FakeStream:
    s = FakeStream(make_project(tmp_path / "proj"))
    for n in range(3):
        s.batch(n, dead=1)
    return s


def _snapshot(s: FakeStream, batch: int) -> dict:
    result = CliRunner().invoke(cli, ["snapshot", "--project-dir", str(s.project.root),
                                      "--format", "json", "--batch", str(batch)])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_lagging_table_is_marked_with_the_last_batch_its_version_holds(tmp_path) -> None:
    s = _stream(tmp_path)
    registry = {m: Entry("live") for m in (*APPENDS, "endpoint_counts")}
    # error_events left the runs at batch 2 by the registry, yet its table has batch 2 (written
    # before a crash, the replay ran without it): its version holds batches 0..2, not 0..1.
    save_registry(s.project.checkpoint, {**registry, "error_events": Entry("absent", left_at=2)})
    ledger = Ledger(s.project.checkpoint)
    entry = ledger.get(2)
    assert entry is not None
    ledger.record(replace(entry, batch_id=3))  # batch 3: no rows anywhere, error_events out
    assert "lag" not in _snapshot(s, 2)["tables"]["error_events"]
    doc = _snapshot(s, 3)
    t = doc["tables"]["error_events"]
    assert (t["lag"], t["last_batch"]) == ("not selected in the last run", 2)
    assert {r["_batch_id"] for r in read(t["path"], t["version"])} == {0, 1, 2}
    assert [n for n, t in doc["tables"].items() if "lag" in t] == ["error_events"]
    assert {r["_batch_id"] for r in read(doc["tables"][DEAD]["path"],
                                         doc["tables"][DEAD]["version"])} == {0, 1, 2}


def test_no_snapshot_when_the_registry_cannot_be_read_or_keeps_changing(tmp_path,
                                                                         monkeypatch) -> None:
    s = _stream(tmp_path)
    (s.project.checkpoint / REGISTRY_FILE).write_text("{not json")
    result = CliRunner().invoke(cli, ["snapshot", "--project-dir", str(s.project.root)])
    assert result.exit_code == 1
    assert "no snapshot: the checkpoint's model registry" in result.output
    assert "Traceback" not in result.output

    ticks = count()
    monkeypatch.setattr(snapshot_module, "load_registry",
                        lambda cp: {"request_logs": Entry("absent", left_at=next(ticks))})
    result = CliRunner().invoke(cli, ["snapshot", "--project-dir", str(s.project.root)])
    assert result.exit_code == 1
    assert "changed at every read" in result.output
