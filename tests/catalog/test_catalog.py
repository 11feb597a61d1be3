"""Issue 31: every model's table registered by name in a real Hive metastore (the
``hive_metastore`` fixture), on both engines.

The runner runs in a process of its own (``python -m runner stream``): a Hive-enabled session
cannot be the suite's shared one. A second Spark process (``tests.support.read_by_name``) then
reads every table by name, as an analyst's session would, and must get exactly the rows.
Each test keeps to schemas of its own in the shared metastore.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.sinks.tables import read_table
from tests.support.metastore import HiveMetastore
from tests.support.projects import BASE_YML, write_project

pytestmark = pytest.mark.spark  # JVMs: the metastore, the runner's and the reader's

REQUESTS = "SELECT eventId, request.endpoint AS endpoint FROM parsed_events\n"
ORDERS = ("{{ config(schema='{schema}_finance', alias='orders_v2') }}\n"
          "SELECT eventId, request.status_code AS status FROM parsed_events\n")
EVENTS = [
    {"eventId": "e1", "timestamp": "2024-01-01T00:00:00Z",
     "request": {"endpoint": "/a", "method": "GET", "latency_ms": 5, "status_code": 200}},
    {"eventId": "e2", "timestamp": "2024-01-01T00:00:01Z",
     "request": {"endpoint": "/b", "method": "GET", "latency_ms": 7, "status_code": 500}},
]
#: Runner and reader JVMs: a smaller heap than the suite's 2 GB, on two shared cores.
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "SPARK_DRIVER_MEMORY": "1g"}


def _yml(uri: str, schema: str, engine: str) -> str:
    return (BASE_YML.replace("  engine: rs\n", f"  engine: {engine}\n")
            + "spark:\n  conf:\n"
            "    spark.sql.catalogImplementation: hive\n"
            f"    spark.hadoop.hive.metastore.uris: {uri}\n"
            + f"catalog:\n  schema: {schema}\n")


def _write_events(root: Path, name: str, events: list[dict]) -> None:
    folder = root / "incoming"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(e) + "\n" for e in events))


def _runner(root: Path, command: str, *args: str, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", command, "--project-dir", str(root),
                           *args], capture_output=True, text=True, env=ENV, timeout=timeout,
                          check=False)


def _stream(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = _runner(root, "stream", "--available-now", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def read_by_name(uri: str, *names: str, ddl: tuple[str, ...] = ()) -> dict:
    """Every name's columns and sorted rows (strings), read by a Spark process of its own."""
    args = [a for d in ddl for a in ("--ddl", d)]
    done = subprocess.run([sys.executable, "-m", "tests.support.read_by_name", uri, *names,
                           *args], capture_output=True, text=True, env=ENV, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _by_path(path: Path) -> list[list[str | None]]:
    table = read_table(str(path)).to_pylist()
    return sorted([[None if v is None else str(v) for v in row.values()] for row in table],
                  key=lambda r: [x or "" for x in r])


# Both engines register through the run's Spark session the same way: the spark run is in the
# slow set to keep the default suite within its budget (three JVMs per run).
@pytest.mark.parametrize("engine", ["rs", pytest.param("spark", marks=pytest.mark.slow)])
def test_a_stream_registers_every_model_by_name(tmp_path: Path, engine: str,
                                                hive_metastore: HiveMetastore) -> None:
    schema = f"names_{engine}"
    root = write_project(tmp_path / "p", {
        "models/requests.sql": REQUESTS, "models/orders.sql": ORDERS.replace("{schema}", schema),
    }, project_yml=_yml(hive_metastore.uri, schema, engine))
    _write_events(root, "1.json", EVENTS)
    done = _stream(root)
    assert f"registered as {schema}.requests" in done.stdout + done.stderr

    seen = read_by_name(hive_metastore.uri, f"{schema}.requests",
                        f"{schema}_finance.orders_v2")
    assert seen[f"{schema}.requests"] == {"columns": ["eventId", "endpoint"],
                                          "rows": [["e1", "/a"], ["e2", "/b"]]}
    assert seen[f"{schema}_finance.orders_v2"]["rows"] == [["e1", "200"], ["e2", "500"]]
    # the name is the table at the model's location, not a copy
    assert seen[f"{schema}.requests"]["rows"] == _by_path(root / "wh" / "requests")

    status = _runner(root, "status", "--format", "json")
    assert status.returncode == 0, status.stderr
    tables = json.loads(status.stdout)["tables"]
    assert tables["orders"]["relation"] == f"{schema}_finance.orders_v2"


def test_an_unreachable_or_missing_metastore_stops_the_start_with_exit_2(tmp_path: Path) -> None:
    """One engine (rs): the check is made before either engine writes anything."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    uri = f"thrift://127.0.0.1:{port}"
    root = write_project(tmp_path / "p", {"models/requests.sql": REQUESTS},
                         project_yml=_yml(uri, "unreachable", "rs"))
    _write_events(root, "1.json", EVENTS)
    started = time.monotonic()
    done = _runner(root, "stream", "--available-now", timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot reach the metastore at {uri}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / "wh" / "requests").exists()  # nothing written
    print(f"unreachable metastore: exit 2 after {took:.1f} s (JVM start included)")
    assert took < 90

    # catalog: with no metastore at all (Spark's in-memory catalog would forget the names)
    (root / "project.yml").write_text((root / "project.yml").read_text().replace(
        "    spark.sql.catalogImplementation: hive\n", "    spark.sql.shuffle.partitions: 2\n"))
    done = _runner(root, "stream", "--available-now", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "this Spark session has none (spark.sql.catalogImplementation is in-memory)" \
        in done.stderr


@pytest.mark.slow  # a metastore and a stream of its own
def test_a_metastore_gone_mid_stream_does_not_stop_the_stream(tmp_path: Path) -> None:
    """One engine (rs): what is tested is that no batch needs the metastore, whichever engine
    writes; a metastore of its own, since this test stops it."""
    metastore = HiveMetastore().start()
    try:
        root = write_project(tmp_path / "p", {"models/requests.sql": REQUESTS},
                             project_yml=_yml(metastore.uri, "gone", "rs"))
        (root / "incoming").mkdir()
        proc = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                                 str(root), "--trigger", "1 second"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=ENV)
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:  # started: the metastore answered the start-up checks
            lines.append(line)
            if line.startswith("pipeline "):
                break
        metastore.stop()
        for i, events in enumerate(([EVENTS[0]], [EVENTS[1]])):
            _write_events(root, f".{i}.tmp", events)
            (root / "incoming" / f".{i}.tmp").rename(root / "incoming" / f"{i}.json")
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("batch "):
                    break
        proc.terminate()
        out, _ = proc.communicate(timeout=120)
        text = "".join(lines) + out
        assert proc.returncode == 0, text
        assert "cannot register gone.requests" in text and "the stream goes on" in text
        assert _by_path(root / "wh" / "requests") == [["e1", "/a"], ["e2", "/b"]]
    finally:
        metastore.stop()


@pytest.mark.slow  # three JVMs (the metastore's, runner seed's, the reader's)
def test_seed_registers_each_seed_by_name(tmp_path: Path, hive_metastore: HiveMetastore) -> None:
    schema = "seeded"
    root = write_project(tmp_path / "p", {
        "models/requests.sql": REQUESTS, "seeds/owners.csv": "endpoint,team\n/a,shop\n/b,\n"},
        project_yml=_yml(hive_metastore.uri, schema, "rs"))
    done = _runner(root, "seed", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["seeds"]["owners"]["registered"] == f"{schema}.owners"
    seen = read_by_name(hive_metastore.uri, f"{schema}.owners")
    assert seen[f"{schema}.owners"] == {"columns": ["endpoint", "team"],
                                        "rows": [["/a", "shop"], ["/b", None]]}
    again = _runner(root, "seed", "--format", "json")  # unchanged, and already registered
    assert json.loads(again.stdout)["seeds"]["owners"]["outcome"] == "unchanged"
