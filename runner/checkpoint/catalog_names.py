"""Each model's name in the catalog, as last registered: ``<checkpoint>/runner.names.json``.

Written by ``runner stream`` at start (:mod:`runner.runtime.catalog`) for every model of the
run, keeping the names of models no longer in the project (a removed model keeps its table and
its name, as in dbt); read by ``runner status``, which needs no metastore. ``--full-refresh``
removes it with the rest of the checkpoint. Local disk or object storage alike
(:mod:`runner.storage.ops`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from runner.storage.ops import Location, write_atomic

__all__ = ["NAMES_FILE", "read_names", "write_names"]

NAMES_FILE = "runner.names.json"


def read_names(checkpoint: Location) -> dict[str, str]:
    """model -> its catalog name (``analytics.orders``); {} when none were recorded (or the
    file is unreadable: names are shown, never relied on)."""
    try:
        doc = json.loads((checkpoint / NAMES_FILE).read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in doc["names"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_names(checkpoint: Location, names: Mapping[str, str]) -> None:
    """Record ``names`` over the ones recorded before (others are kept); no write when
    nothing changed."""
    before = read_names(checkpoint)
    merged = {**before, **names}
    if merged != before or not before:
        write_atomic(checkpoint / NAMES_FILE,
                     json.dumps({"names": dict(sorted(merged.items()))}, indent=2) + "\n")
