"""The runner's operations over Spark Connect, walked in sequence on one project (one server for
the test run; every command a client process with ``SPARK_REMOTE`` set):

1. a first run: the shop-style project (append models, one joining the ``endpoint_owners`` seed;
   the ``endpoint_counts`` accumulating merge; poison records dead-lettered) plus ``enriched``
   (a declared Delta source and the ``tiers`` seed, each row labelled with the versions it
   joined), ``checked`` (a ``quarantine`` expectation: its failing rows are dead letters with
   the expectation's reason) and ``fragile`` (divides by zero on one crafted event);
2. a model added to the existing checkpoint (``slow_requests``): backfilled from the history;
3. ``fragile``'s bad event: parked (exit 1), every other table goes on; ``runner status`` and
   ``runner snapshot`` (which read what the server's worker recorded) show it, and the
   snapshot's versions hold exactly the batches of its cut;
4. the source and the seed change and ``fragile`` is fixed: it catches up, new batches join the
   new versions;
5. ``--full-refresh --select enriched``: rebuilt from the history with each batch's pinned
   versions (not the current ones), every other table untouched;
6. Ctrl-C (SIGINT) while ``--trigger`` runs: a clean stop (exit 0, ``stopped by signal``),
   then the next start is exact.

After every step each table is compared with what the input files alone say (the plain-Python
reference, tests/support/reference.py), read back with delta-rs.

Engines: both, nightly (``slow``): the walk is ten runner processes (each a client start,
most a query on the server), measured at 126 s on ``rs`` and 231 s on ``spark`` on the shared
2-core machine at load 13-15. The
``spark`` engine has a Connect path of its own (the DataFrame writer's txn options, SQL
``MERGE INTO`` a view, history through delta-rs) for the stream, the backfill and the rebuild;
``rs`` runs the classic path's delta-rs code on the server's worker and in the client (the
backfill and the rebuild). The default suite keeps the cheaper stream and crash tests
(tests/connect/test_connect.py).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from runner.demo import write_demo_files
from runner.sinks.inspect import open_table
from runner.sinks.tables import read_table
from tests.connect.test_connect import MODELS, YML
from tests.faults.test_enrichment_faults import PINNED, change
from tests.support.connect_runs import run_client, start_client, wait_for
from tests.support.projects import write_project
from tests.support.reference import DEAD, actual_tables, expected_tables, valid_event

pytestmark = [pytest.mark.spark, pytest.mark.connect]

ENDPOINTS = ("/checkout", "/cart", "/search", "/login", "/products", "/orders", "/profile")
BAD_LATENCY = 987654321  # no demo event has it: only the crafted one
FRAGILE = f"SELECT eventId, 100 / (request.latency_ms - {BAD_LATENCY}) AS ratio FROM parsed_events\n"
FIXED = (f"SELECT eventId, 100 / NULLIF(request.latency_ms - {BAD_LATENCY}, 0) AS ratio "
         "FROM parsed_events\n")
QUARANTINE = "expectation checked.no_5xx failed: status_code < 500"
FILES = {
    **MODELS,
    **PINNED,
    "models/checked.sql": """
        {{ config(expectations=[{'name': 'no_5xx', 'expr': 'status_code < 500',
                                 'on_violation': 'quarantine'}]) }}
        SELECT eventId, request.status_code AS status_code FROM parsed_events
    """,
    "models/fragile.sql": FRAGILE,
}
SLOW_REQUESTS = """
SELECT eventId, endpoint, latency_ms FROM {{ ref('performance_metrics') }} WHERE is_slow
"""
BASE = ("request_logs", "error_events", "performance_metrics", "endpoint_counts")


class Walk:
    """The project, its input files (file i is batch i: ``max_files_per_trigger: 1``) and
    the versions each batch must have joined."""

    def __init__(self, tmp: Path, engine: str, url: str) -> None:
        self.root = write_project(tmp / "p", FILES, project_yml=YML, engine=engine)
        self.dim, self.url = tmp / "dim", url
        self.labels: list[str] = []  # batch -> the source's and the seed's label
        self.label = ""
        self.change("v1")

    def change(self, label: str) -> None:
        """The source's owners and the seed's tiers say ``label`` from now on."""
        change(self.root, self.dim, label, endpoints=ENDPOINTS)
        self.label = label

    def feed(self, *, bad: bool = False) -> None:
        """One more input file, one batch; ``bad``: plus an event ``fragile`` divides by zero
        on. Its mtime is after every earlier file's (Spark takes files oldest first)."""
        incoming = self.root / "incoming"
        n = len(self.labels)
        write_demo_files(incoming, events=120, files=1, seed=n, poison_every=40)
        path = incoming / f"events-{n:05d}.json"
        if bad:
            lines = path.read_text().splitlines()
            event = json.loads(next(line for line in lines if valid_event(line)))
            event["eventId"], event["request"]["latency_ms"] = f"bad-{n}", BAD_LATENCY
            path.write_text("\n".join([*lines, json.dumps(event)]) + "\n")
        stamp = time.time() + n  # strictly increasing whatever the clock's resolution
        os.utime(path, (stamp, stamp))
        self.labels.append(self.label)

    def run(self, *args: str, expect: int = 0, command: str = "stream") -> str:
        if command == "stream" and not any(a.startswith("--trigger") for a in args):
            args = ("--available-now", *args)
        code, out = run_client(self.root, self.url, *args, command=command)
        assert code == expect, f"runner {command} {' '.join(args)}: exit {code}\n{out[-4000:]}"
        return out

    # -- the checks ------------------------------------------------------------------------

    def files(self, upto: int | None = None) -> list[Path]:
        return sorted((self.root / "incoming").glob("events-*.json"))[:upto]

    def good(self, upto: int | None = None) -> list[dict]:
        return [e for f in self.files(upto) for line in f.read_text().splitlines()
                if line.strip() and (e := valid_event(line)) is not None]

    def assert_exact(self, *, fragile_upto: int | None = None,
                     slow_requests: bool = False) -> None:
        """Every table as the input files say (``fragile`` only through batch
        ``fragile_upto - 1`` when given: parked since)."""
        incoming, wh = self.root / "incoming", self.root / "wh"
        tables = (*BASE, "slow_requests") if slow_requests else BASE
        expected, actual = expected_tables(incoming, tables), actual_tables(wh)
        for name in tables:
            assert actual[name] == expected[name], _diff(name, expected[name], actual[name])
        dead = read_table(wh / DEAD).to_pylist()
        parse_failures = Counter(r["raw"] for r in dead if r["reason"] != QUARANTINE)
        want = expected_tables(incoming, (DEAD,))[DEAD]
        assert parse_failures == want, _diff(DEAD, want, parse_failures)
        good = self.good()
        quarantined = Counter(json.loads(r["raw"])["eventId"] for r in dead
                              if r["reason"] == QUARANTINE)
        assert quarantined == Counter(e["eventId"] for e in good if not _ok(e))
        assert _ids(wh / "checked") == Counter(e["eventId"] for e in good if _ok(e))
        assert _ids(wh / "fragile") == Counter(e["eventId"] for e in self.good(fragile_upto))
        joined: dict[int, set[str]] = {}
        for row in read_table(wh / "enriched").to_pylist():
            owner, tier = (row["owner"] or "@-").split("@")[1], (row["tier"] or "@-").split("@")[1]
            joined.setdefault(int(row["batch"]), set()).add(f"{owner}/{tier}")
        assert joined == {b: {f"{label}/{label}"} for b, label in enumerate(self.labels)}
        assert _ids(wh / "enriched") == Counter(e["eventId"] for e in good)


def _ok(event: dict) -> bool:
    code = event["request"]["status_code"]
    return code is not None and code < 500


def _ids(table: Path, version: int | None = None) -> Counter:
    if version is None:
        return Counter(read_table(table).column("eventId").to_pylist())
    rows = open_table(str(table), version).to_pyarrow_dataset().to_table(use_threads=False)
    return Counter(rows.column("eventId").to_pylist())


def _diff(name: str, want: Counter, got: Counter) -> str:
    lost, extra = want - got, got - want
    return (f"{name}: {sum(lost.values())} rows lost, {sum(extra.values())} extra "
            f"(e.g. {list(lost)[:2]} {list(extra)[:2]})")


@pytest.mark.slow  # 2-4 min per engine: ten client runs (the module docstring)
@pytest.mark.parametrize("engine", ["rs", "spark"])
def test_operations_over_connect(tmp_path: Path, connect_server, engine: str) -> None:
    walk = Walk(tmp_path, engine, connect_server.url)
    root = walk.root

    walk.feed()  # 1. batch 0
    walk.run()
    walk.assert_exact()

    # 2. a model added to the checkpoint: backfilled through batch 0, then batch 1 streams
    (root / "models" / "slow_requests.sql").write_text(SLOW_REQUESTS)
    walk.feed()
    out = walk.run()
    assert "model slow_requests is new to this checkpoint: backfilling" in out, out
    walk.assert_exact(slow_requests=True)

    # 3. batch 2: fragile divides by zero: parked, exit 1; everything else goes on
    walk.feed(bad=True)
    out = walk.run(expect=1)
    assert "model fragile (models/fragile.sql) parked from batch 2: [DIVIDE_BY_ZERO]" in out, out
    walk.assert_exact(fragile_upto=2, slow_requests=True)
    status = json.loads(walk.run("--format", "json", command="status"))
    assert status["parked"]["fragile"]["since"] == 2, status
    latest = json.loads(walk.run("--format", "json", command="snapshot"))
    assert latest["batch_id"] == 2, latest  # a parked model does not hold the cut back ...
    assert latest["tables"]["fragile"]["parked_since"] == 2, latest  # ... it is named
    cut = json.loads(walk.run("--batch", "1", "--format", "json", command="snapshot"))
    versions = {name: t["version"] for name, t in cut["tables"].items()}
    first_two = _cut(walk, 2)
    for name in BASE:  # the versions holding exactly batches 0..1, older than the heads
        got = actual_tables(root / "wh", versions)[name]
        assert got == first_two[name], _diff(name, first_two[name], got)
    assert _ids(root / "wh" / "fragile", versions["fragile"]) == Counter(
        e["eventId"] for e in walk.good(2))

    # 4. source and seed change, fragile fixed: it catches up; batch 3 joins v2
    walk.change("v2")
    (root / "models" / "fragile.sql").write_text(FIXED)
    walk.feed()
    walk.run()
    walk.assert_exact(slow_requests=True)

    # 5. rebuild enriched: every batch with the versions it pinned, not the current ones
    walk.change("v3")
    before = {name: _ids_or_rows(root / "wh" / name) for name in BASE}
    out = walk.run("--full-refresh", "--select", "enriched")
    walk.assert_exact(slow_requests=True)  # labels still v1 x3, v2
    assert {name: _ids_or_rows(root / "wh" / name) for name in BASE} == before

    # 6. Ctrl-C while a trigger runs: a clean stop, then the next start is exact
    proc = start_client(root, walk.url, "--trigger", "1 second")
    walk.feed()  # batch 4, v3
    wait_for(root / "cp" / "commits" / "4", proc)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-4000:]
    assert "(stopped by signal)" in out and "Traceback" not in out, out[-4000:]
    walk.feed()  # batch 5, v3
    walk.run()
    walk.assert_exact(slow_requests=True)


def _cut(walk: Walk, files: int) -> dict[str, Counter]:
    """The reference tables for the first ``files`` input files only."""
    incoming = walk.root.parent / "cut"
    incoming.mkdir()
    for f in walk.files(files):
        (incoming / f.name).write_bytes(f.read_bytes())
    return expected_tables(incoming, BASE)


def _ids_or_rows(table: Path) -> Counter:
    return Counter(tuple(sorted(r.items())) for r in read_table(table).to_pylist())
