"""``runner compile``, the task: load -> render -> graph -> lint -> plan; then write ``target/``.

It sits above the stages it runs (``compile/`` renders and plans, ``lint/`` checks), so they
import one way: lint uses compile's rendered models and columns, and only this module uses both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.compile.graph import ancestors, sort_models
from runner.compile.lookups import ColumnReader, plan_lookups
from runner.compile.plan import Column, Plan, Step, table_columns, table_key
from runner.compile.preflight import check_project
from runner.compile.relations import relation_of, relation_violations
from runner.compile.render import RenderBudget, RenderedModel, render_models
from runner.compile.selection import select_names
from runner.errors import ConfigError, RunnerError, Violation, did_you_mean
from runner.lint import check_lint_config, lint_models
from runner.project.loader import Project
from runner.project.secrets import mask_secrets
from runner.storage.ops import write_atomic

__all__ = ["CompileResult", "compile_project", "write_target"]


@dataclass(frozen=True)
class CompileResult:
    plan: Plan
    violations: tuple[Violation, ...]
    failed: tuple[str, ...] = ()  # selected models that did not render (template errors)

    @property
    def models(self) -> int:
        """How many models were compiled: the plan's, and those that failed to render."""
        return len(self.plan.steps) + len(self.failed)

    @property
    def errors(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.severity == "error")

    @property
    def ok(self) -> bool:
        return not self.errors


def _template_violation(error: RunnerError, path: str) -> Violation:
    return Violation("template", "error", error.path or path, error.line, error.column,
                     error.message, error.hint)


def _delta_columns(path: str) -> list[tuple[str, str]] | None:
    """A source table's columns from its Delta log (deltalake, slow to import, only when a
    model reads a source whose folder exists)."""
    if not Path(path).is_dir():
        return None
    from runner.sinks.schema import delta_columns
    return delta_columns(path)


def _check_cli_vars(project: Project, rendered: Sequence[RenderedModel], *,
                    complete: bool) -> None:
    """A ``--vars`` key that neither project.yml nor any model reads is a typo (``vat_rat``
    for ``vat_rate``) that would leave the real var at its old value without a word.
    ``complete``: every model rendered (a model that failed may be the one reading it)."""
    read = {name for m in rendered if m.definition for name, _ in m.definition.vars}
    unknown = [k for k in project.cli_vars if k not in read]
    if unknown and complete:
        known = sorted(read | set(project.config.vars) - set(project.cli_vars))
        raise ConfigError(f"--vars: {', '.join(repr(k) for k in unknown)} "
                          f"{'is' if len(unknown) == 1 else 'are'} read by no model and not "
                          f"in project.yml's vars:" + did_you_mean(unknown[0], known),
                          hint="check the spelling; the vars models read: "
                               f"{', '.join(known) or 'none'}")


def compile_project(project: Project, *, select: Sequence[str] = (),
                    budget: RenderBudget = RenderBudget(),  # noqa: B008 - frozen
                    read_columns: ColumnReader = _delta_columns) -> CompileResult:
    """Render, check and plan the selected models (and lint their ancestors for context).

    Raises:
        ConfigError: bad lint configuration, a selector that matches nothing, no model to
            run, a source whose columns are neither declared nor readable (or differ from
            its table's), or anything else ``runner stream`` would refuse before its first
            batch.
    """
    check_project(project)
    check_lint_config(project.config.lint)
    deadline = time.monotonic() + budget.total_seconds  # render and lint of every model
    rendered, render_errors = render_models(project, budget=budget, deadline=deadline)
    _check_cli_vars(project, rendered, complete=not render_errors)
    by_path = {m.path: m.name for m in project.models}
    path_of = {m.name: m.path for m in project.models}
    enabled = [m for m in rendered if m.config.enabled]
    disabled = {m.name for m in rendered if not m.config.enabled}
    if not enabled and not render_errors:
        raise ConfigError("no models to run: every model is disabled (enabled=false)",
                          hint="enable at least one model")

    violations: list[tuple[str, Violation]] = [
        (name, _template_violation(error, path_of[name]))
        for name, error in render_errors.items()]
    for m in enabled:
        for ref in m.refs:
            if ref in disabled:
                violations.append((m.name, Violation(
                    "disabled-ref", "error", m.path, None, None,
                    f"ref to model '{ref}', which is disabled (enabled=False)",
                    f"enable '{ref}' or stop reading from it")))
    catalog = project.config.catalog
    violations += relation_violations(catalog, enabled)
    ordered, cycles = sort_models(enabled)
    violations += [(by_path[v.path], v) for v in cycles]

    edges = {m.name: list(m.refs) for m in enabled}
    edges.update({name: [] for name in render_errors})
    tags = {m.name: list(m.config.tags) for m in enabled}
    selected = select_names(select, edges=edges, tags=tags)
    needed = set(selected)
    for name in selected:
        needed |= ancestors(name, edges)
    to_lint = [m for m in ordered if m.name in needed]
    lookups = plan_lookups(project, [v for m in to_lint for v in m.lookups],
                           read_columns=read_columns)
    lint = lint_models(project, to_lint, budget=budget, deadline=deadline, lookups=lookups)
    violations += [(by_path.get(v.path, ""), v) for v in lint.violations]
    _check_yml(project, lint.columns, enabled=enabled, linted=to_lint, partial=lint.partial)

    steps = tuple(
        Step(m.name, m.path, m.sql, m.config, m.refs, tuple(lint.columns.get(m.name, ())),
             lint.reads_of(m.name),  # found from lint's walk of the model: no second one
             m.lookups, relation_of(catalog, m.name, m.config), m.definition, m.source_map)
        for m in ordered if m.name in selected)
    read = {v.lower() for s in steps for v in s.lookups}
    chosen = [v for model, v in violations if model in selected]
    chosen.sort(key=lambda v: (v.path, v.line or 0, v.column or 0, v.rule))
    plan = Plan(project=project.config.name, source_type=project.config.source.type,
                schema_ddl=project.schema.ddl, dead_letter=project.config.dead_letter,
                steps=steps, used_fields=lint.used_fields,
                lookups=tuple(lk for view, lk in lookups.items() if view in read),
                partial=lint.partial)
    failed = tuple(sorted(name for name in render_errors if name in selected))
    return CompileResult(plan=plan, violations=tuple(chosen), failed=failed)


def _check_yml(project: Project, columns: Mapping[str, Sequence[Column]], *,
               enabled: Sequence[RenderedModel], linted: Sequence[RenderedModel],
               partial: frozenset[str] = frozenset()) -> None:
    """Every ``models/**/*.yml`` (the loader ``runner test`` and ``runner docs`` use): its
    shape, and the columns, keys and models it names against what lint inferred of the
    linted models' outputs (a model lint could not infer, or only in part, is checked for
    shape only).

    Raises:
        SpecError: a configuration error (exit 2) with every problem, each at its line.
    """
    from runner.model_tests.checks import check_specs
    from runner.model_tests.spec import read_specs, spec_error

    specs, problems = read_specs(project)
    if not specs and not problems:
        return
    checked = {m.name for m in linted} - partial
    outputs = {m.name: [c.name for c in table_columns(m.config, tuple(columns.get(m.name, ())))]
               if m.name in checked else [] for m in enabled}
    outputs.update({s.name: [c for c, _ in s.columns] for s in project.seeds})  # relationships
    problems += check_specs({n: s for n, s in specs.items() if n in checked}, outputs=outputs,
                            unique_keys={m.name: table_key(m.config) for m in enabled},
                            macros=_test_macros(project))
    if problems:
        raise spec_error(problems)


def _test_macros(project: Project) -> dict[str, Any]:
    """The project's test macros; {} when tests/generic/ is broken (read_specs reported it)."""
    from runner.errors import ConfigError
    from runner.model_tests.generic import test_macros

    try:
        return dict(test_macros(project))
    except ConfigError:
        return {}


def _write(path: Path, text: str) -> None:
    """Write a target/ file; project.yml's secret values never reach one (a message in the
    manifest may quote a value: :func:`runner.project.secrets.mask_secrets`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, mask_secrets(text))


def write_target(project: Project, result: CompileResult) -> Path:
    """Write ``target/compiled/<model>.sql`` and ``target/manifest.json``; return target/."""
    target = project.root / "target"
    compiled = target / "compiled"
    for step in result.plan.steps:
        _write(compiled / f"{step.name}.sql", step.sql.strip() + "\n")
    manifest = result.plan.to_manifest()
    manifest["violations"] = [v.to_dict() for v in result.violations]
    _write(target / "manifest.json", json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return target

