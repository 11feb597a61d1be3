"""The plans commands run, from one compile: the checked plan (``stream``, ``test``, ``docs``,
``build``) and the plan and rebuild list of a stream (``--full-refresh --select``)."""

from __future__ import annotations

from collections.abc import Sequence

from runner.build import CompileResult, compile_project
from runner.compile.plan import Plan
from runner.compile.selection import select_names
from runner.errors import ConfigError, RunnerError
from runner.project.loader import Project

__all__ = ["ModelErrors", "checked_plan", "stream_plan"]


class ModelErrors(RunnerError):
    """Compile found model errors (exit 1); ``result`` holds them for printing."""

    def __init__(self, result: CompileResult) -> None:
        errors = sum(v.severity == "error" for v in result.violations)
        super().__init__(f"{errors} model error(s): nothing ran")
        self.result = result


def checked_plan(project: Project, select: Sequence[str]) -> Plan:
    """Compile; a plan whose selected models have every ref selected too.

    Raises:
        ModelErrors: a model error (stream never runs a broken plan).
        ConfigError: a selected model refs one not selected.
    """
    result = compile_project(project, select=select)
    if not result.ok:
        raise ModelErrors(result)
    selected = {s.name for s in result.plan.steps}
    for step in result.plan.steps:
        missing = [d for d in step.depends_on if d not in selected]
        if missing:
            raise ConfigError(f"--select: model '{step.name}' refs '{missing[0]}', which is not "
                              "selected; a batch's refs are computed in the same batch",
                              hint=f"select it with its ancestors: --select +{step.name}")
    return result.plan


def stream_plan(project: Project, select: Sequence[str], *,
                rebuild: bool) -> tuple[Plan, tuple[str, ...]]:
    """The plan to stream and the models to rebuild, from one compile. ``rebuild``
    (``--full-refresh --select``): the selected models' tables are rebuilt and the stream runs
    every model; otherwise the selection is streamed."""
    if not rebuild:
        return checked_plan(project, select), ()
    upstream = [p for s in select for p in s.split() if p.startswith("+")]
    if upstream:  # a rebuild computes ancestors from the history, never from their tables
        names = " ".join(p.lstrip("+") for s in select for p in s.split())
        raise ConfigError(
            f"--full-refresh --select {upstream[0]}: '+' would rebuild (drop and "
            "replay) every ancestor too, and a rebuild needs none of them: it computes "
            "them from the checkpoint's history without reading or writing their tables",
            hint=f"name only the models to rebuild: --full-refresh --select {names}")
    plan = checked_plan(project, ())
    chosen = select_names(select, edges={s.name: list(s.depends_on) for s in plan.steps},
                          tags={s.name: list(s.config.tags) for s in plan.steps})
    return plan, tuple(s.name for s in plan.steps if s.name in chosen)
