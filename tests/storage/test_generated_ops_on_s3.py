"""Generated operations (tests/support/genops.py) with the checkpoint, the warehouse and the
source folder in a bucket (moto's S3 server), both engines: the fixed walk of
``tests/faults/test_generated_ops.py`` (same seed, same steps, same assertions), then a seeded
random walk over every operation (add/remove/rename models, refresh, rebuild, park and fix,
crashes, snapshots, maintain, registry loss, an input file removed). After every step every
table is exact against the plain-Python reference, or the step was refused with nothing changed.

Long: a step is a few runs of the pipeline against the bucket (about 10-40 s each here), so it
is in the slow set. ``RUNNER_GENOPS_STEPS`` sets the random walk's length (default
:data:`STEPS`; the issue's >= 100 steps per engine: ``RUNNER_GENOPS_STEPS=100``),
``RUNNER_GENOPS_SEED`` its seed (default the fixed walk's). On failure the message has the seed,
the step and the last steps.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.faults.test_generated_ops import MODELS, SCRIPT, SEED
from tests.support.genops import GenOps

# slow: the fixed walk alone is about 6-10 minutes per engine on S3 here, every random step
# about one more
pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: Random steps after the fixed walk, unless RUNNER_GENOPS_STEPS says otherwise.
STEPS = 6


def test_a_generated_sequence_keeps_every_table_in_a_bucket_exact(
        tmp_path: Path, s3_bucket, monkeypatch, delta_engine: str) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    steps = int(os.environ.get("RUNNER_GENOPS_STEPS", STEPS))
    seed = int(os.environ.get("RUNNER_GENOPS_SEED", SEED))
    ops = GenOps(tmp_path / "proj", seed=seed, engine=delta_engine, models=MODELS,
                 bucket=s3_bucket.uri)
    started = time.monotonic()
    try:
        ops.run(0)  # batch 0
        for op in SCRIPT:
            ops.step(op)
        if seed == SEED:  # the fixed walk's outcomes, as on local disk
            log = ops.log
            assert not any(s.get("skipped") for s in log), log
            assert log[0]["died"], log[0]
            assert "already holds batches of another checkpoint" in log[1]["refused"], log[1]
            assert log[1]["way_out"] == f"--full-refresh --select {log[1]['model']}"
            assert log[4]["died"] and "must be replayed" in log[4]["refused"], log[4]
            assert "belongs to pipeline 'test_pipeline'" in log[5]["refused"], log[5]
        for _ in range(steps):  # progress for -s (pytest keeps it for a failure's report)
            print(f"[{time.monotonic() - started:6.0f}s] {json.dumps(ops.step())[:300]}",
                  flush=True)
    except Exception as e:  # any failure: with the seed, the step and the last steps
        last = "\n".join(json.dumps(s)[:400] for s in ops.log[-6:])
        raise AssertionError(f"{delta_engine}, seed {seed}, step {len(ops.log) - 1} of "
                             f"{len(SCRIPT) + steps}: {e}\nlast steps:\n{last}") from e
    done = [s for s in ops.log if not s.get("skipped")]
    print(f"\n{delta_engine} on S3: seed {seed}, {len(ops.log)} steps ({len(done)} not skipped,"
          f" {sum(bool(s.get('died')) for s in ops.log)} crashes inside a batch, "
          f"{sum(bool(s.get('refused')) for s in ops.log)} refused) in "
          f"{time.monotonic() - started:.0f} s")
    assert len(ops.log) == len(SCRIPT) + steps
    assert {s["op"] for s in done} >= set(SCRIPT)
