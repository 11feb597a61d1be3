"""``runner status``: how a pipeline is doing, read from its checkpoint, ledger and tables.

No Spark session: delta-rs reads each table's log (from its latest log checkpoint, so the cost
does not grow with the number of batches), the rest are small files. Reported:

- per table: the last batch it committed (its application transaction), its version and the
  version of the latest snapshot, its active files and their size, its log's files and size;
- the batches: the latest complete in every table (ledger), the last Spark committed, one in
  flight;
- the source's backlog (:mod:`runner.ops.backlog`);
- dead letters of the last batches (count per batch and the latest reasons), read from the
  files whose statistics say they hold those batches;
- the process holding the checkpoint now (pid, host, since), and a maintenance in progress;
- how the last run ended, with its error if it failed (:mod:`runner.checkpoint.runs`);
- the parked models (``on_model_error: park``): since which batch, and why (the checkpoint's
  model registry, :mod:`runner.checkpoint.registry`);
- the tables that lag behind the latest snapshot's batch, as ``runner snapshot`` marks them
  (:func:`runner.ops.snapshot.lagging`: not selected, disabled, removed, parked, being
  backfilled), with the last batch their snapshot version holds.

A Kafka model (``materialized='kafka'``) has no table: it is shown with its topic, the last
batch committed in Kafka for it (its marker, read with ``read_committed`` by the writer's own
reader, :mod:`runner.sinks.kafka_markers`; no producer is made, so a running stream is never
fenced) and the batch the latest snapshot names for it; JSON ``topics``, apart from ``tables``.
Brokers that do not answer make that one line say so (asked once, with a short timeout).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from runner.checkpoint.catalog_names import read_names
from runner.checkpoint.definitions import load_definitions
from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.checkpoint.lock import MAINTENANCE, lock_holder
from runner.checkpoint.pins import Pins
from runner.checkpoint.query_id import read_query_id
from runner.checkpoint.registry import Entry, load_registry
from runner.checkpoint.runs import read_last_run
from runner.checkpoint.spark_logs import last_committed, last_planned
from runner.compile.definition import changes
from runner.console import plural
from runner.errors import RunnerError, StorageError
from runner.ops.backlog import Backlog, files_backlog, kafka_backlog
from runner.ops.snapshot import Lag, kafka_models, lag_note, lagging
from runner.project.kafka_outputs import KafkaOutputs
from runner.project.loader import Project
from runner.sinks.base import app_id
from runner.sinks.inspect import dead_letter_rows, table_state
from runner.sinks.kafka_markers import read_markers
from runner.sinks.tables import is_table
from runner.storage.ops import Location

__all__ = ["PipelineStatus", "TableStatus", "collect_status", "status_lines"]


@dataclass(frozen=True)
class TableStatus:
    name: str
    path: str
    exists: bool
    last_batch: int | None = None
    version: int | None = None
    snapshot_version: int | None = None
    files: int = 0
    bytes: int = 0
    log_files: int = 0
    log_bytes: int = 0
    error: str | None = None
    parked_since: int | None = None  # parked (its SQL failed) from this batch on
    parked_error: str | None = None
    # behind the latest snapshot's batch (runner snapshot's mark): why, and the last batch its
    # snapshot version holds
    lag: str | None = None
    snapshot_last_batch: int | None = None
    relation: str | None = None  # its name in the catalog (runner.checkpoint.catalog_names)
    retired: bool = False  # its model was removed from the project; table and name stay
    # more than one definition wrote its batches: (first batch, what changed) per later one
    # (runner.checkpoint.definitions)
    mixed: tuple[tuple[int, str], ...] = ()
    # a Kafka model: no table; its topic (None: per row), last_batch is its marker's, and the
    # batch the latest snapshot names for it
    kafka: bool = False
    topic: str | None = None
    snapshot_batch: int | None = None


@dataclass(frozen=True)
class PipelineStatus:
    pipeline: str
    checkpoint: str
    tables: tuple[TableStatus, ...]
    snapshot_batch: int | None
    snapshot_at: str | None
    committed_batch: int | None
    in_flight_batch: int | None
    backlog: Backlog
    dead_letters: dict[str, Any]
    lock: dict[str, Any] | None
    maintenance_lock: dict[str, Any] | None
    last_run: dict[str, Any] | None
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    # the sources and seeds the newest pinned batch read: name -> batch, kind, version, and
    # (a source) its commit time and age in seconds (runner.checkpoint.pins)
    lookups: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the deployment's target: its name and the profiles.yml it came from (None: built in)
    target: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline, "target": self.target, "checkpoint": self.checkpoint,
            "batches": {"snapshot": self.snapshot_batch, "snapshot_at": self.snapshot_at,
                        "committed": self.committed_batch, "in_flight": self.in_flight_batch},
            "tables": {t.name: {k: v for k, v in vars(t).items() if k not in _KAFKA_ONLY}
                       for t in self.tables if not t.kafka},
            "topics": {t.name: {k: getattr(t, k) for k in _TOPIC_KEYS}
                       for t in self.tables if t.kafka},
            "backlog": self.backlog.to_dict(), "dead_letters": self.dead_letters,
            "lock": self.lock, "maintenance": self.maintenance_lock,
            "last_run": self.last_run, "seconds": round(self.seconds, 3),
            "parked": {t.name: {"since": t.parked_since, "error": t.parked_error}
                       for t in self.tables if t.parked_since is not None},
            "lookups": self.lookups,
        }


#: Seconds ``runner status`` waits for the output brokers (once, whatever the Kafka models).
KAFKA_TIMEOUT = 10.0

_KAFKA_ONLY = ("name", "kafka", "topic", "snapshot_batch")
_TOPIC_KEYS = ("topic", "last_batch", "snapshot_batch", "error", "parked_since", "parked_error",
               "lag", "snapshot_last_batch", "retired")


def _mixed(project: Project, checkpoint: Location, *, committed: int | None
           ) -> dict[str, tuple[tuple[int, str], ...]]:
    """model -> (first batch, what changed) of each definition after the first that wrote
    committed batches of its table."""
    try:
        record = load_definitions(checkpoint)
    except StorageError:
        raise
    except RunnerError:
        return {}
    paths = {m.name: m.path for m in project.models}
    out = {}
    for model, runs in record.items():
        written = [r for r in runs if committed is not None and int(r["since"]) <= committed]
        later = tuple((int(b["since"]), "; ".join(changes(a, b, path=paths.get(model, model))))
                      for a, b in zip(written, written[1:], strict=False))
        if later:
            out[model] = later
    return out


def collect_status(project: Project, *, batches: int = 10) -> PipelineStatus:
    """Everything ``runner status`` shows; never starts Spark, never takes a lock."""
    started = time.perf_counter()
    checkpoint = project.checkpoint
    query_id = read_query_id(checkpoint)
    latest = Ledger(checkpoint).latest()
    names = [m.name for m in project.models] + [project.config.dead_letter]
    if latest is not None:
        names += [n for n in latest.tables if n not in names]
    try:
        registry = load_registry(checkpoint) or {}
    except StorageError:
        raise  # the store failed, not the registry: the location and cause, exit 74
    except RunnerError:
        registry = {}
    parked = {m: e for m, e in registry.items() if e.state == "parked"}
    lags = lagging(project, latest, registry) if latest is not None else {}
    names += [n for n in lags if n not in names]
    relations = read_names(checkpoint)
    names += [n for n, e in registry.items() if e.state == "retired" and n not in names]
    mixed = _mixed(project, checkpoint, committed=last_committed(checkpoint))
    topics = _topics(project, query_id, latest)
    names += [n for n in topics if n not in names]
    tables = tuple(replace(topics[n] if n in topics else _table(project, n, query_id, latest),
                           relation=relations.get(n), mixed=mixed.get(n, ()),
                           retired=n in registry and registry[n].state == "retired",
                           **_marks(parked.get(n), lags.get(n)))
                   for n in names)
    tables = tuple(t for t in tables if t.exists or t.parked_since is not None
                   or t.lag is not None or t.name in (latest.tables if latest else ()))
    committed = last_committed(checkpoint)
    planned = last_planned(checkpoint)
    in_flight = planned if planned is not None and (committed is None or planned > committed) \
        else None
    backlog = (files_backlog(project) if project.config.source.type == "files"
               else kafka_backlog(project))
    newest = max((b for b in (committed, latest.batch_id if latest else None) if b is not None),
                 default=None)
    dead = _dead_letters(project, last=batches, newest=newest)
    holder = lock_holder(checkpoint)
    maint = lock_holder(checkpoint, MAINTENANCE)
    return PipelineStatus(
        pipeline=project.config.name, checkpoint=str(checkpoint), tables=tables,
        target={"name": project.target.name,
                "profiles": str(project.target.file) if project.target.file else None},
        snapshot_batch=latest.batch_id if latest else None,
        snapshot_at=latest.written_at if latest else None,
        committed_batch=committed, in_flight_batch=in_flight, backlog=backlog,
        dead_letters=dead, lock=holder.to_dict() if holder else None,
        maintenance_lock=maint.to_dict() if maint and maint.held else None,
        last_run=read_last_run(checkpoint, holder), lookups=_lookups(checkpoint),
        seconds=time.perf_counter() - started)


def _lookups(checkpoint: Location) -> dict[str, dict[str, Any]]:
    """Each lookup's version as the newest batch with pins read it, and that version's age."""
    try:
        latest = Pins(checkpoint).latest()
    except StorageError:
        raise
    except RunnerError:
        return {}
    if latest is None:
        return {}
    batch_id, pins = latest
    now = time.time()
    return {name: {"batch": batch_id, "kind": p.kind, "version": p.version,
                   "committed_at": p.committed_at,
                   "age_seconds": None if p.committed_at is None
                   else round(now - p.committed_at, 1)}
            for name, p in sorted(pins.items())}


def _marks(parked: Entry | None, lag: Lag | None) -> dict[str, Any]:
    """A model's parked and lag marks, as :class:`TableStatus` fields."""
    since, why = (parked.left_at, parked.error) if parked is not None else (None, None)
    reason, held = (lag.reason, lag.last_batch) if lag is not None else (None, None)
    return {"parked_since": since, "parked_error": why, "lag": reason,
            "snapshot_last_batch": held}


def _table(project: Project, name: str, query_id: str | None,
           latest: LedgerEntry | None) -> TableStatus:
    path = str(project.table_path(name))
    snap = latest.tables.get(name) if latest is not None else None
    state = table_state(path, app_id(project.config.name, name, query_id) if query_id else None)
    if not state.exists:
        return TableStatus(name, path, False, snapshot_version=snap)
    return TableStatus(name, path, True, state.last_batch, state.version, snap, state.files,
                       state.size, state.log_files, state.log_bytes, error=state.error)


def _topics(project: Project, query_id: str | None,
            latest: LedgerEntry | None) -> dict[str, TableStatus]:
    """The Kafka models (the project's, and those the latest snapshot names): topic, last batch
    in Kafka (asked of the brokers once per model, the first failure ending the asking), and
    the batch of the latest snapshot."""
    cuts = dict(latest.kafka) if latest is not None else {}
    topics = {**{m: c.topic for m, c in cuts.items()}, **kafka_models(project)}
    if not topics:
        return {}
    batches: dict[str, int | None] = {}
    problem = None
    if query_id is not None:
        outputs = project.config.kafka_outputs or KafkaOutputs()
        batches, problem = read_markers(outputs, {m: app_id(project.config.name, m, query_id)
                                                  for m in topics}, timeout=KAFKA_TIMEOUT)
    return {m: TableStatus(m, "", True, last_batch=batches.get(m), kafka=True, topic=t,
                           snapshot_batch=cuts[m].batch if m in cuts else None,
                           error=None if m in batches or query_id is None else problem)
            for m, t in topics.items()}


def _dead_letters(project: Project, *, last: int, newest: int | None) -> dict[str, Any]:
    """Dead letters per batch of the ``last`` batches up to ``newest``, and the latest reasons
    (read from the files whose statistics say they hold those batches)."""
    path = project.table_path(project.config.dead_letter)
    out: dict[str, Any] = {"batches": [], "per_batch": {}, "total": 0, "latest_reasons": []}
    if newest is None or not is_table(path):
        return out
    first = max(0, newest - last + 1)
    out["batches"] = [first, newest]
    rows = dead_letter_rows(path, from_batch=first)
    if isinstance(rows, str):
        out["error"] = rows
        return out
    batch_ids, reasons = rows
    counts = Counter(b for b in batch_ids if b is not None)
    out["per_batch"] = {str(b): counts[b] for b in sorted(counts)}
    out["total"] = sum(counts.values())
    if counts:
        last_batch = max(counts)
        out["latest_reasons"] = [r for r, _ in Counter(
            r for b, r in zip(batch_ids, reasons) if b == last_batch).most_common(3)]
    return out


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def status_lines(s: PipelineStatus) -> list[str]:
    """The text form of :class:`PipelineStatus`."""
    where = s.target.get("profiles") or "built in"
    lines = [f"pipeline {s.pipeline}  (target {s.target.get('name')}, {where}; "
             f"checkpoint {s.checkpoint})"]
    lock = s.lock
    if lock and lock["held"]:
        lines.append(f"running: pid {lock['pid']} on {lock['host']} since {lock['since']}")
    elif lock and lock["held"] is None:
        lines.append(f"lock last taken by pid {lock['pid']} on {lock['host']} since "
                     f"{lock['since']} (cannot tell from here whether it still runs)")
    else:
        lines.append("not running")
    if s.maintenance_lock:
        lines.append(f"maintenance in progress: pid {s.maintenance_lock['pid']}")
    lines.append(f"batches: latest snapshot {_opt(s.snapshot_batch)}"
                 + (f" (at {s.snapshot_at})" if s.snapshot_at else "")
                 + f", last committed {_opt(s.committed_batch)}"
                 + (f", batch {s.in_flight_batch} in flight or to be replayed"
                    if s.in_flight_batch is not None else ""))
    width = max((len(t.name) + (len(t.relation) + 3 if t.relation else 0)
                 for t in s.tables), default=0)
    for t in s.tables:
        parked = (f"  PARKED since batch {t.parked_since}: {t.parked_error}"
                  if t.parked_since is not None
                  else lag_note(t.lag, t.snapshot_last_batch).replace(
                      "LAGS:", f"LAGS in snapshot {s.snapshot_batch}:"))
        name = t.name + (f" ({t.relation})" if t.relation else "")
        parked += "  RETIRED: its model is gone; table and name kept" if t.retired else ""
        if t.kafka:
            lines.append(f"  {name:<{width}}  {_topic_line(t)}{parked}")
            continue
        if not t.exists:
            lines.append(f"  {name:<{width}}  no table yet{parked}")
            continue
        text = (f"  {name:<{width}}  last batch {_opt(t.last_batch)}, version {t.version} "
                f"(snapshot {_opt(t.snapshot_version)}), {plural(t.files, 'file')} "
                f"{_size(t.bytes)}, log {plural(t.log_files, 'file')} {_size(t.log_bytes)}")
        lines.append(text + (f"  problem: {t.error}" if t.error else "") + parked)
        for since, what in t.mixed:
            lines.append(f"    MIXED: from batch {since} another definition ({what}); "
                         f"`runner stream --full-refresh --select {t.name}` rebuilds it")
    for name, lk in s.lookups.items():
        version = (f"version {lk['version']}" if lk["kind"] == "source"
                   else f"content {str(lk['version'])[:12]}")
        age = "" if lk["age_seconds"] is None else f", {_age(lk['age_seconds'])} old"
        lines.append(f"{lk['kind']} {name}: batch {lk['batch']} read {version}{age}")
    b = s.backlog
    if b.error:
        lines.append(f"backlog: unknown ({b.error})")
    elif b.kind == "files":
        lines.append(f"backlog: {plural(b.pending or 0, 'file')} not read yet in "
                     f"{b.detail['path']}")
    else:
        parts = ", ".join(f"{t}[{p}] {lag}" for t, ps in b.detail["partitions"].items()
                          for p, lag in ps.items())
        lines.append(f"backlog: {b.pending} records behind ({parts or 'no partitions'})")
    d = s.dead_letters
    if d.get("batches"):
        per = ", ".join(f"batch {k}: {v}" for k, v in d["per_batch"].items()) or "none"
        lines.append(f"dead letters in batches {d['batches'][0]}..{d['batches'][1]}: "
                     f"{d['total']} ({per})")
        lines += [f"    {r}" for r in d["latest_reasons"]]
    run = s.last_run
    if run:
        line = f"last run: {run.get('outcome')} (pid {run.get('pid')}, started " \
               f"{run.get('started_at')}" + (f", ended {run['ended_at']}" if run.get(
                   "ended_at") else "") + ")"
        lines.append(line)
        if run.get("error") and run.get("outcome") in ("failed", "died"):
            lines += ["    " + x for x in str(run["error"]).splitlines()]
    lines.append(f"({s.seconds:.2f}s)")
    return lines


def _topic_line(t: TableStatus) -> str:
    """A Kafka model's status: its topic, its last batch in Kafka, the snapshot's batch."""
    where = f"kafka topic {t.topic}" if t.topic else "kafka topics per row"
    if t.error:
        return f"{where}, last batch in Kafka unknown: {t.error}"
    return (f"{where}, last batch in Kafka {_opt(t.last_batch)} "
            f"(snapshot {_opt(t.snapshot_batch)}), no Delta table")


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _opt(value: object) -> str:
    return "-" if value is None else str(value)
