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

__all__ = ["CDC_MODEL", "CDC_SCHEMA", "SCD2_MODEL", "change_log", "cut", "history_reference",
           "history_rows", "reference", "table_rows", "write_batches"]

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
    n = len(ordered)
    arrival = []  # (arrival position, tie-break, change): a late change arrives further down
    for pos, change in enumerate(ordered):
        delay = rng.randrange(1, max(2, n // 3)) if rng.random() < late else 0
        arrival.append((pos + delay, pos, change))
    for k in range(int(n * duplicates)):  # an exact duplicate, anywhere after the original
        i = rng.randrange(n)
        arrival.append((arrival[i][0] + rng.randrange(0, max(1, n // 3)), n + k,
                        dict(ordered[i])))
    return [change for _, _, change in sorted(arrival, key=lambda a: (a[0], a[1]))]


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


def _read(path: Path) -> list[Change]:
    from deltalake import DeltaTable

    if not (path / "_delta_log").is_dir():
        return []
    return DeltaTable(str(path)).to_pyarrow_dataset().to_table(use_threads=False).to_pylist()


def history_rows(path: Path) -> dict[tuple[str, int], Change]:
    """An SCD 2 table's rows by (id, valid_from), read with deltalake."""
    rows = _read(path)
    out = {(r["id"], r["valid_from"]): r for r in rows}
    assert len(out) == len(rows), "two rows for one (id, valid_from)"
    return out


def table_rows(path: Path) -> dict[str, Change]:
    """The table's rows by ``id``, read with deltalake (an independent reader)."""
    rows = _read(path)
    out = {r["id"]: r for r in rows}
    assert len(out) == len(rows), "two rows for one key"
    return out


#: The SCD 2 model the tests and the benchmark run: history of ``name`` only, so changes of
#: ``amount`` alone are no-ops that open nothing.
SCD2_MODEL = """
{{ config(materialized='merge', unique_key='id', sequence_by='seq',
          apply_as_deletes="op = 'd'", stored_as_scd_type=2,
          track_history_column_list=['name']) }}
SELECT id, seq, op, name, amount FROM parsed_events
"""


def history_reference(log: Iterable[Change], tracked: tuple[str, ...] = ("name",)
                      ) -> dict[tuple[str, int], Change]:
    """The SCD 2 rows after the whole log, by (id, valid_from): per key, in sequence order, a
    change whose tracked values differ from the open version's (or with none open) opens a
    version and closes the open one; a delete closes it; anything else opens nothing."""
    distinct: dict[tuple[str, int], Change] = {}
    for change in log:
        seen = distinct.get((change["id"], change["seq"]))
        if seen is None or (change["op"] == "d" and seen["op"] != "d"):
            distinct[(change["id"], change["seq"])] = change
    rows: dict[tuple[str, int], Change] = {}
    open_by_key: dict[str, Change | None] = {}
    for (key, seq), change in sorted(distinct.items()):
        current = open_by_key.get(key)
        if change["op"] == "d":
            if current is not None:
                current["valid_to"] = seq
            open_by_key[key] = None
        elif current is None or any(change[t] != current[t] for t in tracked):
            if current is not None:
                current["valid_to"] = seq
            version = {**change, "valid_from": seq, "valid_to": None}
            rows[(key, seq)] = open_by_key[key] = version
    return rows
