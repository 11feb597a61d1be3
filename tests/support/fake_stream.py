"""The sink side of ``runner stream`` without Spark, for tests of snapshots, status and
maintenance: batches of Arrow rows are written through the real ``RsWriter`` (application
transactions, skip on replay) and recorded through the real ``Bookkeeper`` (ledger entry, then
scheduled maintenance), exactly as ``runner stream`` does after each batch's sinks.

The project is the example one plus ``endpoint_counts`` (an accumulating merge); the rows are
small stand-ins with a ``_batch_id`` column, so any table read at any version says which
batches it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa

from runner.checkpoint.query_id import new_query_id, read_query_id, write_query_id
from runner.events import Event
from runner.project.loader import Project, load_project
from runner.runtime.after_batch import Bookkeeper
from runner.sinks import RsWriter, SinkSpec
from runner.sinks.base import app_id
from tests.support.projects import BASE_YML, ENDPOINT_COUNTS, EXAMPLE_FILES, write_project

__all__ = ["FakeStream", "make_project", "MODELS", "APPENDS"]

MODELS = {**EXAMPLE_FILES, "models/endpoint_counts.sql": ENDPOINT_COUNTS}
APPENDS = ("request_logs", "error_events", "performance_metrics")
DEAD = "_dead_letter"


def make_project(root: Path, *, maintenance: str = "", models: Mapping[str, str] | None = None,
                 target: Mapping[str, Any] | None = None) -> Project:
    """The example project and ``endpoint_counts``, plus ``models`` (path -> text), with
    ``target``'s keys in its profile target."""
    yml = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
    write_project(root, {**MODELS, **(models or {})}, project_yml=yml + maintenance,
                  target=target)
    (root / "incoming").mkdir(exist_ok=True)
    return load_project(root)


@dataclass
class FakeStream:
    """Writes batches like ``runner stream``'s sinks would, and keeps the expected tables."""

    project: Project
    events: list[Event] = field(default_factory=list)
    expected: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cp = self.project.checkpoint
        self.query_id = read_query_id(cp) or new_query_id()
        write_query_id(cp, self.query_id)
        name = self.project.config.name

        def spec(model: str, **kw: Any) -> SinkSpec:
            return SinkSpec(model=model, path=str(self.project.table_path(model)),
                            app_id=app_id(name, model, self.query_id), **kw)

        self.sinks = {m: spec(m) for m in APPENDS}
        self.sinks["endpoint_counts"] = spec(
            "endpoint_counts", materialized="merge", unique_key=("endpoint",),
            merge_update={"requests": "target.requests + source.requests",
                          "last_batch": "source.last_batch"})
        self.dead = spec(DEAD)
        self.writer = RsWriter()
        plan = SimpleNamespace(sinks=self.sinks, dead_letter=self.dead)
        self.keeper = Bookkeeper(self.project, plan, query_id=self.query_id,  # type: ignore
                                 report=self.events.append)
        self.totals: dict[str, int] = {}

    def batch(self, batch_id: int, *, requests: Iterable[str] = ("/a", "/b"),
              errors: int = 1, dead: int = 0) -> None:
        """One batch: a request per endpoint given, ``errors`` error rows, ``dead`` dead
        letters; a replayed batch id skips what committed, like the runner."""
        reqs = list(requests)
        rows = {
            "request_logs": [(f"e{batch_id}-{i}", ep, batch_id) for i, ep in enumerate(reqs)],
            "error_events": [(f"x{batch_id}-{i}", "E1", batch_id) for i in range(errors)],
            "performance_metrics": [(f"e{batch_id}-{i}", 10 * i, batch_id)
                                    for i in range(len(reqs))],
        }
        columns = {"request_logs": ("eventId", "endpoint", "_batch_id"),
                   "error_events": ("eventId", "errorCode", "_batch_id"),
                   "performance_metrics": ("eventId", "latency_ms", "_batch_id")}
        for model, data in rows.items():
            table = pa.table({c: [r[i] for r in data] for i, c in enumerate(columns[model])},
                             schema=_schema(columns[model]))
            if not self.writer.write(self.sinks[model], table, batch_id).skipped:
                self.expected.setdefault(model, []).extend(data)
        counts: dict[str, int] = {}
        for ep in reqs:
            counts[ep] = counts.get(ep, 0) + 1
        merge = pa.table({"endpoint": list(counts), "requests": list(counts.values()),
                          "last_batch": [batch_id] * len(counts)},
                         schema=pa.schema([("endpoint", pa.string()), ("requests", pa.int64()),
                                           ("last_batch", pa.int64())]))
        if not self.writer.write(self.sinks["endpoint_counts"], merge, batch_id).skipped:
            for ep, n in counts.items():
                self.totals[ep] = self.totals.get(ep, 0) + n
        if dead:
            letters = pa.table({"raw": [f"bad {batch_id}-{i}" for i in range(dead)],
                                "reason": ["invalid JSON"] * dead,
                                "_batch_id": [batch_id] * dead},
                               schema=_schema(("raw", "reason", "_batch_id")))
            if not self.writer.write(self.dead, letters, batch_id).skipped:
                self.expected.setdefault(DEAD, []).extend(
                    (f"bad {batch_id}-{i}", batch_id) for i in range(dead))
        self.keeper.after_batch(SimpleNamespace(batch_id=batch_id, parked={}))  # type: ignore[arg-type]


def _schema(columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([(c, pa.int64() if c in ("_batch_id", "latency_ms") else pa.string())
                      for c in columns])


def read(path: str, version: int | None = None) -> list[dict[str, Any]]:
    """A table's rows at a version (latest: None), through delta-rs' dataset."""
    from deltalake import DeltaTable

    return DeltaTable(path, version=version).to_pyarrow_dataset().to_table(
        use_threads=False).to_pylist()
