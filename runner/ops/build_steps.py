"""``runner build``: dbt's ``build`` for a streaming project. Four stages, in order, stopping
at the first that fails with that stage's error (and so its exit code):

1. **compile** (no JVM): model errors stop here, exit 1 (a configuration error: 2); the
   compiled SQL and manifest are written to ``target/`` as ``runner compile`` writes them;
2. **unit tests** of the selected models, through the batch path on scratch tables: a failure
   stops before any table is written, exit 1;
3. **stream --available-now**: everything available is processed, exactly once (a model parked
   on the way: exit 1);
4. **data tests** of the selected models, on the tables just written: a failure, exit 1
   (``severity: warn`` tests warn without failing).

Each Spark stage makes its session and stops it (the JVM stays up between them), as the
commands it stands for do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.build import CompileResult, write_target
from runner.errors import RunnerError
from runner.events import Reporter
from runner.project.loader import Project

if TYPE_CHECKING:
    from runner.model_tests import TestResult, TestSummary
    from runner.runtime.start.query import StreamSummary

__all__ = ["BuildHooks", "StageFailed", "run_build"]

STAGES = ("compile", "unit tests", "stream", "data tests")


class StageFailed(RunnerError):
    """A stage of ``runner build`` failed (exit 1); the later stages did not run."""

    def __init__(self, stage: str, message: str, hint: str | None = None) -> None:
        later = STAGES[STAGES.index(stage) + 1:]
        super().__init__(f"build stopped at {stage}: {message}",
                         hint=hint or (f"not run: {', '.join(later)}" if later else None))
        self.stage = stage


@dataclass(frozen=True)
class BuildHooks:
    """What ``runner build`` shows as it goes (the CLI's console)."""

    stage: Callable[[str], None]
    compiled: Callable[[CompileResult, str], None]
    test: Callable[[TestResult], None]
    tests_done: Callable[[TestSummary], None]
    event: Reporter
    streamed: Callable[[StreamSummary], None]


def run_build(project: Project, *, select: Sequence[str] = (), full_refresh: bool = False,
              hooks: BuildHooks) -> None:
    """Compile, unit-test, stream everything available, data-test (see the module doc).

    Raises:
        ModelErrors: compile found model errors (exit 1).
        StageFailed: a unit or data test failed (exit 1).
        ExecutionError: the stream parked a model (exit 1), or failed.
        ConfigError: a configuration or usage error in any stage (exit 2).
    """
    from runner.build import compile_project
    from runner.model_tests import collect_suite, run_suite
    from runner.ops.plans import ModelErrors, stream_plan
    from runner.runtime.start.stream import run_stream

    hooks.stage("compile")
    result = compile_project(project, select=select)
    hooks.compiled(result, str(write_target(project, result)))
    if not result.ok:
        raise ModelErrors(result)
    rebuild = full_refresh and bool(select)
    plan, rebuilt = stream_plan(project, select, rebuild=rebuild)

    for kind, stage in (("unit", "unit tests"), ("stream", "stream"), ("data", "data tests")):
        hooks.stage(stage)
        if kind == "stream":
            summary = run_stream(project, plan, mode="available_now",
                                 trigger=project.config.trigger,
                                 full_refresh=full_refresh and not rebuild, rebuild=rebuilt,
                                 report=hooks.event)
            hooks.streamed(summary)
            if summary.parked:
                names = ", ".join(sorted(summary.parked))
                raise StageFailed(stage, f"{len(summary.parked)} model(s) parked: {names}",
                                  hint="`runner status` shows why; fix the SQL and run again")
            continue
        suite = collect_suite(project, plan, select=select,
                              kind="unit" if kind == "unit" else "data")
        tests = run_suite(suite, on_result=hooks.test)
        hooks.tests_done(tests)
        if not tests.ok:
            failed = tests.count("fail") + tests.count("error")
            raise StageFailed(stage, f"{failed} test(s) failed or could not run")
