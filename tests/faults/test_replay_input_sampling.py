"""The replay rule across runner versions: a replay compares its input with the first
attempt's record the way that record was taken.

Found by ``python -m bench.generated_ops --engine rs --seed 21``, step 50 (a crash at
``batch.start@27``): the crashing ``runner stream`` process recorded batch 27's file with a
4 KiB sample (the first and last 4 KiB), the restart in the bench's own process ran the runner as
it had loaded it 18 minutes before, with a 64 KiB sample (the whole of a 9 KB file), and refused
the replay: "events-00027.json was rewritten: the same size, other content", though nothing had
touched the file. The same happens to anyone whose runner is upgraded (or its sample size
changed) between a crash and the restart, for every file larger than twice the sample, and the
way out the message gives (put the file back) cannot help: only ``--full-refresh`` would.

The record now says how each sample was taken (``sample_bytes``) and the replay samples the file
that way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.checkpoint.inputs import InputRecords
from runner.demo import write_demo_files
from runner.errors import ConfigError, ExecutionError
from runner.project.config import FilesSource
from runner.sources import same_input
from runner.sources.same_input import ReplayGuard
from tests.faults.test_faults import SINKS, assert_exactly_once, committed
from tests.faults.test_replay_input import _files_checkpoint, _project, _run
from tests.support.events import results_into
from tests.support.reference import DEAD

OLD, NEW = 64 * 1024, 4 * 1024  # the sample sizes of the two runner versions the bench mixed


def _file(path: Path, size: int, fill: str = "a") -> Path:
    """A file of ``size`` bytes (larger than twice the new sample, smaller than the old one:
    the old runner hashed all of it, the new one its ends only)."""
    line = json.dumps({"eventId": fill * 40}) + "\n"
    text = (line * (size // len(line) + 1))[:size]
    path.write_text(text)
    return path


def test_a_replay_by_a_runner_that_samples_otherwise_runs(tmp_path, monkeypatch) -> None:
    data = [_file(tmp_path / "a.json", 100), _file(tmp_path / "b.json", 9355)]
    cp = _files_checkpoint(tmp_path, data, committed_through=0)
    source = FilesSource(type="files", path=str(tmp_path))
    monkeypatch.setattr(same_input, "SAMPLE_BYTES", OLD)
    ReplayGuard(cp, source)(1)  # the first attempt (it dies then) records with 64 KiB
    recorded = InputRecords(cp).get(1)
    assert recorded is not None and recorded[data[1].as_uri()] is not None
    monkeypatch.setattr(same_input, "SAMPLE_BYTES", NEW)  # the restart: another runner
    guard = ReplayGuard(cp, source)
    assert guard.check_pending() == 1  # before the fix: refused, "b.json was rewritten"
    guard(1)  # the batch's own start compares again: the same
    assert InputRecords(cp).get(1) == recorded  # the first attempt's record is kept


def test_a_rewrite_is_still_seen_by_a_runner_that_samples_otherwise(tmp_path,
                                                                     monkeypatch) -> None:
    """Sampled as the record was: a same-size rewrite in the middle of the file (inside the
    old 64 KiB sample, outside the new ends) is refused."""
    data = [_file(tmp_path / "a.json", 100), _file(tmp_path / "b.json", 9355)]
    cp = _files_checkpoint(tmp_path, data, committed_through=0)
    source = FilesSource(type="files", path=str(tmp_path))
    monkeypatch.setattr(same_input, "SAMPLE_BYTES", OLD)
    ReplayGuard(cp, source)(1)
    text = data[1].read_text()
    middle = len(text) // 2
    data[1].write_text(text[:middle] + text[middle:middle + 9].upper() + text[middle + 9:])
    monkeypatch.setattr(same_input, "SAMPLE_BYTES", NEW)
    with pytest.raises(ConfigError, match=r"b\.json was rewritten: the same size"):
        ReplayGuard(cp, source).check_pending()


def test_a_record_that_does_not_say_how_it_sampled(tmp_path) -> None:
    """A record from before ``sample_bytes``: its samples are not compared (they may have been
    taken another way), its sizes are."""
    data = [_file(tmp_path / "a.json", 100), _file(tmp_path / "b.json", 9355)]
    cp = _files_checkpoint(tmp_path, data, committed_through=0)
    record = InputRecords(cp).files.path(1)
    record.parent.mkdir(parents=True)
    fact = {"size": 9355, "mtime_ms": 0, "sample": "taken-another-way"}
    record.write_text(json.dumps({"batch_id": 1, "files": {data[1].as_uri(): fact}}))
    guard = ReplayGuard(cp, FilesSource(type="files", path=str(tmp_path)))
    assert guard.check_pending() == 1
    data[1].write_text(data[1].read_text()[:-10])
    with pytest.raises(ConfigError, match=r"b\.json was truncated or rewritten: 9355 bytes"):
        guard.check_pending()
    record.write_text('{"batch_id": 1, "files": {"x": {"size": "big"}}}')
    with pytest.raises(ExecutionError, match="input record .* is unreadable"):
        guard.check_pending()


@pytest.mark.spark
@pytest.mark.slow  # the three tests above hold the rule without Spark; this is the bench's step
def test_the_bench_step_a_crash_then_a_restart_by_another_runner(tmp_path, armed,
                                                                 monkeypatch) -> None:
    """The bench's step in process: batch 1 dies at ``batch.start`` (its input recorded, no
    table written) under a runner sampling 64 KiB; the restart samples 4 KiB. Before the fix:
    refused ("was rewritten"), and the tables never got batch 1."""
    project = _project(tmp_path, "rs")
    incoming = project.root / "incoming"
    write_demo_files(incoming, events=60, files=1, seed=1, poison_every=17)
    _run(project)  # batch 0
    write_demo_files(incoming, events=60, files=1, seed=2, poison_every=17)
    path = sorted(incoming.glob("events-*.json"))[1]
    assert 2 * NEW < path.stat().st_size < OLD, path.stat().st_size
    monkeypatch.setattr(same_input, "SAMPLE_BYTES", OLD)
    armed("batch.start@1=raise")
    with pytest.raises(ExecutionError, match="failpoint batch.start"):
        _run(project)
    armed("")
    assert not (project.checkpoint / "commits" / "1").exists()
    assert InputRecords(project.checkpoint).get(1) is not None  # recorded before it died
    monkeypatch.setattr(same_input, "SAMPLE_BYTES", NEW)
    replay: list = []
    _run(project, report=results_into(replay))  # before the fix: ConfigError, "was rewritten"
    assert [r.batch_id for r in replay] == [1]
    assert set(committed(project, 1)) >= {*SINKS, DEAD}
    assert_exactly_once(project)
