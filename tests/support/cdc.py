"""A change log for the change-data-capture tests and benchmark, its reference result computed
from the whole log in plain Python (no Spark, no runner code), and ways to cut it into batches.

A change is ``{"id", "seq", "op", "name", "amount"}``: ``op`` is ``c`` (create), ``u``
(update) or ``d`` (delete); ``seq`` orders the changes of the whole log (unique per change).
The log arrives out of order: some changes late (moved later in the log), some twice (exact
duplicates), some keys deleted and re-created, some deletes arriving before the changes they
supersede.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["CDC_MODEL", "CDC_SCHEMA", "change_log", "cut", "reference", "table_rows",
           "write_batches"]

CDC_SCHEMA = "id STRING NOT NULL, seq BIGINT, op STRING, name STRING, amount INT"

#: The CDC model the tests and the benchmark run: SCD 1, deletes by ``op``.
CDC_MODEL = """
{{ config(materialized='merge', unique_key='id', sequence_by='seq',
          apply_as_deletes="op = 'd'") }}
SELECT id, seq, op, name, amount FROM parsed_events
"""

Change = dict[str, Any]


def change_log(keys: int, changes_per_key: float = 4.0, *, seed: int = 7,
               late: float = 0.15, duplicates: float = 0.05,
               deletes: float = 0.2) -> list[Change]:
    """About ``keys * changes_per_key`` changes in arrival order (see the module docstring)."""
    rng = random.Random(seed)
    ordered: list[Change] = []
    live: set[str] = set()
    names = [f"k{i:06d}" for i in range(keys)]
    for seq in range(int(keys * changes_per_key)):
        key = rng.choice(names)
        if key in live and rng.random() < deletes:
            op = "d"
            live.discard(key)
        else:
            op = "u" if key in live else "c"
            live.add(key)
        ordered.append({"id": key, "seq": seq + 1, "op": op, "name": f"n{rng.randrange(50)}",
                        "amount": rng.randrange(1000)})
    arrived = list(ordered)
    for _ in range(int(len(ordered) * late)):  # a late change: moved further down the log
        i = rng.randrange(len(arrived))
        change = arrived.pop(i)
        arrived.insert(min(len(arrived), i + rng.randrange(1, max(2, len(arrived) // 3))),
                       change)
    for _ in range(int(len(ordered) * duplicates)):  # an exact duplicate, anywhere after
        i = rng.randrange(len(arrived))
        arrived.insert(rng.randrange(i, len(arrived) + 1), dict(arrived[i]))
    return arrived


def reference(log: Iterable[Change]) -> dict[str, Change]:
    """The live rows after the whole log: per key its greatest-sequence change, unless that
    is a delete (at equal sequence a delete wins)."""
    latest: dict[str, Change] = {}
    for change in log:
        seen = latest.get(change["id"])
        rank = (change["seq"], change["op"] == "d")
        if seen is None or rank > (seen["seq"], seen["op"] == "d"):
            latest[change["id"]] = change
    return {k: c for k, c in latest.items() if c["op"] != "d"}


def cut(log: list[Change], how: str, *, seed: int = 1) -> list[list[Change]]:
    """The log in batches: ``one`` (one batch), ``even:N`` (N batches of equal size),
    ``random:N`` (N batches of random sizes), ``singles:N`` (the first N changes one per
    batch, the rest in one)."""
    kind, _, arg = how.partition(":")
    if kind == "one":
        return [log]
    n = int(arg)
    if kind == "even":
        size = -(-len(log) // n)
        return [log[i:i + size] for i in range(0, len(log), size)]
    if kind == "random":
        bounds = sorted(random.Random(seed).sample(range(1, len(log)), n - 1))
        return [log[a:b] for a, b in zip([0, *bounds], [*bounds, len(log)], strict=True)]
    if kind == "singles":
        return [[c] for c in log[:n]] + [log[n:]]
    raise ValueError(f"unknown cut {how!r}")


def write_batches(folder: Path, batches: list[list[Change]]) -> None:
    """One newline-delimited JSON file per batch, in order (``max_files_per_trigger: 1``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, batch in enumerate(batches):
        (folder / f"changes-{i:04d}.json").write_text(
            "".join(json.dumps(c) + "\n" for c in batch))


def table_rows(path: Path) -> dict[str, Change]:
    """The table's rows by ``id``, read with deltalake (an independent reader)."""
    from deltalake import DeltaTable

    if not (path / "_delta_log").is_dir():
        return {}
    rows = DeltaTable(str(path)).to_pyarrow_dataset().to_table(use_threads=False).to_pylist()
    out = {r["id"]: r for r in rows}
    assert len(out) == len(rows), "two rows for one key"
    return out
