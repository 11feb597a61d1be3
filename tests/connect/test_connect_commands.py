"""What else a deployment runs over Spark Connect (docs/CONNECT.md), each command a client
process with ``SPARK_REMOTE`` set against the test run's standalone server:

- ``runner test``: the unit tests run the batch path through the client session, their rows
  computed by the server (nightly: 10-28 s);
- ``catalog:`` names in the server's catalog (its session catalog here: shared by every
  session of the server), read back by name by another client of the server; then
  ``runner maintain`` compacts the tables the server wrote, and the stream goes on (nightly,
  both engines);
- a project whose files source, checkpoint and tables all live in a bucket (moto's S3 server),
  the endpoint and keys only in the deployment's profile: the client (the lease, Spark's
  settings) and the server (S3A for Spark's reads, the streaming checkpoint and delta-spark's
  writes; obstore and delta-rs on its Python worker) both take them from there, and neither
  process has them in its environment (nightly, both engines).

Every table is read back with delta-rs and compared with the reference computed from the
input files alone (tests/support/reference.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.tables import read_table
from runner.storage.objects import object_path
from runner.storage.ops import write_atomic
from tests.connect.test_connect import MODELS, YML
from tests.support.connect_runs import client_env, run_client, start_client, wait_all
from tests.support.projects import write_project
from tests.support.reference import DEAD, actual_tables, expected_tables

pytestmark = [pytest.mark.spark, pytest.mark.connect]

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "ae" / "shop"
TABLES = ("request_logs", "error_events", "performance_metrics", "endpoint_counts", DEAD)
MODEL_TABLES = TABLES[:-1]

#: A unit case whose expected totals are wrong (the prior 10 plus 2 is 12, not 13).
WRONG_TOTAL = """
  - name: wrong_total
    given:
      prior_rows:
        - {endpoint: /cart, requests: 10, errors: 1, last_seen: "2026-01-01T00:00:00Z"}
      events:
        - {eventId: e1, timestamp: "2026-01-02T00:00:00Z", request: {endpoint: /cart, status_code: 200}}
        - {eventId: e2, timestamp: "2026-01-02T00:00:05Z", request: {endpoint: /cart, status_code: 503}}
    expect:
      rows:
        - {endpoint: /cart, requests: 13, errors: 2, last_seen: "2026-01-02T00:00:05Z"}
"""


def _add_files(incoming: Path, first: int, count: int, *, events: int = 200) -> None:
    """``count`` demo files named ``events-<n>.json`` from ``first`` on (one batch each under
    ``max_files_per_trigger: 1``), poison records among them."""
    for i in range(first, first + count):
        part = incoming / f"part{i}"
        write_demo_files(part, events=events, files=1, poison_every=40)
        (part / "events-00000.json").rename(incoming / f"events-{i:05d}.json")
        part.rmdir()


def _exact(incoming: Path, actual: dict) -> None:
    expected = expected_tables(incoming, TABLES)
    for name in TABLES:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (f"{name}: {sum(lost.values())} rows lost, "
                                        f"{sum(extra.values())} extra")


@pytest.mark.slow  # one client, two cases: 10-17 s idle, 28 s at load 8 (over the 15 s budget)
def test_unit_tests_run_through_the_connect_server(tmp_path: Path, connect_server) -> None:
    """``runner test --kind unit`` as a client: a case that holds passes, one whose expected
    rows are wrong fails (exit 1), no JVM under the runner."""
    root = tmp_path / "shop"
    shutil.copytree(SHOP, root)
    stats = root / "models" / "endpoint_stats.yml"
    stats.write_text(stats.read_text() + WRONG_TOTAL.lstrip("\n"))
    proc = start_client(root, connect_server.url, "--kind", "unit", "--select",
                        "endpoint_stats", command="test")
    jvms = wait_all([proc], timeout=180)
    out = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 1, out
    assert "PASS  unit endpoint_stats.accumulates_onto_prior_rows" in out, out
    assert "FAIL  unit endpoint_stats.wrong_total" in out, out
    assert "2 tests: 1 passed, 1 failed" in out, out
    assert jvms == [], jvms


def _read_by_name(url: str, *names: str) -> dict:
    """Every name's rows (strings, sorted) as another client of the server reads them."""
    done = subprocess.run([sys.executable, "-m", "tests.support.read_by_name", url, *names],
                          capture_output=True, text=True, env=client_env(url), timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _text(value: object) -> str | None:
    """A value as the by-name reader prints it: a UTC timestamp without its zone (a client
    session's time zone is UTC: runner.runtime.client.remote)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return None if value is None else str(value)


def _by_path(path: Path) -> list[list[str | None]]:
    rows = read_table(str(path)).to_pylist()
    return sorted([[_text(v) for v in row.values()] for row in rows],
                  key=lambda r: [x or "" for x in r])


@pytest.mark.slow  # three streams and a maintenance per engine: ~60 s (rs), ~100 s (spark)
@pytest.mark.parametrize("engine", ["rs", "spark"])
def test_catalog_names_and_maintain_over_connect(tmp_path: Path, connect_server,
                                                 engine: str) -> None:
    """``catalog: {schema: ...}`` over Connect: every model registered in the server's catalog
    as ``<schema>.<model>`` (an external Delta table at its folder), read by name by another
    client exactly as delta-rs reads the folder; a name taken by a table the pipeline does not
    own is refused at start (exit 2, nothing written); ``runner maintain`` compacts the three
    batches' files, and the stream then goes on, exact."""
    url = connect_server.url
    schema = f"c45_{engine}_{uuid.uuid4().hex[:8]}"  # the server's catalog is the run's
    yml = YML + f"catalog:\n  schema: {schema}\n"
    root = write_project(tmp_path / "proj", MODELS, project_yml=yml, engine=engine)
    _add_files(root / "incoming", 0, 3)

    code, out = run_client(root, url, "--available-now")
    assert code == 0, out
    for name in MODEL_TABLES:
        assert f"table {name} registered as {schema}.{name}" in out, out
    _exact(root / "incoming", actual_tables(root / "wh"))
    names = [f"{schema}.{m}" for m in MODEL_TABLES]
    assert _read_by_name(url, *names) == {
        f"{schema}.{m}": {"columns": read_table(str(root / "wh" / m)).column_names,
                          "rows": _by_path(root / "wh" / m)} for m in MODEL_TABLES}

    code, out = run_client(root, url, "--format", "json", command="maintain")
    assert code == 0, out
    done = json.loads(out[out.index("{"):])["tables"]
    assert done["request_logs"]["files_before"] == 3, done
    assert done["request_logs"]["files_after"] == 1, done
    _add_files(root / "incoming", 3, 1)
    code, out = run_client(root, url, "--available-now")
    assert code == 0, out
    assert "registered as" not in out, out  # kept from the first run
    _exact(root / "incoming", actual_tables(root / "wh"))
    assert _read_by_name(url, f"{schema}.endpoint_counts")[f"{schema}.endpoint_counts"][
        "rows"] == _by_path(root / "wh" / "endpoint_counts")

    other = write_project(tmp_path / "other", MODELS, project_yml=yml, engine=engine)
    _add_files(other / "incoming", 0, 1)
    code, out = run_client(other, url, "--available-now")
    assert code == 2, out
    assert f"the name {schema}." in out and "is taken by a table this pipeline does not own" \
        in out, out
    assert not list((other / "wh").glob("*")), "a table was written"


def _upload(local: Path, bucket_uri: str) -> None:
    for f in sorted(local.glob("*.json")):
        write_atomic(object_path(f"{bucket_uri}/incoming/{f.name}"), f.read_bytes())


def _bucket_project(tmp_path: Path, bucket, engine: str, monkeypatch: pytest.MonkeyPatch
                    ) -> tuple[Path, Path]:
    """The project with its source, checkpoint and warehouse in ``bucket`` (the locations,
    the endpoint and the keys in its profile, a target of the run's profiles.yml, as a
    deployment's would be), and the local folder its input files are written to first.
    The bucket's settings leave this process's environment (the clients inherit it)."""
    uri = bucket.uri
    yml = (YML.replace("warehouse: wh\n", f"warehouse: {uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {uri}/cp\n")
           .replace("  path: incoming\n", f"  path: {uri}/incoming\n"))
    root = write_project(tmp_path / "proj", MODELS, project_yml=yml, engine=engine,
                         target={"storage": dict(bucket.env)})
    assert "s3://" not in (root / "project.yml").read_text()
    for key in bucket.env:
        monkeypatch.delenv(key, raising=False)
    return root, tmp_path / "files"


@pytest.mark.slow  # two streams, a status and a maintenance per engine: ~50 s (rs), ~80 s (spark)
@pytest.mark.parametrize("engine", ["rs", "spark"])
def test_bucket_checkpoint_and_tables_over_connect(tmp_path: Path, connect_server, s3_bucket,
                                                   engine: str, monkeypatch) -> None:
    """Source files, checkpoint (Spark's logs, the runner's lease and files) and tables in a
    bucket, its endpoint and keys in the profile only: two batches, then a restart with one
    more file, exact (read back with delta-rs); ``runner status`` and ``runner maintain`` as
    clients on the same profile."""
    url, uri = connect_server.url, s3_bucket.uri
    root, local = _bucket_project(tmp_path, s3_bucket, engine, monkeypatch)
    _add_files(local, 0, 2)
    _upload_with(s3_bucket, local)

    code, out = run_client(root, url, "--available-now")
    assert code == 0, out
    assert f"checkpoint {uri}/cp" in out, out
    _add_files(local, 2, 1)
    _upload_with(s3_bucket, local)
    code, out = run_client(root, url, "--available-now")
    assert code == 0, out
    code, out = run_client(root, url, "--format", "json", command="status")
    assert code == 0, out
    status = json.loads(out[out.index("{"):])
    assert status["backlog"]["pending"] == 0 and status["backlog"]["files_read"] == 3, status
    code, out = run_client(root, url, command="maintain")
    assert code == 0, out

    for key, value in s3_bucket.env.items():  # this process reads the bucket now
        monkeypatch.setenv(key, value)
    _exact(local, actual_tables(object_path(f"{uri}/wh")))


@pytest.mark.slow  # two streams, a 30 s trigger and a 15 s lease running out: ~100 s
def test_a_killed_clients_lease_in_a_bucket_stops_its_query(tmp_path: Path, connect_server,
                                                             s3_bucket, monkeypatch) -> None:
    """The checkpoint in a bucket, so the client's lock is a lease there (15 s to live): the
    client (a 30 s trigger, three files) is SIGKILLed once Spark has logged batch 0; nothing
    renews the lease, and its query's worker's permit refuses the first batch that starts 10 s
    or more after the last renewal (``LeaseLostError``, in the run's results folder in the
    bucket); the next start takes the expired lease over, replays that batch, and every table
    is exact."""
    import obstore

    url, uri = connect_server.url, s3_bucket.uri
    root, local = _bucket_project(tmp_path, s3_bucket, "rs", monkeypatch)
    _add_files(local, 0, 3)
    _upload_with(s3_bucket, local)
    store = s3_bucket.store()

    def keys(prefix: str) -> list[str]:
        return [m["path"] for batch in obstore.list(store, prefix=prefix) for m in batch]

    env = client_env(url, RUNNER_LEASE_SECONDS="15")
    # a batch every 30 s (Spark aligns them to multiples of the interval): a batch that
    # starts within 10 s of the lease's last renewal may still commit (the classic window),
    # the next one, 30 s on, is refused
    proc = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                             str(root), "--trigger", "30 seconds"], env=env,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    while "cp/commits/0" not in keys("cp/commits/"):
        assert proc.poll() is None and time.monotonic() < deadline, (
            proc.stdout.read() if proc.stdout and proc.poll() is not None else "timed out")
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    failed: list[str] = []
    deadline = time.monotonic() + 120
    while not failed and time.monotonic() < deadline:
        failed = [k for k in keys("cp/connect/") if k.endswith(".failed")]
        time.sleep(0.5)
    assert failed, f"no batch of the killed client's query failed: {keys('cp/connect/')}"
    doc = json.loads(bytes(obstore.get(store, failed[0]).bytes()))
    assert doc["class"] == "LeaseLostError" and "stopped writing" in doc["message"], doc

    proc = subprocess.Popen([sys.executable, "-m", "runner", "stream", "--project-dir",
                             str(root), "--available-now"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    assert wait_all([proc], timeout=300) == []
    out = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 0, out
    for key, value in s3_bucket.env.items():  # this process reads the bucket now
        monkeypatch.setenv(key, value)
    _exact(local, actual_tables(object_path(f"{uri}/wh")))


def _upload_with(bucket, local: Path) -> None:
    """:func:`_upload` with the bucket's settings given to this process for the upload only."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in bucket.env.items():
            patch.setenv(key, value)
        _upload(local, bucket.uri)


def test_a_metastore_the_server_does_not_use_is_refused(tmp_path: Path, connect_server) -> None:
    """The target names a Hive metastore, the server (started without one) uses its own
    catalog: a session would take the setting and ignore it (the server's metastore client is
    made when it starts), so the names would go elsewhere: exit 2, both keys named, nothing
    written. Default suite: one client start that ends before any query (~3 s)."""
    yml = YML + "catalog:\n  schema: c45_elsewhere\n"
    root = write_project(tmp_path / "proj", MODELS, project_yml=yml, engine="rs", target={
        "spark": {"conf": {"spark.sql.catalogImplementation": "hive",
                           "spark.hadoop.hive.metastore.uris": "thrift://127.0.0.1:9"}}})
    _add_files(root / "incoming", 0, 1, events=10)
    code, out = run_client(root, connect_server.url, "--available-now", timeout=120)
    assert code == 2, out
    assert "static on the Spark Connect server" in out, out
    assert "spark.hadoop.hive.metastore.uris (server: not set)" in out, out
    assert "spark.sql.catalogImplementation" in out, out
    assert not list((root / "wh").glob("*")) and not (root / "cp" / "commits").exists(), out


@pytest.mark.slow  # a metastore and a second Connect server (~1.3 GB), one stream: ~60 s
def test_catalog_names_in_the_servers_hive_metastore(tmp_path: Path) -> None:
    """A Connect server started with a Hive metastore (its own settings, as a cluster's):
    the project asks for ``hive`` and the profile names the same metastore (the same values
    as the server's: accepted); every model is registered there, and a classic Spark process
    of its own reads each name through the metastore exactly as delta-rs reads the folder."""
    from tests.catalog.test_catalog import read_by_name
    from tests.support.connect_server import ConnectServer
    from tests.support.metastore import HiveMetastore

    with HiveMetastore() as metastore, ConnectServer(conf={
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.hive.metastore.uris": metastore.uri}) as server:
        schema = "c45_hive"
        yml = YML + f"catalog:\n  schema: {schema}\n"
        root = write_project(tmp_path / "proj", MODELS, project_yml=yml, engine="spark",
                             target={"spark": {"conf": {
                                 "spark.sql.catalogImplementation": "hive",
                                 "spark.hadoop.hive.metastore.uris": metastore.uri}}})
        _add_files(root / "incoming", 0, 2)
        code, out = run_client(root, server.url, "--available-now")
        assert code == 0, f"{out}\nserver: {server.log()}"
        _exact(root / "incoming", actual_tables(root / "wh"))
        names = read_by_name(metastore.uri, *(f"{schema}.{m}" for m in MODEL_TABLES))
    assert {n: doc.get("rows", doc) for n, doc in names.items()} == {
        f"{schema}.{m}": _by_path(root / "wh" / m) for m in MODEL_TABLES}
