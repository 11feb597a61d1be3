"""Sources and seeds pinned per batch with the lookup source, the checkpoint and the warehouse
in a bucket (moto's S3 server), both engines: tests/faults/test_enrichment_faults.py's scenario.
``runner stream`` in its own process is killed (a failpoint's ``exit``) after one table
committed batch 1 and before the other did; the dimension (a Delta table in the bucket, written
with delta-rs) and the seed's CSV then change. The replay writes the other table with the
versions batch 1 pinned (the pins and the kept seed in the checkpoint in the bucket): every
table's rows of one batch joined one source version and one seed content, read back with
delta-rs through the bucket.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.project.loader import load_project
from runner.storage.objects import ObjectPath
from tests.faults.test_enrichment_faults import FILES, YML, pinned_replay
from tests.storage.test_parking_on_s3 import _upload
from tests.support.projects import write_project

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a runner process killed, two runs


def test_a_replay_joins_the_versions_its_batch_pinned_in_a_bucket(
        tmp_path: Path, s3_bucket, monkeypatch, delta_engine: str) -> None:
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)  # the killed process inherits them
    uri = s3_bucket.uri
    dim = f"{uri}/dim"
    yml = (YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n"))
    files = {**FILES, "models/sources.yml": FILES["models/sources.yml"].replace(
        "path: ../dim", f"path: {dim}")}
    root = write_project(tmp_path / "proj", files, project_yml=yml, engine=delta_engine)
    (root / "incoming").mkdir()
    assert isinstance(load_project(root).checkpoint, ObjectPath)
    pinned_replay(root, dim, after_feed=lambda: _upload(root, uri))  # a URI: delta-rs takes it
