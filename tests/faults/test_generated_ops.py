"""Generated operations (tests/support/genops.py), a short seeded sequence: after every step
every table is exact against the plain-Python reference, or the step was refused with nothing
changed. The long sequences are ``python -m bench.generated_ops`` (docs/RELIABILITY.md).

Both engines: what is checked is what lands in Delta tables. Crashes here are in process (a
failpoint that raises: no JVM start per crash); the bench kills a real ``runner stream``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.genops import GenOps

pytestmark = pytest.mark.spark

#: A fixed walk through the operations that matter most at the edges: a crash inside a batch
#: (where: drawn by the seed), a model kept through a full refresh while disabled and then
#: re-enabled (refused, then rebuilt the way the message says), a rename (refused). Each step
#: is one run or two: the seeded random walk over every operation is the bench's.
SCRIPT = ("crash", "disable", "full_refresh", "enable", "rename")
SEED = 7
#: Four models and the dead letters (the parking and ref models are the bench's too).
MODELS = ("request_logs", "error_events", "performance_metrics", "endpoint_counts")


def test_a_generated_sequence_keeps_every_table_exact(tmp_path: Path, delta_engine: str) -> None:
    ops = GenOps(tmp_path / "proj", seed=SEED, engine=delta_engine, models=MODELS)
    ops.run(0)  # batch 0
    for op in SCRIPT:
        ops.step(op)  # checks every table after the step
    assert [s["op"] for s in ops.log] == list(SCRIPT)
    assert not any(s.get("skipped") for s in ops.log), ops.log
    assert ops.log[0]["died"], ops.log[0]  # the crash did land inside the batch
    assert "already holds batches of another checkpoint" in ops.log[3]["refused"], ops.log[3]
    assert ops.log[3]["way_out"] == f"--full-refresh --select {ops.log[1]['model']}"
    assert "belongs to pipeline 'test_pipeline'" in ops.log[4]["refused"], ops.log[4]
