"""A start compares each model's definition with the one that wrote its table, before the
first batch, and follows the model's ``on_definition_change``.

The finding: ``--full-refresh --select product_revenue --vars '{"vat_rate": 0.1}'`` rebuilt
batches 0-4 with 0.1, the next plain run wrote batch 5 with project.yml's 0.2, without a
word, and an accumulating MERGE then mixed both rates in every row. Now the record of
:mod:`runner.checkpoint.definitions` says which definition wrote which batches, and a start
whose definition differs for a model that holds batches:

- ``warn`` (default for appends: old rows stay as they were computed, new ones follow the new
  SQL, which is often what a changed filter means): says which model, since which batch and
  what changed (a var and its two values, a macro file, the model's SQL), and goes on;
- ``refuse`` (default for merge models: their rows accumulate, so a mix is wrong in every
  row): exit 2 before anything is written, naming the same and the ways out; except for a
  parked model, whose changed SQL is the fix parking asks for: it is warned about instead;
- ``rebuild``: rebuilds the table from the retained history with the new definition, as
  ``--full-refresh --select`` does.

No JVM: the check reads the checkpoint's files only, so a refusal costs no session.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from runner.checkpoint.definitions import load_definitions, save_definitions
from runner.checkpoint.registry import Entry, load_registry
from runner.checkpoint.spark_logs import last_committed
from runner.compile.definition import changes
from runner.compile.plan import Plan, Step
from runner.errors import ConfigError
from runner.events import DefinitionChanged, Reporter
from runner.project.config import OnDefinitionChange
from runner.storage.ops import Location

__all__ = ["check_definitions", "policy_of", "record_definitions"]


def policy_of(step: Step, default: OnDefinitionChange | None) -> OnDefinitionChange:
    """The model's ``on_definition_change``, else project.yml's, else by kind."""
    return (step.config.on_definition_change or default
            or ("refuse" if step.config.materialized == "merge" else "warn"))


def _next_batch(entry: Entry | None, committed: int) -> int:
    """The first batch a model writes from now on: where it catches up from when parked or
    absent, where its backfill starts, else the next new batch."""
    if entry is not None and entry.state in ("parked", "absent"):
        return entry.left_at
    if entry is not None and entry.state == "backfilling":
        return entry.start
    return committed + 1


def check_definitions(checkpoint: Location, plan: Plan, *,
                      default: OnDefinitionChange | None, rebuild: Collection[str],
                      report: Reporter) -> frozenset[str]:
    """Compare (see the module's docstring); returns the models to rebuild by their policy.

    Raises:
        ConfigError: a changed model whose policy is ``refuse`` (each one named, exit 2).
    """
    committed = last_committed(checkpoint)
    if committed is None:
        return frozenset()
    record = load_definitions(checkpoint)
    registry = load_registry(checkpoint) or {}
    refused: list[ConfigError] = []
    rebuilt: set[str] = set()
    for step in plan.steps:
        runs = record.get(step.name)
        if step.name in rebuild or step.definition is None or not runs:
            continue
        last = _written(runs, committed)
        what = changes(last, step.definition.to_dict(), path=step.path) if last else []
        if not what:
            continue
        entry = registry.get(step.name)
        since = _next_batch(entry, committed)
        held = max(since - 1, last["since"]) if last else since - 1
        policy = policy_of(step, default)
        if policy == "refuse" and entry is not None and entry.state == "parked":
            policy = "warn"  # the change is the parked model's fix (OPERATIONS.md: parking)
        if policy == "refuse":
            refused.append(_refusal(step, held, what))
        else:
            rebuilt.update([step.name] if policy == "rebuild" else [])
            report(DefinitionChanged(step.name, held, since, tuple(what), policy))
    if refused:
        raise ConfigError(refused[0].message, path=refused[0].path, hint=refused[0].hint,
                          also=refused[1:])
    return frozenset(rebuilt)


def _written(runs: list[dict[str, Any]], committed: int) -> dict[str, Any] | None:
    """The newest run that wrote a committed batch (a run recorded by a start whose first
    batch never committed wrote nothing: it is no definition of the table)."""
    return next((run for run in reversed(runs) if int(run["since"]) <= committed), None)


def _refusal(step: Step, held: int, what: list[str]) -> ConfigError:
    return ConfigError(
        f"model {step.name}: its definition changed ({'; '.join(what)}), and its table holds "
        f"batches up to {held} written with the old one; a merge model's rows accumulate, so "
        "a table mixing both is wrong in every row", path=step.path,
        hint=f"rebuild it with the new definition: `runner stream --full-refresh --select "
             f"{step.name}`; or go back to the old definition; or set "
             "on_definition_change='rebuild' (or 'warn', to mix knowingly) in its config")


def record_definitions(checkpoint: Location, plan: Plan, *, rebuilt: Collection[str],
                       full_refresh: bool) -> None:
    """Record each model's definition with the first batch it writes, after the start-up's
    decisions (a rebuilt model starts its record again at the batch its rebuild starts)."""
    committed = last_committed(checkpoint)
    record = {} if full_refresh else load_definitions(checkpoint)
    registry = load_registry(checkpoint) or {}
    changed = False
    for step in plan.steps:
        if step.definition is None:
            continue
        entry = registry.get(step.name)
        since = 0 if committed is None else _next_batch(entry, committed)
        run = {"since": since, **step.definition.to_dict()}
        runs = [] if step.name in rebuilt else list(record.get(step.name, []))
        if committed is not None:  # runs whose batches never committed wrote nothing
            runs = [r for r in runs if int(r["since"]) <= committed] or runs[:0]
        if runs and runs[-1]["fingerprint"] == run["fingerprint"]:
            if runs != record.get(step.name):
                record[step.name], changed = runs, True
            continue
        record[step.name] = [*runs, run]
        changed = True
    if changed:
        save_definitions(checkpoint, record)
