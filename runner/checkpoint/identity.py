"""What exactly-once depends on, kept with the checkpoint: ``<checkpoint>/runner.pipeline.json``.

Delta application ids are ``<pipeline name>.<model>.<query id>``, and batch ids number the
input of one source. So a checkpoint is only valid for the pipeline name and the source it was
made with: after a rename, the tables no longer recognise the batches they committed (a batch
replayed after a crash is written twice); pointed at another topic or folder, batch ids would
name other input. The first start records both; every later start compares and refuses a
change before anything is written. ``--full-refresh`` starts a new checkpoint, and so a new
record.

A checkpoint made before this file existed has none: the first start records what it finds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from runner.checkpoint.files import write_atomic
from runner.errors import ConfigError, ExecutionError

__all__ = ["IDENTITY_FILE", "PipelineIdentity", "check_identity"]

IDENTITY_FILE = "runner.pipeline.json"


@dataclass(frozen=True)
class PipelineIdentity:
    """The pipeline name and its source's identity (``files:<path>`` or ``kafka:<topics>``),
    as project.yml spells them."""

    name: str
    source: str


def _read(checkpoint: Path) -> PipelineIdentity | None:
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


def check_identity(checkpoint: Path, current: PipelineIdentity) -> None:
    """Record ``current`` when the checkpoint has no record; else refuse a change.

    Raises:
        ConfigError: the name or the source differs from the record (exit 2; nothing written).
    """
    recorded = _read(checkpoint)
    if recorded is None:
        checkpoint.mkdir(parents=True, exist_ok=True)
        write_atomic(checkpoint / IDENTITY_FILE, json.dumps(asdict(current), indent=1) + "\n")
        return
    if recorded.name != current.name:
        raise ConfigError(
            f"project.yml names the pipeline '{current.name}', but checkpoint {checkpoint} "
            f"belongs to pipeline '{recorded.name}': the tables' application ids carry the "
            "name, so a replayed batch would be written twice",
            hint=f"put back `name: {recorded.name}`, or start over with --full-refresh")
    if recorded.source != current.source:
        raise ConfigError(
            f"the source is now {current.source}, but checkpoint {checkpoint} numbers the "
            f"batches of {recorded.source}: its offsets and batch ids do not apply",
            hint="put the source back, or start over with --full-refresh (or a new checkpoint "
                 "directory)")
