"""The replay rule (docs/RELIABILITY.md "The replay rule"): a batch Spark replays must read the
input its first attempt read, or the start-up refuses (exit 2) naming the batch and what is
gone, with nothing written; never a different batch under the same id.

The fault: batch 1 fails after the dead-letter table (and other tables) committed it, before a
model did; then its input file is removed, truncated or rewritten. Before the rule the replay
read what was left (0 records for a removed file), exited 0, and the model lacked the file's
rows that the other tables had. Putting the file back lets the replay run, exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.inputs import InputRecords
from runner.demo import write_demo_files
from runner.errors import ConfigError, ExecutionError
from runner.events import Event, ReplayWithoutOffsets
from runner.project.config import KafkaSource
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sources.kafka.offset_plan import Watermarks
from runner.sources.same_input import ReplayGuard, stat_files
from tests.faults.test_faults import SINKS, YML, _reap, assert_exactly_once, committed
from tests.support.events import results_into
from tests.support.projects import ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import DEAD

MODELS = {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS}


def _project(tmp_path: Path, engine: str):
    root = write_project(tmp_path / "proj", MODELS, project_yml=YML, engine=engine)
    (root / "incoming").mkdir(exist_ok=True)
    return load_project(root)


def _run(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _half_committed(project, armed) -> Path:
    """Two files (two batches); batch 1 fails just before endpoint_counts commits it, after
    the dead-letter table and the other models did. Returns batch 1's file."""
    for _ in range(2):
        write_demo_files(project.root / "incoming", events=400, files=1, poison_every=60)
    armed("sink.before_commit:endpoint_counts@1=raise")
    with pytest.raises(ExecutionError, match="failpoint sink.before_commit:endpoint_counts"):
        _run(project)
    armed("")
    partial = committed(project, 1)
    assert DEAD in partial and "endpoint_counts" not in partial
    assert not (project.checkpoint / "commits" / "1").exists()
    return sorted((project.root / "incoming").glob("events-*.json"))[1]


def _state(project) -> tuple[set[str], list[str]]:
    """What a refusal must leave as it was: the tables that hold batch 1, Spark's commits."""
    commits = project.checkpoint / "commits"
    return committed(project, 1), sorted(p.name for p in commits.iterdir())


def _damage(path: Path, how: str) -> bytes:
    """Remove, truncate or rewrite (same size, other content) ``path``; returns its bytes."""
    data = path.read_bytes()
    if how == "removed":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:  # the same size, other records
        lines = data.decode().splitlines(keepends=True)
        path.write_bytes("".join(lines[1:] + lines[:1]).encode())
    return data


WHAT = {"removed": "is gone (it had", "truncated": "was truncated or rewritten",
        "rewritten": "was rewritten: the same size, other content"}


#: The finding (a removed file) in the default run; the other changes with `-m slow`.
@pytest.mark.parametrize("how", ["removed", pytest.param("truncated", marks=pytest.mark.slow),
                                 pytest.param("rewritten", marks=pytest.mark.slow)])
def test_replay_refused_when_its_input_changed(tmp_path, armed, delta_engine, how) -> None:
    project = _project(tmp_path, delta_engine)
    path = _half_committed(project, armed)
    before = _state(project)
    data = _damage(path, how)
    with pytest.raises(ConfigError) as refused:  # before the rule: exit 0, endpoint_counts short
        _run(project)
    message = str(refused.value)
    assert "batch 1 must be replayed" in message and path.name in message, message
    assert WHAT[how] in message, message
    assert "put the file(s) back" in message and "--full-refresh" in message, message
    assert refused.value.exit_code == 2
    assert _state(project) == before  # nothing written
    path.write_bytes(data)  # the way out: put it back (a new modification time, same bytes)
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1]
    assert set(replay[0].skipped) == set(SINKS) - {"endpoint_counts"}
    assert_exactly_once(project)


def test_cli_exits_2_naming_the_batch_and_the_file(tmp_path, armed) -> None:
    project = _project(tmp_path, "rs")
    path = _half_committed(project, armed)
    before = _state(project)
    path.unlink()
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(project.root),
         "--available-now"], env={**os.environ, "RUNNER_FAILPOINTS": ""},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    code, out = _reap(proc)
    assert code == 2, out
    assert "batch 1 must be replayed" in out and f"{path.name} is gone" in out, out
    assert "Traceback" not in out
    assert _state(project) == before


# -- without Spark: the guard on hand-made checkpoints -----------------------------------------

def _spark_log(path: Path, *lines: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n" + "\n".join(lines) + "\n")


def _files_checkpoint(tmp_path: Path, files: list[Path], *, committed_through: int) -> Path:
    """A files-source checkpoint: batch b read ``files[b]``; batches up to
    ``committed_through`` committed, the last one planned only."""
    cp = tmp_path / "cp"
    for b, f in enumerate(files):
        _spark_log(cp / "sources" / "0" / str(b),
                   json.dumps({"path": f.as_uri(), "timestamp": 0, "batchId": b}))
        _spark_log(cp / "offsets" / str(b), "{}", json.dumps({"logOffset": b}))
        if b <= committed_through:
            _spark_log(cp / "commits" / str(b), "{}")
    return cp


def test_guard_records_then_compares(tmp_path) -> None:
    from runner.project.config import FilesSource

    data = [tmp_path / "a.json", tmp_path / "b.json"]
    for f in data:
        f.write_text('{"eventId": "x"}\n')
    cp = _files_checkpoint(tmp_path, data, committed_through=0)
    guard = ReplayGuard(cp, FilesSource(type="files", path=str(tmp_path)))
    guard(1)  # the first attempt records; the next batch's record drops the older ones
    recorded = InputRecords(cp).get(1)
    assert recorded is not None and list(recorded) == [data[1].as_uri()]
    assert recorded[data[1].as_uri()] == stat_files([data[1].as_uri()])[data[1].as_uri()]
    first = recorded[data[1].as_uri()]
    assert first is not None and first.size == 17
    os.utime(data[1], ns=(0, 0))  # touched (or copied back): same bytes, the replay may run
    assert guard.check_pending() == 1
    assert guard.check_pending() == 1  # unchanged: the replay may run
    guard(1)
    data[1].write_text('{"eventId": "y"}\n{"eventId": "z"}\n')  # appended to after listing
    with pytest.raises(ConfigError, match=r"batch 1 must be replayed(.|\n)*b\.json was "
                                          r"truncated or rewritten: 17 bytes"):
        guard.check_pending()
    with pytest.raises(ConfigError, match="b.json was truncated or rewritten"):
        guard(1)  # the batch's own start compares again


def test_guard_without_a_record_refuses_a_gone_file(tmp_path) -> None:
    """A checkpoint from before the records: only presence can be checked."""
    from runner.project.config import FilesSource

    data = [tmp_path / "a.json", tmp_path / "b.json"]
    data[0].write_text("{}\n")
    cp = _files_checkpoint(tmp_path, data, committed_through=0)
    guard = ReplayGuard(cp, FilesSource(type="files", path=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"batch 1 must be replayed(.|\n)*b\.json is gone\n"):
        guard.check_pending()
    data[1].write_text("{}\n")
    assert guard.check_pending() == 1
    (cp / "commits" / "1").parent.mkdir(exist_ok=True)
    _spark_log(cp / "commits" / "1", "{}")
    data[1].unlink()  # a committed batch is not replayed: nothing to check at start-up
    assert guard.check_pending() is None


def _kafka_checkpoint(tmp_path: Path) -> Path:
    cp = tmp_path / "cp"
    _spark_log(cp / "offsets" / "0", "{}", json.dumps({"events": {"0": 10, "1": 10}}))
    _spark_log(cp / "commits" / "0", "{}")
    _spark_log(cp / "offsets" / "1", "{}", json.dumps({"events": {"0": 25, "1": 20}}))
    return cp


@pytest.mark.parametrize("strict", [True, False])
def test_guard_refuses_a_kafka_replay_whose_offsets_are_gone(tmp_path, strict) -> None:
    source = KafkaSource(type="kafka", bootstrap_servers="127.0.0.1:1", topic="events",
                         fail_on_data_loss=strict)
    cp = _kafka_checkpoint(tmp_path)
    kept = {("events", 0): Watermarks(0, 30), ("events", 1): Watermarks(5, 20)}
    assert ReplayGuard(cp, source, watermarks=lambda: kept).check_pending() == 1
    gone = {("events", 0): Watermarks(12, 30), ("events", 1): Watermarks(5, 20)}
    guard = ReplayGuard(cp, source, watermarks=lambda: gone)
    events: list[Event] = []
    if strict:
        with pytest.raises(ConfigError, match=r"batch 1 must be replayed(.|\n)*partition 0: "
                                              r"offsets 10\.\.11 are no longer available"):
            guard.check_pending(report=events.append)
    else:  # the documented way out: replay what is left, said out loud
        assert guard.check_pending(report=events.append) == 1
        [said] = events
        assert isinstance(said, ReplayWithoutOffsets) and said.batch_id == 1
        assert "partition 0: offsets 10..11 are no longer available" in said.losses[0]
