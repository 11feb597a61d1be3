"""``runner ls``: the project's resources (dbt's ``ls``): models, seeds, sources, data tests and
unit tests, from one compile (no JVM), as text, names or JSON lines.

``--select`` picks models as ``compile --select`` does (name, tag:, +graph+) and, with them,
their tests; a selector naming a seed or a source table (``crm.customers``) picks it too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from runner.compile.selection import select_names
from runner.project.loader import Project

__all__ = ["RESOURCE_TYPES", "Resource", "list_resources", "resource_lines"]

ResourceType = Literal["model", "seed", "source", "test", "unit_test"]
RESOURCE_TYPES: tuple[ResourceType, ...] = ("model", "seed", "source", "test", "unit_test")


@dataclass(frozen=True)
class Resource:
    """One resource: its type, name (``model: test`` for a data test, ``model.test`` for a
    unit test), the file declaring it, and what it belongs to or reads."""

    resource_type: ResourceType
    name: str
    path: str
    tags: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["tags"], doc["depends_on"] = list(self.tags), list(self.depends_on)
        return doc


def _split(select: Sequence[str], project: Project) -> tuple[list[str], set[str]]:
    """(model selectors, names of the seeds and source tables named)."""
    others = {s.name.lower(): s.name for s in project.seeds}
    others.update({t.full_name.lower(): t.full_name for t in project.sources})
    models, named = [], set()
    for item in (part for s in select for part in s.split()):
        key = item.removeprefix("source:").lower()
        if key in others:
            named.add(others[key])
        else:
            models.append(item)
    return models, named


def list_resources(project: Project, *, select: Sequence[str] = (),
                   types: Sequence[str] = ()) -> list[Resource]:
    """The selected resources of the given types (all without ``types``), in the order
    models (plan order), seeds, sources, data tests, unit tests.

    Raises:
        ModelErrors: compile found model errors (exit 1).
        ConfigError: a selector matches nothing; a configuration error.
    """
    from runner.model_tests import collect_suite
    from runner.model_tests.data_tests import data_test_name
    from runner.ops.plans import checked_plan

    plan = checked_plan(project, ())
    selectors, named = _split(select, project)
    edges = {s.name: list(s.depends_on) for s in plan.steps}
    tags = {s.name: list(s.config.tags) for s in plan.steps}
    chosen = select_names(selectors, edges=edges, tags=tags) if selectors or not select \
        else set()
    everything = not select
    out = [Resource("model", s.name, s.path, tuple(s.config.tags),
                    (*s.depends_on, *s.lookups),
                    {"materialized": s.config.materialized})
           for s in plan.steps if s.name in chosen]
    out += [Resource("seed", s.name, s.file) for s in project.seeds
            if everything or s.name in named]
    out += [Resource("source", t.full_name, t.path) for t in project.sources
            if everything or t.full_name in named]
    suite = collect_suite(project, plan, select=selectors if selectors else (), kind="all")
    for spec, test in suite.data_cases:
        if spec.model in chosen:
            out.append(Resource("test", f"{spec.model}: {data_test_name(test)}", spec.path,
                                test.args.tags, (spec.model,),
                                {"severity": test.args.severity, "where": test.args.where}))
    for spec, case in suite.unit_cases:
        if spec.model in chosen:
            out.append(Resource("unit_test", f"{spec.model}.{case.name}",
                                (case.origin or spec.path).split(":")[0], (), (spec.model,)))
    return [r for r in out if not types or r.resource_type in types]


def resource_lines(resources: Sequence[Resource], output: str) -> list[str]:
    """``text``: type and name aligned, and the file; ``name``: names only; ``json``: one
    JSON object per line (dbt's ``--output json``)."""
    if output == "name":
        return [r.name for r in resources]
    if output == "json":
        return [json.dumps(r.to_dict(), sort_keys=True) for r in resources]
    return [f"{r.resource_type:<9} {r.name}  ({r.path})" for r in resources]
