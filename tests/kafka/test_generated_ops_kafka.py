"""The generated-operations walk (tests/support/genops.py) with a Kafka model: every operation
that picks a model picks ``events_out`` (``materialized='kafka'``) when it can, and after every
step a ``read_committed`` consumer sees every valid event of the input exactly once in its
topic (while it is live) and every table is exact; taken back after it sat out, it is *back*,
not new. The seeded random walks over every operation are the bench's
(``python -m bench.generated_ops --kafka``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.genops import KAFKA, GenOps

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: Crashes in and around its transaction, disabled and back, removed and added back, a
#: rebuild and a --full-refresh of it (refused: a topic cannot be emptied), a change of its
#: SQL, the model registry lost, snapshots.
SCRIPT = ("crash", "disable", "stream", "enable", "remove", "stream", "add", "rebuild",
          "full_refresh", "crash", "change_sql", "registry_loss", "snapshot")
MODELS = ("request_logs", "error_events")


# Slow (nightly): fourteen in-process runs of the pipeline per engine with a Kafka model,
# each step checked against a read_committed consumer: 3-5 minutes per engine on two cores.
@pytest.mark.slow
def test_a_walk_with_a_kafka_model_keeps_its_topic_exact(tmp_path: Path, apache_kafka: str,
                                                         delta_engine: str) -> None:
    ops = GenOps(tmp_path / "proj", seed=46, engine=delta_engine, models=MODELS,
                 kafka=apache_kafka, focus=KAFKA)
    ops.run(0)  # batch 0
    for op in SCRIPT:
        ops.step(op)  # checks every table and the topic after the step
    log = ops.log
    print([{k: v for k, v in s.items() if k != "refused"} for s in log])
    assert [s["op"] for s in log] == list(SCRIPT)
    assert not any(s.get("skipped") for s in log), log
    assert all(s.get("model", KAFKA) == KAFKA for s in log if s["op"] != "registry_loss"), log
    assert log[3]["joined"] == ["back"] and log[6]["joined"] == ["back"], log
    assert "Kafka model events_out" in log[7]["refused"], log[7]
    assert "Kafka model events_out" in log[8]["refused"], log[8]
