"""``runner compile --state PATH``: what this change does to the deployed tables, before it runs.

dbt's ``--state`` compares with the manifest of production; here the comparison says what the
pull request would do to each deployed model's table at the stream's next start (its output
columns against the deployed manifest's, the rules of :mod:`runner.runtime.start.evolution`):

- new columns: ``on_schema_change='append_new_columns'`` adds them (a warning: rows written
  before read null); ``'fail'`` (the default) makes the stream refuse to start (an error);
- removed columns and changed types: the stream refuses whatever ``on_schema_change`` says
  (an error: rows already written cannot take the new shape);
- a new model: backfilled from the retained history at start, or from the next batch with
  ``backfill=false`` (a warning, to say what the start will do); a model gone (or disabled)
  keeps its table (a warning).

Both sides are compile's inferred columns (``target/manifest.json``), so an unchanged model
compares equal; a type compile cannot infer (``UNKNOWN``) is compared by name only, and a model
whose columns compile knows only in part (``Plan.partial``) is not compared.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.compile.plan import Plan
from runner.errors import ConfigError, Violation

__all__ = ["RULE", "load_state", "state_changes"]

RULE = "state"


def load_state(path: str) -> dict[str, Any]:
    """The deployed manifest: ``path`` itself, or ``path/manifest.json`` (a target folder).

    Raises:
        ConfigError: unreadable, not JSON, or not a runner manifest (exit 2).
    """
    file = Path(path)
    if file.is_dir():
        file = file / "manifest.json"
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"--state: cannot read {file}: {e.strerror or e}",
                          hint="give the deployed target/manifest.json (or its folder)") from e
    except ValueError as e:
        raise ConfigError(f"--state: {file} is not JSON: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict):
        raise ConfigError(f"--state: {file} is not a manifest of `runner compile` (no models)")
    return doc


def _columns(model: Mapping[str, Any]) -> dict[str, str]:
    return {str(c["name"]).lower(): str(c.get("type") or "UNKNOWN")
            for c in model.get("columns") or () if isinstance(c, Mapping) and "name" in c}


def state_changes(plan: Plan, deployed: Mapping[str, Any], *, selected: bool = False
                  ) -> list[Violation]:
    """One violation per deployed model this plan changes (``selected``: the plan holds only
    the selected models, so a model missing from it is not reported as gone)."""
    before: Mapping[str, Any] = deployed["models"]
    out = []
    for step in plan.steps:
        old = before.get(step.name)
        if old is None:
            starts = ("backfilled from the retained history at the next start"
                      if step.config.backfill else "written from the next batch on "
                      "(backfill=false)")
            out.append(Violation(RULE, "warn", step.path, None, None,
                                 f"new model {step.name}: {starts}", None))
            continue
        if step.name in plan.partial:
            continue  # compile knows its columns only in part: nothing to compare for sure
        was = _columns(old)
        now = {c.name.lower(): c.type for c in step.columns}
        added = [c.name for c in step.columns if c.name.lower() not in was]
        removed = sorted(name for name in was if name not in now)
        retyped = [f"{name} {was[name]} -> {now[name]}" for name in now
                   if name in was and "UNKNOWN" not in (was[name], now[name])
                   and was[name] != now[name]]
        if removed or retyped:
            what = "; ".join(filter(None, [
                f"columns removed: {', '.join(removed)}" if removed else "",
                f"types changed: {', '.join(retyped)}" if retyped else ""]))
            out.append(Violation(
                RULE, "error", step.path, None, None,
                f"{step.name}'s output changes against the deployed table ({what}): the "
                "stream refuses to start with it", "keep the deployed columns and types, or "
                f"rebuild the table with `runner stream --full-refresh --select {step.name}`"))
        if added and step.config.on_schema_change == "append_new_columns":
            out.append(Violation(RULE, "warn", step.path, None, None,
                                 f"{step.name} gains columns {', '.join(added)}: the next start "
                                 "adds them to its table (rows written before read null)", None))
        elif added:
            out.append(Violation(
                RULE, "error", step.path, None, None,
                f"{step.name} gains columns {', '.join(added)}, and on_schema_change is 'fail': "
                "the stream refuses to start with it",
                f"set config(on_schema_change='append_new_columns') to add them, or rebuild "
                f"with `runner stream --full-refresh --select {step.name}`"))
    if not selected:
        planned = {s.name for s in plan.steps}
        for name in sorted(set(before) - planned):
            path = str(before[name].get("path") or f"models/{name}.sql")
            out.append(Violation(RULE, "warn", path, None, None,
                                 f"model {name} is gone or disabled: its table stays as it "
                                 "is (no batch writes it)", None))
    return out
