"""`runner stream` on the rs engine with its checkpoint and warehouse in an Azure Blob container
(Azurite on loopback): Spark's streaming checkpoint and the staged Parquet files go through
hadoop-azure's ABFS driver (the settings of tests/storage/test_spark_azure.py, derived by
runner/storage/settings.py from the standard ``AZURE_*`` variables), the runner's own files and
the Delta commits through object_store (obstore, delta-rs). Every table holds exactly what the
input calls for, read back by deltalake with the container's options alone (not the runner's
reader); a failure after one table committed a batch is replayed exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.checkpoint.registry import REGISTRY_FILE
from runner.demo import write_demo_files
from runner.errors import ExecutionError
from runner.project.loader import load_project
from runner.storage.objects import ObjectPath
from runner.storage.ops import names
from tests.storage.test_stream_on_s3 import TABLES, _run
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project
from tests.support.reference import actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # ABFS round trips: about 1-2 minutes


def _exact(project: Any, container: Any) -> None:
    def read(path: Path | ObjectPath) -> list[dict[str, Any]]:
        from deltalake import DeltaTable

        settings = container.settings(f"wh/{path.name}")  # the container's options, no more
        table = DeltaTable(settings.location.uri(), storage_options=settings.storage_options)
        return table.to_pyarrow_dataset().to_table(use_threads=False).to_pylist()

    expected = expected_tables(project.root / "incoming", TABLES)
    actual = actual_tables(project.warehouse, read=read)
    for name in TABLES:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, f"{name}: lost {list(lost)[:3]}, extra {list(extra)[:3]}"


def test_rs_stream_and_replay_with_every_table_in_an_azure_container(
        tmp_path: Path, azure_container, monkeypatch, armed) -> None:
    from runner.runtime.client.session import cloud_jars_dir

    if cloud_jars_dir() is None:
        pytest.skip("no .jars/cloud (run scripts/setup.sh)")
    for key, value in azure_container.env.items():
        monkeypatch.setenv(key, value)
    # the contract's spelling, az://container/...: loaded as ABFS's (abfs://container@account
    # .dfs.core.windows.net, abfs: http to the emulator), which Spark, delta-rs and the
    # runner's own files all take
    uri = azure_container.uri
    assert uri.startswith("az://")
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n"))
    root = write_project(tmp_path / "proj", {**EXAMPLE_FILES,
                                             "models/endpoint_counts.sql": ENDPOINT_COUNTS},
                         project_yml=yml, engine="rs")
    (root / "incoming").mkdir()
    project = load_project(root)
    assert isinstance(project.checkpoint, ObjectPath)
    assert str(project.checkpoint) == f"{azure_container.settings().spark_uri()}/cp"
    assert str(project.checkpoint).startswith("abfs://")

    write_demo_files(root / "incoming", events=1200, files=2, poison_every=300)
    summary = _run(project)
    assert summary.batches >= 1
    _exact(project, azure_container)
    assert {REGISTRY_FILE, "commits", "offsets", "ledger"} <= set(names(project.checkpoint))
    assert "runner.lock" not in names(project.checkpoint)  # the lease was released

    # a failure after one table committed: the replay writes the rest, nothing twice
    write_demo_files(root / "incoming", events=700, files=1, poison_every=300)
    armed("sink.after_commit:request_logs=raise")
    with pytest.raises(ExecutionError, match="failpoint"):
        _run(project)
    armed("")
    _run(project)
    _exact(project, azure_container)
