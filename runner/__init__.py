"""SQL-first streaming fan-out on PySpark: the public API.

>>> import runner
>>> runner.load_project.__module__
'runner.project.loader'

``compile`` is ``load_project`` -> ``compile_project`` -> ``write_target``; ``stream`` hands the
compiled :class:`Plan` to ``run_stream``. Readers of the tables get a consistent cut with
``snapshot(project_dir, batch=None)``: the Delta version of every table that holds exactly the
batches up to one batch (docs/SNAPSHOTS.md). Every name is imported on first use: ``import runner``
stays free for Spark's Python workers (which import the Kafka data source under this package),
and only ``run_stream`` (with ``StreamSummary``) brings in pyspark, so compiling never does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.build import CompileResult, compile_project, write_target
    from runner.compile.plan import Plan
    from runner.errors import ConfigError, RunnerError, Violation
    from runner.ops.snapshot import Snapshot, TableVersion, TopicVersion, snapshot
    from runner.project.loader import Project, load_project
    from runner.runtime.start.stream import StreamSummary, run_stream

__all__ = [
    "CompileResult",
    "ConfigError",
    "Plan",
    "Project",
    "RunnerError",
    "Snapshot",
    "StreamSummary",
    "TableVersion",
    "TopicVersion",
    "Violation",
    "compile_project",
    "load_project",
    "run_stream",
    "snapshot",
    "write_target",
]

_HOME = {
    "CompileResult": "runner.build",
    "compile_project": "runner.build",
    "write_target": "runner.build",
    "Plan": "runner.compile.plan",
    "ConfigError": "runner.errors",
    "RunnerError": "runner.errors",
    "Violation": "runner.errors",
    "Project": "runner.project.loader",
    "load_project": "runner.project.loader",
    "StreamSummary": "runner.runtime.start.stream",
    "run_stream": "runner.runtime.start.stream",
    "Snapshot": "runner.ops.snapshot",
    "TableVersion": "runner.ops.snapshot",
    "TopicVersion": "runner.ops.snapshot",
    "snapshot": "runner.ops.snapshot",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'runner' has no attribute '{name}'")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
