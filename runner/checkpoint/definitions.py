"""Which definition wrote which batches of each model: ``<checkpoint>/runner.definitions.json``.

A model's table holds the rows of every batch it wrote; if its definition (compiled SQL, the
vars and macros behind it: :mod:`runner.compile.definition`) changed between two of them, the
table mixes both (a merge model that accumulates mixes them in every row). Seeds and sources
are pinned per batch (:mod:`runner.checkpoint.pins`); this is the same record for the models'
own SQL. Each model has a list of runs, oldest first::

    {"version": 1, "models": {"product_revenue": [
        {"since": 0, "fingerprint": "...", "sql": "...", "vars": {"vat_rate": "0.1"},
         "macros": {}},
        {"since": 5, "fingerprint": "...", ...}]}}

``since`` is the first batch the definition wrote (or writes: a run recorded before its first
batch commits is replaced, not kept, when the next start brings another definition). A
rebuild (``--full-refresh --select``, or ``on_definition_change='rebuild'``) starts the list
again at batch 0. The file is replaced atomically and durably; ``--full-refresh`` removes it
with the rest of the checkpoint; a checkpoint without it starts the record at the next batch
(what wrote the batches before is not known).
"""

from __future__ import annotations

import json
from typing import Any

from runner.errors import ExecutionError
from runner.storage.ops import Location, write_atomic

__all__ = ["DEFINITIONS_FILE", "load_definitions", "save_definitions"]

DEFINITIONS_FILE = "runner.definitions.json"

#: model -> its runs (each a definition's dict plus ``since``), oldest first
Record = dict[str, list[dict[str, Any]]]


def load_definitions(checkpoint: Location) -> Record:
    """The checkpoint's record; empty when it has none.

    Raises:
        ExecutionError: the file exists but is not such a record (names the file).
    """
    path = checkpoint / DEFINITIONS_FILE
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {str(m): [dict(run) for run in runs] for m, runs in doc["models"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ExecutionError(f"the checkpoint's record of model definitions {path} is "
                             f"unreadable: {e}",
                             hint="restore the checkpoint; deleting the file makes the next "
                                  "start record the definitions from its first batch on") from e


def save_definitions(checkpoint: Location, record: Record) -> None:
    """Write ``record`` atomically and durably."""
    doc = {"version": 1, "models": {m: record[m] for m in sorted(record)}}
    write_atomic(checkpoint / DEFINITIONS_FILE, json.dumps(doc, indent=1) + "\n", durable=True)
