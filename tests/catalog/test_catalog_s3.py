"""Tables in a bucket (moto's S3 server) registered by name in a real Hive metastore: a
separate Spark process reads them by name and gets exactly the rows. Slow: four JVMs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.catalog.test_catalog import ENV, EVENTS, REQUESTS, _write_events, _yml
from tests.support.metastore import HiveMetastore
from tests.support.projects import write_project

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_tables_in_a_bucket_are_read_by_name(tmp_path, s3_bucket,
                                             hive_metastore: HiveMetastore) -> None:
    env = {**ENV, **s3_bucket.env}
    yml = _yml(hive_metastore.uri, "in_bucket", "rs").replace(
        "warehouse: wh\n", f"warehouse: {s3_bucket.uri}/wh\n")
    root = write_project(tmp_path / "p", {"models/requests.sql": REQUESTS}, project_yml=yml)
    _write_events(root, "1.json", EVENTS)
    done = subprocess.run([sys.executable, "-m", "runner", "stream", "--available-now",
                           "--project-dir", str(root)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    read = subprocess.run([sys.executable, "-m", "tests.support.read_by_name",
                           hive_metastore.uri, "in_bucket.requests", "--storage",
                           s3_bucket.uri], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert read.returncode == 0, read.stderr[-3000:]
    seen = json.loads(read.stdout)["in_bucket.requests"]
    assert seen == {"columns": ["eventId", "endpoint"], "rows": [["e1", "/a"], ["e2", "/b"]]}, \
        seen
