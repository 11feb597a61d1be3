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

#: The steps: a fixed walk through the operations that matter most at the edges (a model
#: kept through a full refresh and re-enabled, a crash, a parked model fixed, a rename), then
#: a few drawn by the seed.
SCRIPT = ("crash", "disable", "full_refresh", "enable", "park_fix", "rename", "snapshot")
SEED = 7


def test_a_generated_sequence_keeps_every_table_exact(tmp_path: Path, delta_engine: str) -> None:
    ops = GenOps(tmp_path / "proj", seed=SEED, engine=delta_engine)
    ops._op_stream({"op": "stream"})
    ops.check_exact()
    for op in SCRIPT:
        ops.step(op)
    for _ in range(3):
        ops.step()
    assert [s["op"] for s in ops.log[:len(SCRIPT)]] == list(SCRIPT)
    assert any(s.get("refused") for s in ops.log), ops.log  # the rename at least
