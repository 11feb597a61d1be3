"""The batch ledger through faults: an entry is written once, after a batch's last commit and
before Spark's commit log, and a replay neither loses nor rewrites it."""

from __future__ import annotations

import pytest

import runner
from runner.checkpoint.ledger import Ledger
from runner.errors import ExecutionError, RunnerError
from tests.faults.test_faults import (
    DEAD,
    SINKS,
    _commit_log,
    _feed,
    _project,
    _run,
    assert_exactly_once,
)
from tests.support.events import results_into

pytestmark = pytest.mark.spark


def _cut_is_consistent(project, batch: int) -> None:
    """Every table of the snapshot holds batches <= ``batch``, and the merge totals match."""
    from deltalake import DeltaTable

    snap = runner.snapshot(project.root, batch=batch)
    assert set(snap.tables) == {*SINKS, DEAD}

    def rows(name: str) -> list[dict]:
        t = snap.tables[name]
        return DeltaTable(t.path, version=t.version).to_pyarrow_dataset().to_table(
            use_threads=False).to_pylist()

    assert max(r["_batch_id"] for r in rows(DEAD)) == batch
    assert len(rows("request_logs")) == sum(r["requests"] for r in rows("endpoint_counts"))


def test_a_crash_between_the_ledger_entry_and_the_commit_log(tmp_path, armed, delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _feed(project)
    armed("batch.after_ledger@1=raise")
    with pytest.raises(RunnerError):
        _run(project)
    armed("")
    ledger = Ledger(project.checkpoint)
    entry = ledger.get(1)
    assert entry is not None and _commit_log(project) == {0}
    _cut_is_consistent(project, 1)  # readers already get batch 1: it is complete
    replay = []
    _run(project, report=results_into(replay))
    assert [r.batch_id for r in replay] == [1] and set(replay[0].skipped) == set(SINKS)
    assert ledger.get(1) == entry  # the replay kept the entry: no second, different one
    _cut_is_consistent(project, 1)
    assert_exactly_once(project)


def test_a_crash_between_two_sink_commits_leaves_the_previous_cut(tmp_path, armed,
                                                                  delta_engine) -> None:
    project = _project(tmp_path, engine=delta_engine)
    _feed(project)
    _feed(project)
    armed("sink.before_commit:performance_metrics@1=raise")
    with pytest.raises(ExecutionError):
        _run(project)
    armed("")
    assert Ledger(project.checkpoint).batch_ids() == [0]
    assert runner.snapshot(project.root).batch_id == 0  # batch 1 is half written: not offered
    _cut_is_consistent(project, 0)
    _run(project)
    assert Ledger(project.checkpoint).batch_ids() == [0, 1]
    _cut_is_consistent(project, 1)
    assert_exactly_once(project)
