"""``runner test``: collect the selected models' tests from their YAML, check the declarations
against the compiled plan, run data tests (no Spark) and unit tests (Spark), report."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from runner.compile.plan import Plan, Step
from runner.compile.selection import select_names
from runner.errors import did_you_mean
from runner.model_tests.result import TestResult, TestSummary
from runner.model_tests.spec import DataTest, ModelSpec, SpecError, Unique, UnitTest, load_specs
from runner.project.loader import Project

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Kind", "Suite", "collect_suite", "run_suite"]

Kind = Literal["all", "unit", "data"]


@dataclass(frozen=True)
class Suite:
    """The tests one ``runner test`` runs, checked against the plan."""

    project: Project
    plan: Plan
    specs: Mapping[str, ModelSpec]
    models: tuple[str, ...]  # selected models, in plan order
    kind: Kind

    @property
    def unit_cases(self) -> list[tuple[ModelSpec, UnitTest]]:
        if self.kind == "data":
            return []
        return [(self.specs[m], t) for m in self.models if m in self.specs
                for t in self.specs[m].unit_tests]

    @property
    def data_cases(self) -> list[tuple[ModelSpec, DataTest]]:
        if self.kind == "unit":
            return []
        return [(self.specs[m], t) for m in self.models if m in self.specs
                for t in self.specs[m].all_data_tests()]


def collect_suite(project: Project, plan: Plan, *, select: Sequence[str] = (),
                  kind: Kind = "all") -> Suite:
    """Load every model's YAML, select models like compile does, check the declarations.

    Args:
        project: the project.
        plan: the compiled plan of ALL enabled models (a unit test runs its model's ancestors).
        select: dbt-style selectors (name, tag:x, +name, name+).
        kind: which tests to run.

    Raises:
        SpecError: a YAML file is invalid, or names a column, model or key the plan lacks.
        ConfigError: a selector matches no model.
    """
    specs = load_specs(project)
    edges = {s.name: list(s.depends_on) for s in plan.steps}
    tags = {s.name: list(s.config.tags) for s in plan.steps}
    chosen = select_names(select, edges=edges, tags=tags)
    steps = {s.name: s for s in plan.steps}
    for name, spec in specs.items():
        if name in steps:
            _check_spec(spec, steps[name], steps)
    models = tuple(s.name for s in plan.steps if s.name in chosen)
    return Suite(project, plan, specs, models, kind)


def _check_spec(spec: ModelSpec, step: Step, steps: Mapping[str, Step]) -> None:
    """Columns, keys and relationships a YAML names must exist (when lint inferred them)."""
    outputs = [c.name for c in step.columns]

    def known(name: str, columns: Sequence[str]) -> bool:
        return not columns or name.lower() in {c.lower() for c in columns}

    def fail(message: str, *loc: str | int) -> SpecError:
        return SpecError(message, path=spec.path, line=spec.line_of(*loc))

    for i, col in enumerate(spec.columns):
        if not known(col.name, outputs):
            raise fail(f"columns[{i}]: model {step.name} has no output column '{col.name}'"
                       + did_you_mean(col.name, outputs) + f"; it outputs: {', '.join(outputs)}",
                       "columns", i, "name")
        for j, test in enumerate(col.data_tests):
            if test.kind == "unique" and isinstance(test.args, Unique) and test.args.columns:
                raise fail(f"columns[{i}].data_tests[{j}]: a column's unique test takes no "
                           "columns (declare a unique key under the model's data_tests)",
                           "columns", i, "data_tests", j)
            if test.kind == "relationships":
                to, field = test.args.to, test.args.field
                parent = next((s for s in steps.values() if s.name.lower() == to.lower()), None)
                if parent is None:
                    raise fail(f"columns[{i}].data_tests[{j}]: relationships to unknown model "
                               f"'{to}'" + did_you_mean(to, steps), "columns", i, "data_tests", j)
                parent_cols = [c.name for c in parent.columns]
                if not known(field, parent_cols):
                    raise fail(f"columns[{i}].data_tests[{j}]: model {parent.name} has no column "
                               f"'{field}'" + did_you_mean(field, parent_cols),
                               "columns", i, "data_tests", j)
    for j, test in enumerate(spec.data_tests):
        columns = test.args.columns if isinstance(test.args, Unique) else ()
        if not columns and not step.config.unique_key:
            raise fail(f"data_tests[{j}]: a model-level unique test needs columns: "
                       f"{step.name} is not a merge model with a unique_key",
                       "data_tests", j)
        for name in columns:
            if not known(name, outputs):
                raise fail(f"data_tests[{j}]: model {step.name} has no output column '{name}'"
                           + did_you_mean(name, outputs), "data_tests", j)
    for i, case in enumerate(spec.unit_tests):
        names = [t.name for t in spec.unit_tests]
        if names.count(case.name) > 1:
            raise fail(f"unit_tests[{i}]: two unit tests are named '{case.name}'",
                       "unit_tests", i, "name")
        for r, row in enumerate(case.expect.rows):
            for key in row:
                if not known(key, outputs):
                    raise fail(f"unit_tests[{i}].expect.rows[{r}]: model {step.name} has no "
                               f"output column '{key}'" + did_you_mean(key, outputs)
                               + f"; it outputs: {', '.join(outputs)}",
                               "unit_tests", i, "expect", "rows", r)


def run_suite(suite: Suite, *, spark: SparkSession | None = None,
              on_result: Callable[[TestResult], None] = lambda r: None) -> TestSummary:
    """Data tests first (fast, no JVM), then unit tests (one SparkSession for all of them)."""
    from runner.model_tests.data_tests import run_data_tests
    from runner.model_tests.unit import run_unit_tests

    started = time.perf_counter()
    summary = TestSummary()
    summary.results += run_data_tests(suite.project, suite.plan, suite.data_cases,
                                      on_result=on_result)
    summary.results += run_unit_tests(suite.project, suite.plan, suite.unit_cases, spark=spark,
                                      on_result=on_result)
    summary.seconds = time.perf_counter() - started
    return summary
