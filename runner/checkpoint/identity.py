"""What exactly-once depends on, kept with the checkpoint: ``<checkpoint>/runner.pipeline.json``.

Delta application ids are ``<pipeline name>.<model>.<query id>``, and batch ids number the
input of one source. So a checkpoint is only valid for the pipeline name and the source it was
made with: after a rename, the tables no longer recognise the batches they committed (a batch
replayed after a crash is written twice); pointed at another topic or folder, batch ids would
name other input. The first start records both; every later start compares and refuses a
change before anything is written. ``--full-refresh`` starts a new checkpoint, and so a new
record.

A checkpoint made before this file existed has none: the first start asks the tables which
pipeline name their newest commits' app ids carry for the checkpoint's query id (the caller's
``names_in_tables``), refuses a name they do not carry, and records what it finds.

Batch 0's start on Kafka (``<checkpoint>/runner.kafka_start.json``, :func:`record_kafka_start`):
``starting_offsets`` (``latest``, ``earliest``, -1/-2) is resolved against the brokers when the
query first needs it, and that answer is what every later replay of batch 0 (a crash inside it,
a backfill, a rebuild) must start from: resolved again, ``latest`` would be past batch 0's end.
Spark's own Kafka source keeps it in ``sources/0/0``; the runner's Python reader records it here
the first time it resolves it, and reads the record back ever after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass

from runner.errors import ConfigError, ExecutionError
from runner.storage.ops import Location, write_atomic, write_once

__all__ = ["IDENTITY_FILE", "KAFKA_START_FILE", "PipelineIdentity", "check_identity",
           "read_kafka_start", "record_kafka_start"]

IDENTITY_FILE = "runner.pipeline.json"
KAFKA_START_FILE = "runner.kafka_start.json"


@dataclass(frozen=True)
class PipelineIdentity:
    """The pipeline name and its source's identity (``files:<path>`` or ``kafka:<topics>``),
    as project.yml spells them."""

    name: str
    source: str


def _read(checkpoint: Location) -> PipelineIdentity | None:
    path = checkpoint / IDENTITY_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return PipelineIdentity(name=str(doc["name"]), source=str(doc["source"]))
    except (ValueError, KeyError, TypeError) as e:
        raise ExecutionError(f"the checkpoint's pipeline record {path} is unreadable: {e}",
                             hint="restore the checkpoint; deleting the file makes the next "
                                  "start record the current name and source") from e


def check_identity(checkpoint: Location, current: PipelineIdentity, *,
                   names_in_tables: Callable[[], Collection[str]] | None = None) -> None:
    """Record ``current`` when the checkpoint has no record; else refuse a change.

    Args:
        names_in_tables: for a checkpoint without a record, the pipeline names the tables'
            app ids carry for this checkpoint (empty: none written yet).

    Raises:
        ConfigError: the name or the source differs from the record, or (no record) the tables
            carry another name (exit 2; nothing written).
    """
    recorded = _read(checkpoint)
    if recorded is None:
        names = sorted(names_in_tables()) if names_in_tables is not None else []
        if names and current.name not in names:
            raise _renamed(checkpoint, current.name, names[0])
        checkpoint.mkdir(parents=True, exist_ok=True)
        write_atomic(checkpoint / IDENTITY_FILE, json.dumps(asdict(current), indent=1) + "\n")
        return
    if recorded.name != current.name:
        raise _renamed(checkpoint, current.name, recorded.name)
    if recorded.source != current.source:
        raise ConfigError(
            f"the source is now {current.source}, but checkpoint {checkpoint} numbers the "
            f"batches of {recorded.source}: its offsets and batch ids do not apply",
            hint="put the source back, or start over with --full-refresh (or a new checkpoint "
                 "directory)")


def _renamed(checkpoint: Location, name: str, recorded: str) -> ConfigError:
    return ConfigError(
        f"project.yml names the pipeline '{name}', but checkpoint {checkpoint} belongs to "
        f"pipeline '{recorded}': the tables' application ids carry the name, so a replayed "
        "batch would be written twice",
        hint=f"put back `name: {recorded}`, or start over with --full-refresh")


def read_kafka_start(checkpoint: Location) -> dict[str, dict[str, int]] | None:
    """Batch 0's start offsets as first resolved (``{"topic": {"partition": offset}}``, the
    next offset to read), or None when not recorded (Spark's own source, an older checkpoint).

    Raises:
        ExecutionError: the record is unreadable.
    """
    path = checkpoint / KAFKA_START_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {str(t): {str(p): int(o) for p, o in parts.items()}
                for t, parts in doc["start"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ExecutionError(f"the checkpoint's record of where batch 0 started, {path}, is "
                             f"unreadable: {e}",
                             hint="restore the checkpoint, or start over with --full-refresh"
                             ) from e


def record_kafka_start(checkpoint: Location, offsets: Mapping[str, Mapping[str, int]]
                       ) -> dict[str, dict[str, int]]:
    """Record batch 0's start unless a record exists; returns the recorded start (the earlier
    record wins: it is what batch 0 was planned from)."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    doc = {"start": {t: {p: int(o) for p, o in parts.items()} for t, parts in offsets.items()}}
    write_once(checkpoint / KAFKA_START_FILE, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    recorded = read_kafka_start(checkpoint)
    assert recorded is not None
    return recorded
