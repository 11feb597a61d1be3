"""A seed's Delta table (``runner seed``, :mod:`runner.ops.seed`): replaced by one delta-rs
commit per content, which carries the content hash in its commit info and an application
transaction whose version counts the seed's writes (exactly once per content)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from runner.sinks.base import APP_ID_KEY, commit_tags
from runner.sinks.delta import open_if_table

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable

__all__ = ["HASH_KEY", "write_seed_table"]

HASH_KEY = "runner.seed.hash"
"""Commit-info key holding the content hash a seed commit wrote."""


def _written(table: DeltaTable | None, app_id: str) -> tuple[str | None, int | None]:
    """(the content hash of the latest commit of ``app_id``, that app's transaction version)."""
    if table is None:
        return None, None
    version = table.transaction_version(app_id)
    if version is None:
        return None, None
    for commit in table.history():  # newest first
        if commit.get(APP_ID_KEY) == app_id and HASH_KEY in commit:
            return str(commit[HASH_KEY]), version
    return None, version


def write_seed_table(path: str, data: Callable[[], pa.Table], *, app_id: str, content_hash: str
                     ) -> tuple[Literal["written", "unchanged"], int]:
    """Replace the table at ``path`` with ``data()`` unless its latest seed commit wrote
    ``content_hash``; (what happened, the table's version after it).

    A concurrent run that commits first fails this commit (the same transaction id, a
    concurrent overwrite); when it wrote this content, this one is ``unchanged``.
    """
    from deltalake import CommitProperties, Transaction, write_deltalake
    from deltalake.exceptions import CommitFailedError

    from runner.storage.ops import delta_options

    table = open_if_table(path)
    written, txn = _written(table, app_id)
    if table is not None and written == content_hash:
        return "unchanged", table.version()
    version = (txn or 0) + 1
    properties = CommitProperties(
        app_transactions=[Transaction(app_id=app_id, version=version)],
        custom_metadata={**commit_tags(app_id, version), HASH_KEY: content_hash})
    try:
        write_deltalake(path, data(), mode="overwrite", schema_mode="overwrite",
                        commit_properties=properties, storage_options=delta_options(path))
    except CommitFailedError:
        table = open_if_table(path)
        if table is None or _written(table, app_id)[0] != content_hash:
            raise
        return "unchanged", table.version()
    table = open_if_table(path)
    assert table is not None
    return "written", table.version()
