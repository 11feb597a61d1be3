"""``runner test``: collect the selected models' tests from their YAML, check the declarations
against the compiled plan, run data tests (no Spark) and unit tests (Spark), report."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from runner.compile.plan import Plan, table_key
from runner.compile.selection import select_names
from runner.model_tests.checks import check_specs
from runner.model_tests.result import TestResult, TestSummary
from runner.model_tests.spec import DataTest, ModelSpec, UnitTest, load_specs, spec_error
from runner.project.loader import Project

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from runner.model_tests.generic import TestMacro

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
    macros: Mapping[str, TestMacro] = field(default_factory=dict)  # tests/generic/

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
    from runner.model_tests.generic import test_macros

    macros = test_macros(project)
    specs = load_specs(project)
    edges = {s.name: list(s.depends_on) for s in plan.steps}
    tags = {s.name: list(s.config.tags) for s in plan.steps}
    chosen = select_names(select, edges=edges, tags=tags)
    problems = check_specs(  # compile checked them already: one implementation
        specs, outputs={**{s.name: [c for c, _ in s.columns] for s in project.seeds},
                        **{s.name: [] if s.name in plan.partial else [c.name for c in
                                                                      s.table_columns]
                           for s in plan.steps}},
        unique_keys={s.name: table_key(s.config) for s in plan.steps}, macros=macros)
    if problems:
        raise spec_error(problems)
    models = tuple(s.name for s in plan.steps if s.name in chosen)
    return Suite(project, plan, specs, models, kind, macros)


def run_suite(suite: Suite, *, spark: SparkSession | None = None,
              on_result: Callable[[TestResult], None] = lambda r: None) -> TestSummary:
    """Data tests first, then unit tests, on one SparkSession for all of them (made when the
    first SQL data test or unit test needs it, unless given; stopped at the end if made)."""
    from runner.model_tests.data_tests import run_data_tests
    from runner.model_tests.unit import run_unit_tests

    started = time.perf_counter()
    summary = TestSummary()
    made: list[SparkSession] = []

    def session() -> SparkSession:
        if spark is not None:
            return spark
        if not made:
            made.append(_session(suite.project))
        return made[0]

    try:
        summary.results += run_data_tests(suite.project, suite.plan, suite.data_cases,
                                          macros=suite.macros, spark=session,
                                          on_result=on_result)
        cases = suite.unit_cases
        summary.results += run_unit_tests(suite.project, suite.plan, cases,
                                          spark=session() if cases else None,
                                          on_result=on_result)
    finally:
        if made:
            from runner.runtime.client.session import stop_session

            stop_session(made[0])
    summary.seconds = time.perf_counter() - started
    return summary


def _session(project: Project) -> SparkSession:
    from runner.runtime.client.session import build_session

    conf = project.config.spark
    return build_session(master=conf.master, remote=conf.remote, conf=dict(conf.conf),
                         app_name=f"runner-test:{project.config.name}",
                         log_dir=str(project.root / "logs"))
