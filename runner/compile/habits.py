"""dbt habits a model may bring, each failing with what the runner does instead of a bare
"undefined": ``is_incremental()``, ``{{ this }}``, ``config(materialized='incremental' |
'table' | 'view')``."""

from __future__ import annotations

from functools import partial
from typing import Any

import jinja2

__all__ = ["HABITS", "TemplateFail", "materialized_hint"]


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

#: Jinja names a model gets that only say what to write instead.
HABITS: dict[str, Any] = {"is_incremental": _is_incremental, "this": _THIS}

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
