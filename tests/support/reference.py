"""An independent reference for the example project's tables, computed from the input files
alone (``json.loads``, no Spark, no runner code), and the tables as they are, read with an
independent reader: both as multisets, so a lost row and a duplicate both show.

Used by the fault tests (``tests/faults/test_faults.py``) and the crash loop (``bench.crash_loop``).
The example models (``models/*.sql``), the ``endpoint_counts`` merge model of the fault
projects and the ``slow_requests`` ref model (``tests/support/projects.py``) are what the
expectations mirror.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.sinks.tables import read_table

if TYPE_CHECKING:
    from runner.storage.objects import ObjectPath

__all__ = ["DEAD", "DEFAULT_TABLES", "actual_tables", "assert_exact", "compare", "expected_tables",
           "valid_event"]

DEAD = "_dead_letter"

#: The example project's seed (performance_metrics joins it for the endpoint's team).
OWNERS_CSV = Path(__file__).resolve().parents[2] / "seeds" / "endpoint_owners.csv"


def valid_event(line: str) -> dict[str, Any] | None:
    """The event when the project schema accepts the line (``runner.runtime.batches.parse``'s rules
    for the example schema), else None."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("eventId") is None \
            or event.get("timestamp") is None:
        return None
    request = event.get("request") or {}
    for key in ("latency_ms", "status_code"):
        value = request.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return None
    return event


#: The tables :func:`expected_tables` describes unless asked for others.
DEFAULT_TABLES = ("request_logs", "error_events", "performance_metrics", "endpoint_counts", DEAD)


def expected_tables(incoming: Path, tables: Collection[str] = DEFAULT_TABLES, *,
                    owners: Path | None = OWNERS_CSV) -> dict[str, Counter]:
    """What each of ``tables`` must hold after every line of ``incoming/*.json`` was processed
    (``slow_requests`` too when asked). ``owners``: the seed performance_metrics joins for the
    endpoint's team (None: a project whose performance_metrics has no team, e.g. one written
    before the example joined the seed)."""
    lines = [line for f in sorted(incoming.glob("*.json"))
             for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    good = [e for e in map(valid_event, lines) if e is not None]
    team: dict[str, str] = {}
    if owners is not None:
        with owners.open(encoding="utf-8", newline="") as f:
            team = {row["endpoint"]: row["team"] for row in csv.DictReader(f)}
    per_endpoint: dict[str, list[int]] = {}
    for e in good:
        counts = per_endpoint.setdefault(e["request"]["endpoint"], [0, 0])
        counts[0] += 1
        counts[1] += e["request"]["status_code"] >= 500
    every = {
        "request_logs": Counter((e["eventId"], (e.get("user") or {}).get("userId"),
                                 e["request"]["endpoint"], e["request"]["status_code"])
                                for e in good),
        "error_events": Counter((e["eventId"], x["errorCode"], x["severity"])
                                for e in good for x in e.get("errors") or []),
        "performance_metrics": Counter((e["eventId"], e["request"]["endpoint"],
                                        e["request"]["latency_ms"],
                                        team.get(e["request"]["endpoint"])) for e in good),
        "endpoint_counts": Counter((k, n, errors) for k, (n, errors) in per_endpoint.items()),
        # slow_request_ms is 1000 in the example project and the test projects
        "slow_requests": Counter((e["eventId"], e["request"]["endpoint"],
                                  e["request"]["latency_ms"]) for e in good
                                 if (e["request"]["latency_ms"] or 0) >= 1000),
        DEAD: Counter(line for line in lines if valid_event(line) is None),
    }
    return {name: every[name] for name in tables}


def actual_tables(warehouse: Path | ObjectPath,
                  versions: Mapping[str, int | None] | None = None, *,
                  names: Mapping[str, str] | None = None,
                  read: Callable[[Path | ObjectPath], list[dict[str, Any]]] | None = None
                  ) -> dict[str, Counter]:
    """The tables under ``warehouse`` (a folder or a bucket prefix; read with
    ``runner.sinks.tables.read_table``, i.e. deltalake), in :func:`expected_tables`' shape; a
    missing table is empty. ``versions``: read the tables it names at those versions (None:
    empty), e.g. a snapshot's cut. ``names``: table -> the folder it is in when not its own
    name (a model renamed). ``read``: a table's rows read another way (a reader independent
    of the runner's settings), for the tables ``versions`` does not name."""
    def rows(name: str) -> list[dict[str, Any]]:
        path = warehouse / (names or {}).get(name, name)
        if versions is not None and name in versions:
            version = versions[name]
            if version is None:
                return []
            from runner.sinks.inspect import open_table

            return open_table(str(path), version).to_pyarrow_dataset().to_table(
                use_threads=False).to_pylist()
        if not path.exists():
            return []
        return read(path) if read is not None else read_table(str(path)).to_pylist()

    return {
        "request_logs": Counter((r["eventId"], r["userId"], r["endpoint"], r["status_code"])
                                for r in rows("request_logs")),
        "error_events": Counter((r["eventId"], r["errorCode"], r["severity"])
                                for r in rows("error_events")),
        "performance_metrics": Counter((r["eventId"], r["endpoint"], r["latency_ms"],
                                        r.get("team")) for r in rows("performance_metrics")),
        "endpoint_counts": Counter((r["endpoint"], r["requests"], r["errors"])
                                   for r in rows("endpoint_counts")),
        "slow_requests": Counter((r["eventId"], r["endpoint"], r["latency_ms"])
                                 for r in rows("slow_requests")),
        DEAD: Counter(r["raw"] for r in rows(DEAD)),
    }


def compare(expected: dict[str, Counter], actual: dict[str, Counter]) -> dict[str, Any]:
    """Per table: expected and actual row counts, rows lost, rows duplicated or extra, and a
    few examples of each."""
    out = {}
    for name, want in expected.items():
        got = actual[name]
        lost, extra = want - got, got - want
        out[name] = {"expected_rows": sum(want.values()), "actual_rows": sum(got.values()),
                     "lost": sum(lost.values()), "duplicated_or_extra": sum(extra.values()),
                     "examples": [repr(k)[:160] for k in list(lost)[:3] + list(extra)[:3]]}
    return out


def assert_exact(incoming: Path, warehouse: Path, tables: Collection[str]) -> None:
    """Each of ``tables`` in ``warehouse`` holds exactly what ``incoming`` says it must: no row
    lost, none twice (the counts name which table broke it)."""
    expected = expected_tables(incoming, tables)
    actual = actual_tables(warehouse)
    for name in tables:
        lost, extra = expected[name] - actual[name], actual[name] - expected[name]
        assert not lost and not extra, (f"{name}: {sum(lost.values())} lost, "
                                        f"{sum(extra.values())} extra")
