"""Commands that read tables in a bucket end with exit 0: no crash while Python shuts down.

Issue 47: ``runner show`` on an ``s3://`` warehouse exited 139 (SIGSEGV) after printing
everything, once tables held more than one data file (four batches, a rebuild); a fresh
project with one file per table did not. Measured on moto (deltalake 1.6.6, pyarrow 26): a
``pyarrow.dataset`` opened by delta-rs reads objects through a Python file handler
(``DeltaStorageHandler``) on Arrow's I/O threads; ``Dataset.head(n)`` returns as soon as it
has ``n`` rows and leaves the read-ahead of the next files running, and a read that calls back
into Python while the interpreter is finalising crashes it (the core's crashed thread:
``arrow::py::PyReadableFile::ReadAt`` under ``ThreadPool`` while the main thread was in the
exit's garbage collection). 2 tables x 3 files: 10 of 12 processes crashed; one file per
table: 0 of 10; a full read (``to_table``/``count_rows``) or ``use_threads=False``: 0 of 12.

The tables here are written by delta-rs itself (several appends each, as batches make them):
no Spark, a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.projects import BASE_YML, write_project

MODELS = {"models/clicks.sql": "SELECT eventId FROM parsed_events\n",
          "models/views.sql": "SELECT eventId FROM parsed_events\n"}
RUNS = 6  # each crashed with probability ~0.8 before the fix: all six passing by luck ~1e-4


def _write_tables(uri: str, env: dict[str, str], *, names: tuple[str, ...], files: int) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    options = {k: v for k, v in env.items() if k.startswith("AWS_")}
    for name in names:
        for batch in range(files):
            rows = pa.table({"eventId": [f"{name}-{batch}-{i}" for i in range(5)],
                             "_batch_id": pa.array([batch] * 5, pa.int64())})
            write_deltalake(f"{uri}/wh/{name}", rows, mode="append", storage_options=options)


def test_show_on_a_bucket_ends_with_exit_0_every_time(tmp_path: Path, s3_bucket) -> None:
    yml = BASE_YML.replace("warehouse: wh\n", f"warehouse: {s3_bucket.uri}/wh\n")
    root = write_project(tmp_path / "proj", MODELS, project_yml=yml)
    env = {**os.environ, **s3_bucket.env}
    _write_tables(s3_bucket.uri, env, names=("clicks", "views", "_dead_letter"), files=4)

    codes = []
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-m", "runner", "show", "--project-dir",
                               str(root)], capture_output=True, text=True, env=env, timeout=120)
        assert "clicks: 20 rows, version 3" in done.stdout, (done.stdout, done.stderr[-2000:])
        codes.append(done.returncode)
    assert codes == [0] * RUNS, codes


@pytest.mark.parametrize("limit", ["0", "25"])
def test_show_with_no_sample_or_a_sample_of_every_row(tmp_path: Path, s3_bucket,
                                                       limit: str) -> None:
    yml = BASE_YML.replace("warehouse: wh\n", f"warehouse: {s3_bucket.uri}/wh\n")
    root = write_project(tmp_path / "proj", MODELS, project_yml=yml)
    env = {**os.environ, **s3_bucket.env}
    _write_tables(s3_bucket.uri, env, names=("clicks",), files=3)
    done = subprocess.run([sys.executable, "-m", "runner", "show", "--limit", limit,
                           "--project-dir", str(root)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("clicks: 15 rows"))
    sample = [line for line in lines[start + 1:] if line.startswith("    ")]
    assert len(sample) == (0 if limit == "0" else 15), done.stdout
    assert "views: no table yet" in done.stdout
