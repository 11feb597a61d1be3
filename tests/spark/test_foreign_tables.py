"""Tables that are not ours, on both engines (runner/sinks/ownership.py): a table another job
wrote at a merge model's location is refused (exit 2) and left as it was, whichever engine
wrote it; an empty table registered ahead of the first batch is written into; a model added to
a running checkpoint finds a foreign table at its location and is refused before its backfill.
Tables are read back with deltalake.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from runner.build import compile_project
from runner.errors import ConfigError
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, write_project

pytestmark = pytest.mark.spark

FOREIGN = pa.table({"endpoint": ["/a", "/b"], "requests": pa.array([10, 20], pa.int64()),
                    "errors": pa.array([1, 2], pa.int64())})


def _project(tmp_path: Path, files: dict[str, str], engine: str):
    root = write_project(tmp_path / "proj", files, engine=engine, project_yml=BASE_YML)
    incoming = root / "incoming"
    incoming.mkdir(exist_ok=True)
    (incoming / "e.json").write_text("".join(json.dumps({
        "eventId": f"e{i}", "timestamp": "2024-01-01T00:00:00Z",
        "request": {"endpoint": "/a", "method": "GET", "latency_ms": 5,
                    "status_code": 500 if i == 0 else 200}}) + "\n" for i in range(3)))
    return load_project(root)


def _stream(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _read(path: Path) -> tuple[int, list[dict]]:
    table = DeltaTable(str(path))
    rows = table.to_pyarrow_dataset().to_table(use_threads=False).to_pylist()
    return table.version(), sorted(rows, key=lambda r: r["endpoint"])


def test_a_table_another_job_wrote_is_refused(tmp_path, delta_engine, request) -> None:
    project = _project(tmp_path, {"models/endpoint_counts.sql": ENDPOINT_COUNTS}, delta_engine)
    path = project.table_path("endpoint_counts")
    if delta_engine == "spark":  # written by Spark, as a Spark job of someone else's would
        spark = request.getfixturevalue("spark")
        spark.createDataFrame(FOREIGN.to_pandas()).write.format("delta").save(str(path))
    else:
        write_deltalake(str(path), FOREIGN)
    before = _read(path)
    for full_refresh in (False, True):
        with pytest.raises(ConfigError, match="did not write") as caught:
            _stream(project, full_refresh=full_refresh)
        assert caught.value.exit_code == 2 and str(path) in caught.value.message
        assert _read(path) == before  # not merged into, not dropped
    assert before[1] == sorted(FOREIGN.to_pylist(), key=lambda r: r["endpoint"])


def test_an_empty_table_registered_ahead_is_written(tmp_path, delta_engine) -> None:
    project = _project(tmp_path, {"models/endpoint_counts.sql": ENDPOINT_COUNTS}, delta_engine)
    path = project.table_path("endpoint_counts")
    write_deltalake(str(path), FOREIGN.slice(0, 0))  # a table with no file yet
    _stream(project)
    assert _read(path)[1] == [{"endpoint": "/a", "requests": 3, "errors": 1}]


def test_a_model_added_to_a_running_checkpoint_finds_a_foreign_table(tmp_path) -> None:
    project = _project(tmp_path, {"models/request_ids.sql":
                                  "SELECT eventId FROM parsed_events"}, "rs")
    _stream(project)
    path = project.table_path("endpoint_counts")
    write_deltalake(str(path), FOREIGN)
    (project.root / "models" / "endpoint_counts.sql").write_text(ENDPOINT_COUNTS)
    with pytest.raises(ConfigError, match="the table of model endpoint_counts is at"):
        _stream(load_project(project.root))
    assert _read(path)[0] == 0
