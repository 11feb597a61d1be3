"""`runner stream` with its checkpoint and warehouse in a bucket (moto's S3 server on
loopback), on both engines: the tables hold exactly what the input calls for, a replay after
a failure between two tables' commits writes nothing twice, and ``--full-refresh`` (slow)
rebuilds. Tables are read back with delta-rs through the bucket; the runner's own files
(registry, ledger, lease) are looked at in the bucket itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.registry import REGISTRY_FILE
from runner.demo import write_demo_files
from runner.errors import ExecutionError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.storage.objects import ObjectPath
from runner.storage.ops import names
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = pytest.mark.spark

TABLES = ("request_logs", "error_events", "performance_metrics", "endpoint_counts",
          "_dead_letter")


@pytest.fixture
def s3_env(s3_bucket, monkeypatch):
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    return s3_bucket


def _project(tmp_path: Path, bucket_uri: str, engine: str):
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {bucket_uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {bucket_uri}/cp\n")
           .replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n"))
    root = write_project(tmp_path / "proj", {**EXAMPLE_FILES,
                                             "models/endpoint_counts.sql": ENDPOINT_COUNTS},
                         project_yml=yml, engine=engine)
    (root / "incoming").mkdir()
    return load_project(root)


def _run(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _exact(project) -> None:
    expected = expected_tables(project.root / "incoming", TABLES)
    actual = actual_tables(project.warehouse)
    for name in TABLES:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, f"{name}: lost {list(lost)[:3]}, extra {list(extra)[:3]}"


# The spark engine's run is in the slow set (the suite's budget): delta-spark tables in a
# bucket stay in the default run through tests/storage/test_spark_s3.py, and both engines run
# this in `-m slow`.
@pytest.mark.parametrize("delta_engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)],
                         indirect=True)
def test_stream_and_replay_with_every_table_in_a_bucket(tmp_path, s3_env, delta_engine,
                                                        armed) -> None:
    project = _project(tmp_path, s3_env.uri, delta_engine)
    assert isinstance(project.checkpoint, ObjectPath)
    write_demo_files(project.root / "incoming", events=1500, files=2, poison_every=300)
    summary = _run(project)
    assert summary.batches >= 1
    _exact(project)
    checkpoint = project.checkpoint
    assert {REGISTRY_FILE, "commits", "offsets", "ledger"} <= set(names(checkpoint))
    assert "runner.lock" not in names(checkpoint)  # the lease was released
    assert not any(Path(project.root, p).exists() for p in ("cp", "wh", "s3:"))
    # Spark's own checkpoint files went through spark-hadoop-cloud's manager (one PUT each)
    from pyspark.sql import SparkSession

    from runner.runtime.client.session import CHECKPOINT_MANAGER_KEY, CLOUD_CHECKPOINT_MANAGER

    active = SparkSession.getActiveSession()
    assert active is not None
    assert active.conf.get(CHECKPOINT_MANAGER_KEY, None) == CLOUD_CHECKPOINT_MANAGER

    # a crash after one table committed: the replay writes the rest, nothing twice
    write_demo_files(project.root / "incoming", events=800, files=1, poison_every=300)
    armed("sink.after_commit:request_logs=raise")
    with pytest.raises(ExecutionError, match="failpoint"):
        _run(project)
    armed("")
    _run(project)
    _exact(project)


@pytest.mark.slow
def test_full_refresh_with_every_table_in_a_bucket(tmp_path, s3_env, delta_engine) -> None:
    project = _project(tmp_path, s3_env.uri, delta_engine)
    write_demo_files(project.root / "incoming", events=900, files=2, poison_every=300)
    _run(project)
    # --full-refresh drops the bucket's tables and checkpoint and rebuilds them all, in a
    # process of its own, as an operator runs it.
    refresh = subprocess.run([sys.executable, "-m", "runner", "stream", "--available-now",
                              "--full-refresh", "--project-dir", str(project.root)],
                             capture_output=True, text=True, timeout=600)
    assert refresh.returncode == 0, refresh.stderr[-3000:]
    _exact(project)


@pytest.mark.slow
@pytest.mark.parametrize("delta_engine", ["spark"], indirect=True)
def test_a_merge_model_rebuilt_in_a_bucket_on_delta_spark(tmp_path, s3_env, delta_engine) -> None:
    """``--full-refresh --select`` of a merge model on the spark engine: the drop leaves S3A's
    directory marker ``_delta_log/`` in the bucket (object_store cannot delete a key ending in
    ``/``), which delta-spark's ``isDeltaTable`` took for a table, so the rebuild's first batch
    merged into a table that did not exist (DELTA_TABLE_NOT_FOUND; found by the generated
    operations on S3, seed 7, step 1)."""
    project = _project(tmp_path, s3_env.uri, delta_engine)
    write_demo_files(project.root / "incoming", events=600, files=2, poison_every=300)
    _run(project)
    _run(load_project(project.root), rebuild=["endpoint_counts"])
    _exact(project)
