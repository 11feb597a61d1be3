"""A runner process's own session on S3: built by ``build_session`` with the settings of
:func:`runner.storage.settings.storage_settings` (``spark.hadoop.*`` at start, not per
bucket), the credentials and endpoint coming from the standard variables alone. A fresh JVM
in a subprocess, so it is ``slow``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.object_store import Bucket

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    from runner.runtime.client.session import build_session, cloud_jars_dir
    from runner.storage.settings import storage_settings

    uri = sys.argv[1]
    assert cloud_jars_dir() is not None, "no .jars/cloud"
    settings = storage_settings(uri)  # from this process's environment
    spark = build_session(master="local[1]", conf=settings.spark_conf(), log_dir=sys.argv[2])
    spark.range(4).write.format("delta").save(uri)
    spark.range(4, 6).write.format("delta").mode("append").save(uri)
    print("rows", spark.read.format("delta").load(uri).count())
    spark.stop()
""")


def test_a_session_built_with_the_settings(s3_bucket: Bucket, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3_bucket.env, PYTHONPATH=str(REPO))
    uri = f"{s3_bucket.uri}/wh/t"
    done = subprocess.run([sys.executable, "-c", SCRIPT, uri, str(tmp_path / "logs")],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 6" in done.stdout
    table = DeltaTable(uri, storage_options=s3_bucket.settings("wh/t").storage_options)
    assert table.version() == 1
