"""Which models a checkpoint has written, since which batch: ``<checkpoint>/runner.models.json``.

Spark's checkpoint records batches, not models. To know that a model is new (its table must
be backfilled from the history before the stream goes on), that it came back after a pause,
or that its SQL file was removed, the runner keeps one small JSON file next to Spark's logs.
Each model has one entry:

- ``live``: every batch from ``since`` on writes it (and, when it joined late, a backfill
  wrote the batches before ``since``).
- ``backfilling``: the batches ``start`` .. last committed are being written from the
  history; it turns ``live`` when that is done, before the stream's next batch. ``drop``:
  the table is dropped first (``--full-refresh --select``). A crash leaves this state, so the
  next start-up resumes the backfill where the table's application transaction says it is.
- ``absent``: left out of a run (``enabled=false``, or not selected) from batch ``left_at``;
  when it is back it catches up from there.
- ``retired``: its SQL file is gone since batch ``left_at``; the table is left in place.
- ``parked``: its SQL failed at run time in batch ``left_at`` (``error``: why), or an
  ancestor's did (``on_model_error: park``, :mod:`runner.runtime.batches.parking`); its table stays
  at its last good batch, and the next start-up catches it up from ``left_at`` like a model
  that is back.

Fields added later have defaults, so an older file stays readable.

The file is replaced atomically and durably (written, fsynced, renamed into place, the folder
fsynced): a crash leaves the old entries or the new, never a part. ``--full-refresh`` removes it
with the rest of the checkpoint. A checkpoint without the file (written before it existed, or
whose file was deleted because it was unreadable, as the error's hint says) gets it rebuilt at
the next start-up from the tables' own batch ids (:func:`runner.runtime.start.backfill.decide`): a
model whose table holds this checkpoint's batches up to ``v`` is taken as having left at
``v + 1`` and catches up from there, whatever it was (live, parked, disabled, backfilling).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Literal

from runner.errors import ExecutionError
from runner.storage.ops import Location, write_atomic

__all__ = ["REGISTRY_FILE", "Entry", "State", "load_registry", "save_registry"]

REGISTRY_FILE = "runner.models.json"

State = Literal["live", "backfilling", "absent", "retired", "parked"]


@dataclass(frozen=True)
class Entry:
    """One model's standing in the checkpoint (see the module docstring)."""

    state: State
    since: int = 0
    start: int = 0
    drop: bool = False
    left_at: int = 0
    error: str = ""

    def to(self, state: State, **changes: int | bool | str) -> Entry:
        return replace(self, state=state, **changes)  # type: ignore[arg-type]


def load_registry(checkpoint: Location) -> dict[str, Entry] | None:
    """The checkpoint's entries, or None when it has no registry file (new or older checkpoint).

    Raises:
        ExecutionError: the file exists but is not a registry (names the file).
    """
    path = checkpoint / REGISTRY_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {str(name): Entry(**fields) for name, fields in doc["models"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ExecutionError(f"the checkpoint's model registry {path} is unreadable: {e}",
                             hint="restore the checkpoint; deleting the file makes the next "
                                  "start-up rebuild it from the tables (each model then "
                                  "catches up from the last batch its table holds)") from e


def save_registry(checkpoint: Location, entries: dict[str, Entry]) -> None:
    """Write the entries (sorted by name) atomically and durably (fsync before the rename,
    and of the folder after it)."""
    checkpoint.mkdir(parents=True, exist_ok=True)
    path = checkpoint / REGISTRY_FILE
    doc = {"version": 1, "models": {name: _fields(entries[name]) for name in sorted(entries)}}
    write_atomic(path, json.dumps(doc, indent=1) + "\n", durable=True)


def _fields(entry: Entry) -> dict[str, object]:
    """The entry's fields; ``error`` only when set (an older runner reads the file as it was)."""
    return {k: v for k, v in asdict(entry).items() if k != "error" or v}
