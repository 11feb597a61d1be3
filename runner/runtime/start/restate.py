"""The ledger after a backfill or rebuild: its entries name the tables' new versions.

A ledger entry (:mod:`runner.checkpoint.ledger`) names, for batch k, each table's version that
holds exactly the batches ``<= k``. A rebuild drops a table and writes it again, a backfill
writes old batches into a table: the versions the entries name for those batches are then
those of a dropped table, or of a table that did not hold them yet. So:

- :func:`forget` (before a rebuild drops a table): the table leaves every entry. A snapshot of
  those batches then lacks it (``runner snapshot`` names only the tables it can serve) instead
  of naming versions of a dropped table; a crash during the rebuild leaves it so.
- :func:`restate` (once the backfill is complete, before its models go live): every entry from
  the backfill's first batch on names the version of the new table that holds exactly the
  batches up to the entry's. That version is read from the table's own log: each backfill
  commit carries the application transaction ``(app id, batch id)``, so the version for batch
  k is the one before the first commit whose batch id is past k (the latest when there is
  none). Entries of batches the checkpoint no longer tells apart (Spark's retained logs
  merged them into one backfill batch) and of tables whose log is no longer complete lose the
  table instead. A model parked during the backfill at batch p is marked parked since p in
  the entries from p on (its version holds the batches before p).

A Kafka model has no table: the entries from its backfill's first batch on name its topic and
``min(entry's batch, its marker)`` (the last batch its writer committed, which a park during
the backfill leaves before the batch it was parked at).

Both are idempotent: a crash between two rewrites is repaired by the next start-up, which
restates again before the models go live.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from runner.checkpoint.ledger import Ledger, TopicCut
from runner.sinks.tables import batch_versions
from runner.storage.ops import Location

__all__ = ["forget", "restate"]


def forget(checkpoint: Location, models: Collection[str]) -> int:
    """Remove ``models`` from every ledger entry; return how many entries changed."""
    ledger = Ledger(checkpoint)
    changed = 0
    for batch_id in ledger.batch_ids():
        entry = ledger.get(batch_id)
        if entry is None or not any(m in entry.tables or m in entry.parked or m in entry.kafka
                                    for m in models):
            continue
        ledger.rewrite(replace(
            entry, tables={t: v for t, v in entry.tables.items() if t not in models},
            parked={t: b for t, b in entry.parked.items() if t not in models},
            kafka={t: c for t, c in entry.kafka.items() if t not in models}))
        changed += 1
    return changed


def _version_at(log: tuple[int, Mapping[int, int]], batch_id: int) -> int | None:
    """The version holding exactly the batches ``<= batch_id`` (None: no table at that cut)."""
    last, commits = log
    past = [v for v, b in commits.items() if b > batch_id]
    version = min(past) - 1 if past else last
    return None if version < 0 else version


def restate(checkpoint: Location, tables: Mapping[str, tuple[Location, str]], *,
            starts: Mapping[str, int], through: int,
            blurred: Collection[int] = (), parked: Mapping[str, int] | None = None,
            topics: Mapping[str, TopicCut] | None = None) -> int:
    """Rewrite the entries of batches ``starts[m]`` .. ``through`` for each backfilled model.

    Args:
        tables: model -> (table path, app id).
        topics: Kafka model -> its topic and its marker's batch after the backfill.
        starts: model -> the first batch its backfill wrote (0 for a rebuild).
        blurred: batch ids whose input the backfill read merged with a later batch's (no
            version holds exactly them): the model leaves those entries.
        parked: model -> the batch it was parked at during the backfill.

    Returns:
        How many entries were rewritten.
    """
    ledger = Ledger(checkpoint)
    logs = {m: batch_versions(path, app) for m, (path, app) in tables.items()}
    parked, topics = parked or {}, topics or {}
    changed = 0
    for batch_id in ledger.batch_ids():
        if batch_id > through:
            break
        entry = ledger.get(batch_id)
        models = [m for m in [*tables, *topics] if starts[m] <= batch_id]
        if entry is None or not models:
            continue
        versions, marks, cuts = dict(entry.tables), dict(entry.parked), dict(entry.kafka)
        for m in models:
            marks.pop(m, None)
            log = logs.get(m)
            if batch_id in blurred or (m in tables and log is None):
                versions.pop(m, None)
                cuts.pop(m, None)
                continue
            if m in topics:
                cut = topics[m]
                cuts[m] = TopicCut(cut.topic, None if cut.batch is None
                                   else min(batch_id, cut.batch))
            elif log is not None:
                versions[m] = _version_at(log, batch_id)
            if m in parked and batch_id >= parked[m]:
                marks[m] = parked[m]
        new = replace(entry, tables=versions, parked=marks, kafka=cuts)
        if new.to_json() != entry.to_json():
            ledger.rewrite(new)
            changed += 1
    return changed
