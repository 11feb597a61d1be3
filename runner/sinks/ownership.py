"""Whose table is it: refuse, at start, a table at a model's location that this pipeline did
not write (docs/RELIABILITY.md, "Tables that are not ours").

A Delta table written by another job (an ETL, a notebook, another pipeline) may sit where a
model's table (or the dead-letter table) is to be. Writing there would change its rows (a
merge model merges into it, an append adds to it) and ``--full-refresh`` would drop it. So
before anything is written, every such table must be *ours*:

- it holds no data file (an empty table: a name registered ahead of the first batch, a first
  write that crashed; nothing in it can be lost), or
- the application transaction of this checkpoint's app id for the model is in its snapshot
  (exact, and kept through log cleanup by Delta's checkpoints), or
- a commit in its history is tagged with a runner app id of this pipeline
  (``<pipeline>.<model>.<query id>``: any model, any checkpoint; the rules for tables of
  another checkpoint are :meth:`runner.sinks.base.DeltaWriter.refuse_foreign_tables`'s), or
  with one of this checkpoint's query id (a table moved with a renamed model).

Anything else is refused with exit 2, naming the table, its location and what last wrote it.
The check reads each table's log with delta-rs (:mod:`runner.sinks.delta`), no Spark: it runs
before the session starts, so a refusal costs no JVM. A location delta-rs cannot read as a
table (no ``_delta_log``) is not a table and is left to the writers' own checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.errors import ConfigError
from runner.sinks.base import app_id, app_id_of_commit
from runner.sinks.delta import open_if_table
from runner.sinks.tables import is_table

__all__ = ["foreign_table", "refuse_tables_not_ours"]


def _writer_of(commit: Mapping[str, Any]) -> str:
    """``WRITE by delta-rs.1.6.6``: a commit's operation and the engine that made it."""
    engine = commit.get("engineInfo") or commit.get("clientVersion") or "an unknown engine"
    return f"{commit.get('operation') or 'a commit'} by {engine}"


def foreign_table(path: str, *, pipeline: str, model: str, run_id: str | None) -> str | None:
    """Why the table at ``path`` is not this pipeline's, or None when it is (or there is no
    table, or it is empty): see the module docstring.

    Args:
        pipeline: the project's name, the first part of its app ids.
        model: the model (or dead-letter table) whose location ``path`` is.
        run_id: this checkpoint's query id (None: a new checkpoint).

    Raises:
        StorageError: the store failed (names the location).
    """
    if not is_table(path):
        return None
    table = open_if_table(path)
    if table is None:
        return None
    if run_id is not None and table.transaction_version(app_id(pipeline, model, run_id)) \
            is not None:
        return None
    files = table.get_add_actions(flatten=False).num_rows
    if files == 0:
        return None
    history = table.history()
    for commit in history:
        found = app_id_of_commit(commit)
        if found is not None and (found.startswith(f"{pipeline}.")
                                  or (run_id is not None and found.endswith(f".{run_id}"))):
            return None
    others = sorted({a for a in map(app_id_of_commit, history) if a is not None})
    last = _writer_of(history[0]) if history else "an unknown writer"
    whose = (f"commits of another pipeline (app id {others[0]})" if others
             else "no commit of this runner")
    return (f"holds {files} data file{'s' if files != 1 else ''} at version "
            f"{table.version()} and {whose}; its last commit: {last}")


def refuse_tables_not_ours(tables: Mapping[str, str], *, pipeline: str, run_id: str | None,
                           dead_letter: str) -> None:
    """Refuse, before anything is written or dropped, a table in ``tables`` (model -> its
    location; the dead-letter table under ``dead_letter``) that is not this pipeline's.

    Raises:
        ConfigError: names the table, its location, what wrote it and the way out (exit 2).
        StorageError: the store failed (names the location).
    """
    for model, path in tables.items():
        why = foreign_table(path, pipeline=pipeline, model=model, run_id=run_id)
        if why is None:
            continue
        what = ("the dead-letter table" if model == dead_letter
                else f"the table of model {model}")
        elsewhere = ("set dead_letter: to another name" if model == dead_letter
                     else f"rename models/{model}.sql")
        raise ConfigError(
            f"{what} is at {path}, where a Delta table this pipeline did not write {why}: "
            "writing there would change its rows, and --full-refresh would drop it",
            hint=f"move that table elsewhere (or drop it if it is no longer used), or point "
                 f"the pipeline elsewhere ({elsewhere}, or give warehouse: another location); "
                 "nothing was written")
