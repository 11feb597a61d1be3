"""dbt habits a model may bring, each failing with what the runner does instead of a bare
"undefined" or "unknown key": ``is_incremental()``, ``{{ this }}``, ``{{ target.name }}``,
``log()``, ``run_query()``, ``dbt_utils.*``, ``config(materialized='incremental' | 'table' |
'view')`` and dbt-only config keys (``post_hook``, ``incremental_strategy``...)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jinja2

__all__ = ["DBT_CONFIG_KEYS", "HABITS", "TemplateFail", "materialized_hint"]


class TemplateFail(Exception):
    """Raised by a Jinja function; carries the message, located later from the traceback."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


_INCREMENTAL = ("every model is incremental: it runs once per batch over that batch's events "
                "(parsed_events) and appends, or merges on unique_key")


def _is_incremental(*_: Any, **__: Any) -> bool:
    raise TemplateFail("is_incremental() is dbt's; here " + _INCREMENTAL,
                       hint="drop the {% if is_incremental() %} block and its filter: a batch "
                            "holds only new events; for upserts write config(materialized="
                            "'merge', unique_key='...')")


_THIS = jinja2.StrictUndefined(
    hint="{{ this }} is dbt's: a model does not read its own table here (it sees only the "
         "batch: parsed_events, refs, sources and seeds)", name="this",
    exc=partial(TemplateFail,  # type: ignore[arg-type]  # jinja calls it with the message
                hint="to keep one row per key, write config(materialized='merge', "
                     "unique_key='...') (merge_update for how to combine rows)"))

def _habit(name: str, message: str, hint: str) -> jinja2.StrictUndefined:
    """A name that fails, when used in any way, with ``message`` and ``hint``."""
    return jinja2.StrictUndefined(
        hint=message, name=name,
        exc=partial(TemplateFail, hint=hint))  # type: ignore[arg-type]  # called with the message


def _no_call(message: str, hint: str) -> Any:
    def call(*_: Any, **__: Any) -> Any:
        raise TemplateFail(message, hint=hint)
    return call


#: Jinja names a model gets that only say what to write instead.
HABITS: dict[str, Any] = {
    "is_incremental": _is_incremental,
    "this": _THIS,
    "target": _habit("target", "{{ target }} is dbt's profile target: the runner has no "
                     "profiles or targets", "for values that differ per deployment use "
                     "{{ var('name') }} (vars: in project.yml) or {{ env_var('PUBLIC_...') }}"),
    "log": _no_call("log() is dbt's: a model's template prints nothing here",
                    "remove the call; `runner compile` writes the rendered SQL to "
                    "target/compiled/<model>.sql"),
    "run_query": _no_call("run_query() is dbt's: a template runs no query here (compile has "
                          "no warehouse connection)",
                          "read reference data with {{ source('src', 'table') }} or a seed "
                          "({{ ref('seed') }}) and join it in the SQL"),
    "dbt_utils": _habit("dbt_utils", "dbt_utils is a dbt package: packages are not installed "
                        "here", "write the SQL it would generate, or a macro of your own in "
                        "macros/*.sql"),
    "adapter": _habit("adapter", "{{ adapter }} is dbt's: there is no adapter object here",
                      "write the SQL directly; a macro in macros/*.sql can share it"),
}

#: dbt config keys the runner does not take: key -> what to write instead.
DBT_CONFIG_KEYS: dict[str, str] = {
    "post_hook": "no SQL runs around a model here; for table upkeep use `runner maintain` "
                 "(compaction, vacuum)",
    "pre_hook": "no SQL runs around a model here",
    "incremental_strategy": "every model is incremental: materialized='append' (default) or "
                            "'merge' with unique_key (merge_update says how rows combine)",
    "database": "the catalog is project.yml's (catalog: {name: ..., schema: ...}); a model "
                "picks its schema and table name with schema= and alias= (docs/CATALOG.md)",
    "full_refresh": "rebuild a model with `runner stream --full-refresh --select <model>`",
    "persist_docs": "describe columns in models/<model>.yml: `runner docs` shows them",
    "grants": "the runner grants nothing: give access to the Delta tables where they live",
    "cluster_by": "write partition_by=[...] (Delta partition columns)",
}

_MATERIALIZED = {
    "incremental": "every model is incremental here: write materialized='append' (the "
                   "default), or 'merge' with unique_key for upserts",
    "table": "a model is never rebuilt from scratch per run: it writes each batch; write "
             "materialized='append', or 'merge' with unique_key to keep one row per key",
    "view": "there are no views of models: a model's SQL runs per batch and writes a Delta "
            "table (materialized='append' or 'merge'); share SQL with a macro or a ref'd model",
}


def materialized_hint(value: object) -> tuple[str, str] | None:
    """(message, hint) for dbt's materializations, None for anything else."""
    if not isinstance(value, str) or value not in _MATERIALIZED:
        return None
    return (f"materialized='{value}' is dbt's; the runner writes 'append' or 'merge'",
            _MATERIALIZED[value])
