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
#: (where: drawn by the seed); a model disabled, a --full-refresh that dies inside its first
#: batch, the model re-enabled (refused, then rebuilt the way the message says); the model
#: registry lost (rebuilt from the tables' batch ids); a model renamed after a crash (its table
#: moved with it); a batch's input file removed before its replay (refused, then put back);
#: a rename of the pipeline (refused). The seeded random walk over every operation is the bench's.
SCRIPT = ("crash", "refresh_crash", "registry_loss", "rename_model", "input_removed", "rename")
SEED = 7
#: Four models and the dead letters (the parking and ref models are the bench's too).
MODELS = ("request_logs", "error_events", "performance_metrics", "endpoint_counts")


# The spark engine's walk is nightly (31 s on the CI machine; the suite's 25-minute budget).
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_a_generated_sequence_keeps_every_table_exact(tmp_path: Path, delta_engine: str) -> None:
    ops = GenOps(tmp_path / "proj", seed=SEED, engine=delta_engine, models=MODELS)
    ops.run(0)  # batch 0
    for op in SCRIPT:
        ops.step(op)  # checks every table after the step
    log = ops.log
    assert [s["op"] for s in log] == list(SCRIPT)
    assert not any(s.get("skipped") for s in log), log
    assert log[0]["died"], log[0]  # the crash did land inside the batch
    assert "already holds batches of another checkpoint" in log[1]["refused"], log[1]
    assert log[1]["way_out"] == f"--full-refresh --select {log[1]['model']}"
    assert log[4]["died"] and "must be replayed" in log[4]["refused"], log[4]
    assert "belongs to pipeline 'test_pipeline'" in log[5]["refused"], log[5]
