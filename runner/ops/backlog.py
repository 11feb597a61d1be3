"""The source's backlog, from the checkpoint and the source alone (no Spark).

- Files: the files in ``source.path`` that Spark's file source log
  (:func:`runner.checkpoint.spark_logs.file_log`) does not list yet. Names Spark skips (starting
  with ``.`` or ``_``) are not counted.
- Kafka: per partition, the broker's latest offset minus the next offset to read after the
  last committed batch (:func:`runner.checkpoint.spark_logs.committed_source_offset`), looked
  up with a short timeout; an unreachable broker is reported, not raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from runner.checkpoint.spark_logs import committed_source_offset, file_log
from runner.errors import SourceError
from runner.project.loader import Project
from runner.sources.history import file_location
from runner.sources.kafka.admin import list_watermarks, read_committed
from runner.sources.kafka.options import client_properties
from runner.storage.objects import SCHEMES, ObjectPath
from runner.storage.ops import Location, names

__all__ = ["Backlog", "files_backlog", "kafka_backlog"]


@dataclass(frozen=True)
class Backlog:
    kind: str  # files | kafka
    pending: int | None  # files not yet read, or records behind (None: unknown)
    detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "pending": self.pending, "error": self.error, **self.detail}


def _seen_files(checkpoint: Location) -> set[str]:
    """Every file the file source has read, each as :func:`_key` spells it."""
    return {_key(p) for files in file_log(checkpoint).values() for p in files}


def _key(uri: str) -> str:
    """One spelling per file: a local path normalised, an object key with its scheme's
    canonical name (``s3a://`` and ``s3://`` are one bucket), another URI as it is."""
    where = file_location(uri)
    if isinstance(where, ObjectPath):
        return f"{SCHEMES[where.scheme]}://{where.bucket}/{where.key}"
    return uri if where is None else os.path.normpath(where)


def files_backlog(project: Project) -> Backlog:
    source = project.resolve(project.config.source.path)  # type: ignore[union-attr]
    try:
        if not source.is_dir():
            raise FileNotFoundError(2, "No such directory")
        listed = [n for n in names(source) if not n.startswith((".", "_"))]
    except OSError as e:
        return Backlog("files", None, {"path": str(source)}, f"cannot list {source}: "
                                                            f"{e.strerror or e}")
    try:
        seen = _seen_files(project.checkpoint)
    except SourceError as e:
        return Backlog("files", None, {"path": str(source)}, str(e))
    pending = sorted(n for n in listed
                     if _key(str(source / n)) not in seen and (source / n).is_file())
    return Backlog("files", len(pending), {"path": str(source), "files_read": len(seen),
                                           "next_files": pending[:5]})


def _committed_offsets(checkpoint: Location) -> dict[str, dict[str, int]] | None:
    """The source offsets after the last committed batch (None: nothing committed yet)."""
    offsets = committed_source_offset(checkpoint)
    try:
        return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in offsets.items()}
    except (AttributeError, TypeError, ValueError):
        return None


def kafka_backlog(project: Project, *, timeout: float = 1.5) -> Backlog:
    source = project.config.source
    offsets = _committed_offsets(project.checkpoint) or {}
    servers = source.bootstrap_servers  # type: ignore[union-attr]
    if not servers:
        return Backlog("kafka", None, {}, "no brokers: the profile's target sets "
                                          "source.bootstrap_servers (docs/PROFILES.md)")
    conf = {"bootstrap.servers": servers, **client_properties(source)}  # type: ignore[arg-type]
    try:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient
    except ImportError as e:
        return Backlog("kafka", None, {}, f"confluent-kafka is not installed: {e}")
    try:
        listing = list_watermarks(AdminClient(conf), source.topics,  # type: ignore[union-attr]
                                  timeout=timeout, committed=read_committed(conf))
    except KafkaException as e:
        return Backlog("kafka", None, {"partitions": {}},
                       f"broker {servers} unreachable: {e.args[0] if e.args else e}")
    problems = {**{t: "not found" for t in listing.missing}, **listing.refused}
    if problems:
        topic, problem = next(iter(problems.items()))
        return Backlog("kafka", None, {"partitions": {}}, f"topic {topic}: {problem}")
    partitions: dict[str, dict[str, int | None]] = {}
    total = 0
    for (topic, partition), marks in sorted(listing.marks.items()):
        position = offsets.get(topic, {}).get(str(partition))
        lag = marks.high - position if position is not None else None
        partitions.setdefault(topic, {})[str(partition)] = lag
        total += lag or 0
    return Backlog("kafka", total, {"partitions": partitions,
                                    "note": "lag = latest offset - next offset to read"})
